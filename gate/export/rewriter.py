"""What onnxscript's optimizer leaves behind. Its pattern matchers keep the state of their last
match (the graph, its last node, the bindings) in rules held at module level, and with that graph
every tensor it holds: the model's own weights, which the exporter wraps without a copy (GPT-2: its
124 M parameters, 0.5 GB, held for the rest of the process, beside the ONNX Runtime worker's
session). A matcher sets that state anew at each match, so emptying it after the optimizer is
done changes nothing the next match sees. Where onnxscript has no such rules (another version),
nothing is done; ``tests/integration/test_structure.py`` says whether the weights still go.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

_STATE = ("_graph", "_current_node", "_match", "_tracer")  # a matcher's last match


def _rules(value: object, classes: tuple[type, type]) -> Iterator[object]:
    rule, rule_set = classes
    if isinstance(value, rule):
        yield value
    elif isinstance(value, rule_set):
        yield from getattr(value, "rules", ())
    elif isinstance(value, (tuple, list)):
        for item in value:
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
