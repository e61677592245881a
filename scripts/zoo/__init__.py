"""The architecture zoo behind ``scripts/bench_zoo.py``: public architectures with random weights and
small inputs (``vision``, ``hf``, ``timm_rows``), the factories a row's config names (``factories``),
the fault each row injects (``pick``), one row through the CLI (``row``) and the table (``table``)."""

from __future__ import annotations


def specs() -> dict:
    """Every row's ``Spec`` by name, in table order."""
    from zoo import hf, timm_rows, vision

    rows = [*vision.SPECS, *hf.SPECS, *timm_rows.SPECS]
    by_name = {s.name: s for s in rows}
    if len(by_name) != len(rows):
        raise ValueError("two zoo rows share a name")
    return by_name
