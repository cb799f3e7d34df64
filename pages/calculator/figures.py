"""Everything the ceiling calculator shows for one scenario, computed in one place (no Streamlit).

The page memoises `calculator_figures` per scenario (core.memo), so a rerun
that changes nothing the figures depend on (a rerun for another session's
sake, a revisited scenario) draws without recomputing, and the ceiling is
evaluated once rather than once per panel.
"""

from __future__ import annotations

from typing import Any

from core.catalogue import Catalogue
from core.ceilings import ceiling
from core.charts_planning import frontier_chart, memory_chart, step_breakdown_chart
from core.planning import frontier, frontier_reading, memory_use, step_breakdown, what_if_display, what_ifs
from core.specs import Scenario
from core.units import duration, si


def calculator_figures(cat: Catalogue, sc: Scenario) -> dict[str, Any]:
    """The ceiling, the three charts (Vega-Lite specs, None when nothing fits), the frontier reading and the what-if table."""
    r = ceiling(cat, sc)
    breakdown = step_breakdown_chart(step_breakdown(cat, sc, r), title=f"Decode cycle: {duration(r['cycle_time_s'])}", width=440)
    memory = memory_chart(memory_use(r), title=f"{si(r['memory_required_bytes'], 'B')} of {si(r['capacity_bytes'], 'B')}", width=440)
    front = frontier(cat, sc, result=r)
    anything_fits = not front.filter(front["fits"]).is_empty()
    front_spec = (
        frontier_chart(front, title="Each point is a decode batch; the curve stops where memory runs out").to_dict(validate=False)
        if anything_fits
        else None
    )
    return {
        "result": r,
        "breakdown": breakdown.to_dict(validate=False),
        "memory": memory.to_dict(validate=False),
        "frontier": front_spec,
        "frontier_reading": frontier_reading(cat, sc, front, result=r),
        "what_ifs": what_if_display(what_ifs(cat, sc)),
    }
