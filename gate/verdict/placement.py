"""The placement audit: after a pull request an EP runs fewer of the graph's nodes. Records from different
sources (ONNX Runtime's assignment, a profile's kernels) count different things and are not compared.
"""

from __future__ import annotations

from typing import Any

from gate.core.status import AuditStatus, Check
from gate.verdict.rows import Audit


def placement_audit(provider: str, before: dict[str, Any] | None, now: dict[str, Any] | None,
                    policy: str) -> list[Audit]:
    if (policy == "off" or before is None or now is None
            or before.get("source", "assignment") != now.get("source", "assignment")):
        return []
    out = []
    added = sorted(set(now["fallback_ops"]) - set(before["fallback_ops"]))
    grew = len(now["fallback_nodes"]) - len(before["fallback_nodes"])  # the lists are capped: counts say more
    own_before, own_now = before["by_provider"].get(provider, 0), now["by_provider"].get(provider, 0)
    if added or grew > 0 or (own_now < own_before and now["nodes"] >= before["nodes"]):
        grew = max(grew, own_before - own_now)
        moved = {ep: n - before["by_provider"].get(ep, 0) for ep, n in now["by_provider"].items() if ep != provider}
        where = ", ".join(f"{ep} +{d}" for ep, d in sorted(moved.items()) if d > 0)
        out.append(Audit(Check.PLACEMENT, AuditStatus.FAIL if policy == "fail" else AuditStatus.WARN,
                         f"{provider}: {max(grew, 0)} more node(s) fall back to another EP"
                         + (f" (new op types: {', '.join(added)})" if added else "")
                         + f"; {provider} runs {own_now} of {now['nodes']} node(s), {own_before} of {before['nodes']} "
                         f"in the baseline" + (f"; now on {where}" if where else "")))
    if "options" in before and before.get("options") != now.get("options"):
        was, new = before["options"], now.get("options") or {}
        changed = ", ".join(f"{k} {was.get(k, '-')} -> {new.get(k, '-')}" for k in sorted(set(was) | set(new))
                            if was.get(k) != new.get(k))
        out.append(Audit(Check.PLACEMENT, AuditStatus.WARN, f"{provider}: EP options changed since the baseline ({changed})"))
    return out
