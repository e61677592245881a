"""GitHub Actions expressions (``${{ ... }}``), the subset action.yml and our workflows use.

Literals (strings, numbers, true/false/null), context paths (``inputs.mode``,
``steps.run.outputs.exit-code``, ``github.event.pull_request.number``, ``x['y']``), ``! == != < <= > >= && ||``,
parentheses, and the functions always(), success(), failure(), cancelled(), contains(),
startsWith(), endsWith(), format(), join(), toJSON(), fromJSON(). Comparison follows the
documented loose rules (case-insensitive strings, numbers coerced); ``&&``/``||`` return operands.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|'(?P<str>(?:[^']|'')*)'|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\],.])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*|\*))"
)


def tokenize(src: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    src = src.strip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise ValueError(f"bad expression near {src[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup
        val = m.group(kind)
        out.append((kind, val.replace("''", "'") if kind == "str" else val))
    return out


def _truthy(v: Any) -> bool:
    return not (v is None or v is False or v == 0 or v == "" or (isinstance(v, float) and v != v))


def _num(v: Any) -> float:
    if v is None or v is False:
        return 0.0
    if v is True:
        return 1.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip()) if v.strip() else 0.0
        except ValueError:
            return float("nan")
    return float("nan")


def _eq(a: Any, b: Any) -> bool:
    """Loose equality as documented: case-insensitive strings; other mixed types (null included:
    ``null == ''`` is true, both are 0) compare as numbers; objects and arrays only as one instance."""
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return a is b
    if type(a) is type(b):
        return a == b
    return _num(a) == _num(b)


def to_string(v: Any) -> str:
    if v is None:
        return ""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        return json.dumps(v, indent=2)
    return str(v)


class Evaluator:
    def __init__(self, contexts: dict[str, Any], status: str = "success"):
        self.ctx = contexts
        self.status = status  # success | failure | cancelled (for the status functions)

    def eval(self, src: str) -> Any:
        self.toks = tokenize(src)
        self.i = 0
        v = self._or()
        if self.i != len(self.toks):
            raise ValueError(f"unexpected {self.toks[self.i][1]!r} in {src!r}")
        return v

    # precedence climbing
    def _peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) and self.toks[self.i][0] == "op" else None

    def _take(self, op: str) -> bool:
        if self._peek() == op:
            self.i += 1
            return True
        return False

    def _or(self):
        v = self._and()
        while self._take("||"):
            r = self._and()
            v = v if _truthy(v) else r
        return v

    def _and(self):
        v = self._cmp()
        while self._take("&&"):
            r = self._cmp()
            v = r if _truthy(v) else v
        return v

    def _cmp(self):
        v = self._unary()
        while self._peek() in ("==", "!=", "<", "<=", ">", ">="):
            op = self.toks[self.i][1]
            self.i += 1
            r = self._unary()
            if op == "==":
                v = _eq(v, r)
            elif op == "!=":
                v = not _eq(v, r)
            else:
                a, b = _num(v), _num(r)
                v = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        return v

    def _unary(self):
        if self._take("!"):
            return not _truthy(self._unary())
        return self._postfix(self._primary())

    def _primary(self):
        kind, val = self.toks[self.i]
        self.i += 1
        if kind == "num":
            return float(val) if any(c in val for c in ".eE") else int(val)
        if kind == "str":
            return val
        if kind == "op" and val == "(":
            v = self._or()
            self._expect(")")
            return v
        if kind == "name":
            if val in ("true", "false"):
                return val == "true"
            if val == "null":
                return None
            if self._take("("):
                args = []
                if not self._take(")"):
                    args.append(self._or())
                    while self._take(","):
                        args.append(self._or())
                    self._expect(")")
                return self._call(val, args)
            if val not in self.ctx:
                raise ValueError(f"unknown context {val!r}")
            return self.ctx[val]
        raise ValueError(f"unexpected {val!r}")

    def _postfix(self, v):
        while True:
            if self._take("."):
                kind, name = self.toks[self.i]
                self.i += 1
                v = _index(v, name)
            elif self._take("["):
                key = self._or()
                self._expect("]")
                v = _index(v, key)
            else:
                return v

    def _expect(self, op: str) -> None:
        if not self._take(op):
            raise ValueError(f"expected {op!r}")

    def _call(self, name: str, args: list[Any]) -> Any:
        n = name.lower()
        if n == "always":
            return True
        if n == "success":
            return self.status == "success"
        if n == "failure":
            return self.status == "failure"
        if n == "cancelled":
            return self.status == "cancelled"
        if n == "contains":
            hay, needle = args
            if isinstance(hay, list):
                return any(_eq(x, needle) for x in hay)
            return to_string(needle).lower() in to_string(hay).lower()
        if n == "startswith":
            return to_string(args[0]).lower().startswith(to_string(args[1]).lower())
        if n == "endswith":
            return to_string(args[0]).lower().endswith(to_string(args[1]).lower())
        if n == "format":
            fmt = to_string(args[0])
            return re.sub(r"\{(\d+)\}", lambda m: to_string(args[int(m[1]) + 1]), fmt)
        if n == "join":
            sep = to_string(args[1]) if len(args) > 1 else ","
            return sep.join(to_string(x) for x in args[0]) if isinstance(args[0], list) else to_string(args[0])
        if n == "tojson":
            return json.dumps(args[0], indent=2)
        if n == "fromjson":
            return json.loads(to_string(args[0]))
        raise ValueError(f"unsupported function {name}()")


def _index(v: Any, key: Any) -> Any:
    if isinstance(v, dict):
        if isinstance(key, str):
            for k in v:
                if k.lower() == key.lower():
                    return v[k]
        return None
    if isinstance(v, list) and isinstance(key, (int, float)):
        i = int(key)
        return v[i] if 0 <= i < len(v) else None
    return None


_TEMPLATE = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def interpolate(text: str, contexts: dict[str, Any], status: str = "success") -> str:
    """Replace each ``${{ expr }}`` in a string with its value as a string."""
    return _TEMPLATE.sub(lambda m: to_string(Evaluator(contexts, status).eval(m[1])), text)


def condition(text: str | bool | None, contexts: dict[str, Any], status: str) -> bool:
    """An ``if:``: bare or wrapped in ${{ }}; without a status function it implies success()."""
    if text is None:
        return status == "success"
    if isinstance(text, bool):
        return text and status == "success"
    src = text.strip()
    m = _TEMPLATE.fullmatch(src)
    if m:
        src = m[1]
    if not re.search(r"\b(always|success|failure|cancelled)\s*\(", src):
        src = f"success() && ({src})"
    return _truthy(Evaluator(contexts, status).eval(src))
