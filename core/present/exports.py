"""What an exported chart says about itself: the scenario in its title, so a PNG pasted into a slide stands alone.

A chart on screen sits under the page's heading and beside the sidebar, which
say the model, the accelerator and its GPU count, the formats and the batch.
Exported (PNG, SVG, the HTML report) it has only its own title: `titled` adds
the scenario's line to it (as the subtitle's first line when the chart has a
title of its own, as the title otherwise), unless the title already says all of
it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import altair as alt

from core.catalogue.catalogue import Catalogue
from core.model.scenario import Scenario


def scenario_line(cat: Catalogue, sc: Scenario) -> str:
    """The scenario in one line of plain text: GPUs × accelerator · model · formats · batch, context, prompt."""
    line = (
        f"{sc.num_gpus} × {cat.gpu(sc.gpu).name} · {cat.model(sc.model).name} · weights {sc.weights}, KV {sc.kv} · "
        f"batch {sc.batch:,}, context {sc.context:,}, prompt {sc.prompt:,}"
    )
    if sc.spec_draft_len and sc.spec_draft_model:
        line += f" · speculative decoding: {sc.spec_draft_len} draft tokens of {cat.model(sc.spec_draft_model).name}"
    return line


def scenario_parts(cat: Catalogue, sc: Scenario) -> tuple[str, ...]:
    """What a chart's title must say about the scenario: model, GPU count and accelerator, both formats, batch."""
    return (
        cat.model(sc.model).name,
        f"{sc.num_gpus} × {cat.gpu(sc.gpu).name}",
        f"weights {sc.weights}",
        f"KV {sc.kv}",
        f"batch {sc.batch:,}",
    )


def _lines(value: Any) -> list[str]:
    if value is None or value is alt.Undefined:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value if v]


def _title_of(title: Any) -> tuple[list[str], list[str], dict[str, Any]]:
    """(text lines, subtitle lines, the other title properties) of a Vega-Lite title (a string, a dict or absent)."""
    if isinstance(title, alt.TitleParams):
        title = title.to_dict()
    if isinstance(title, dict):
        rest = {k: v for k, v in title.items() if k not in ("text", "subtitle")}
        return _lines(title.get("text")), _lines(title.get("subtitle")), rest
    return _lines(title), [], {}


def titled(chart: Any, line: str, parts: Sequence[str] = ()) -> Any:
    """The chart (a Vega-Lite spec dict or an Altair chart) with `line` in its title; the chart itself is not changed.

    Unchanged when its title and subtitle already hold `line`, or every one of `parts`. A chart without a title
    gets `line` as its title; a chart with one keeps it and gets `line` as the first line of its subtitle.
    """
    own = chart.get("title") if isinstance(chart, dict) else getattr(chart, "title", None)
    text, subtitle, rest = _title_of(own)
    said = " ".join(text + subtitle)
    if line in said or (parts and all(p in said for p in parts)):
        return chart
    title: dict[str, Any] = {**rest, "text": line} if not text else {**rest, "text": text if len(text) > 1 else text[0]}
    if text:
        title["subtitle"] = [line, *subtitle]
    if isinstance(chart, dict):
        out = copy.copy(chart)
        out["title"] = title
        return out
    return chart.properties(title=alt.TitleParams(**title))


def _few(items: Sequence[Any], what: str, *, most: int = 3) -> str:
    """Up to `most` items by name, else how many."""
    return ", ".join(str(i) for i in items) if len(items) <= most else f"{len(items)} {what}"


def sweep_line(
    accelerators: Sequence[str],
    models: Sequence[str],
    *,
    weights: Sequence[str],
    batches: Sequence[int],
    contexts: Sequence[int],
    counts: Sequence[int],
) -> str:
    """A sweep's axes in one line: accelerators and models by name (or how many), formats, GPU counts, batches, contexts."""
    return (
        f"Sweep: {_few(accelerators, 'accelerators')} · {_few(models, 'models')} · weights {', '.join(weights)} · "
        f"{', '.join(str(c) for c in sorted(counts))} GPUs · batch {', '.join(f'{b:,}' for b in sorted(batches))} · "
        f"context {', '.join(f'{c:,}' for c in sorted(contexts))}"
    )


def dataset_line(cat: Catalogue, rows: Any) -> str:
    """What a set of measurements is of, in one line: how many, of which models, on which accelerators (by name)."""
    gpus = [cat.gpu(g).name if g in cat.accelerators else str(g) for g in rows["gpu"].unique(maintain_order=True).to_list()]
    models = [cat.model(m).name if m in cat.records else str(m) for m in rows["model"].unique(maintain_order=True).to_list()]
    count = f"{rows.height:,} measurement{'s' if rows.height != 1 else ''}"
    return f"{count} of {_few(models, 'models')} on {_few(gpus, 'accelerators')}"


def published_line(
    cat: Catalogue, gpus: Sequence[str], models: Sequence[str], frameworks: Sequence[str], publishers: Sequence[str], rows: Any
) -> str:
    """The published measurements kept by the measured page's filters, in one line (what an exported chart of them is of)."""
    kept = [
        f"on {_few([cat.gpu(g).name if g in cat.accelerators else g for g in gpus], 'accelerators')}" if gpus else "",
        f"of {_few([cat.model(m).name if m in cat.records else m for m in models], 'models')}" if models else "",
        f"with {_few(frameworks, 'frameworks')}" if frameworks else "",
        f"printed by {_few(publishers, 'publishers')}" if publishers else "",
    ]
    said = " ".join(k for k in kept if k) or "every accelerator, model, framework and source"
    return f"{rows.height:,} published measurement{'s' if rows.height != 1 else ''}: {said}"
