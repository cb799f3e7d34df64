"""What the compare page shows for one set of inputs, computed in one place (no Streamlit); memoised by the page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.catalogue import Catalogue
from core.charts_planning import comparison_bars
from core.purchase import compare_accelerators, comparison_display, comparison_reading
from core.specs import Scenario


def compare_figures(
    cat: Catalogue,
    picked: Sequence[str],
    sc: Scenario,
    *,
    max_tpot_s: float | None,
    max_ttft_s: float | None,
    prices: Mapping[str, float],
    sort_by: str,
    title: str,
) -> dict[str, Any]:
    """The comparison table, its display form, the reading and the bar chart's spec (None when nothing meets the goal)."""
    table = compare_accelerators(cat, picked, sc, max_tpot_s=max_tpot_s, max_ttft_s=max_ttft_s, prices=prices, sort_by=sort_by)
    met = int((table["status"] == "ok").sum())
    return {
        "table": table,
        "met": met,
        "reading": comparison_reading(table) if met else None,
        "shown": comparison_display(table),
        "chart": comparison_bars(table, title=title).to_dict(validate=False) if met else None,
    }
