"""The one table of status icons, for every word a status can be (targets, models, rows, sweep
cells and pairs): a word means the same on every page."""

from __future__ import annotations

ICONS = {
    "pass": "✅", "ok": "✅", "regressed": "❌", "fail": "❌", "error": "💥", "no-baseline": "🆕", "new": "🆕",
    "skipped": "⏭️", "fallback": "⚠️", "folded": "➖", "absent": "∅", "missing": "❓", "unmeasured": "❔",
    "moved": "↪️", "follows": "↪️",
}
UNKNOWN = "❔"


def icon(status: str | None, unknown: str = UNKNOWN) -> str:
    return ICONS.get(str(status), unknown) if status is not None else unknown
