"""What onnxscript's optimizer leaves behind: its pattern matchers keep their last match (and through
it the model's weights, which the exporter wraps without a copy) in rules held at module level. Each
match sets that state anew, so emptying it afterwards changes nothing; where a version has no such
rules nothing is done (``tests/integration/test_structure.py`` says whether the weights still go).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

_STATE = ("_graph", "_current_node", "_match", "_tracer")  # a matcher's last match


def _rules(value: object, classes: tuple[type, type]) -> Iterator[object]:
    rule, rule_set = classes
    for item in value if isinstance(value, (tuple, list)) else (value,):
        if isinstance(item, rule):
            yield item
        elif isinstance(item, rule_set):
            yield from getattr(item, "rules", ())


def forget() -> int:
    """Empty the last match of every rule onnxscript holds at module level; how many were emptied."""
    try:
        from onnxscript.rewriter._rewrite_rule import RewriteRule, RewriteRuleSet
    except ImportError:
        return 0
    emptied = 0
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("onnxscript."):
            continue
        for value in list(vars(module).values()):
            for rule in _rules(value, (RewriteRule, RewriteRuleSet)):
                matcher = getattr(rule, "_matcher", None)
                if matcher is not None and getattr(matcher, "_graph", None) is not None:
                    for attr in _STATE:
                        if hasattr(matcher, attr):
                            setattr(matcher, attr, None)
                    emptied += 1
    return emptied
