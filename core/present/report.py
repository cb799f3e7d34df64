"""A self-contained HTML report of one scenario, for design reviews.

Charts are embedded as SVG (rendered offline by vl-convert), every text that
comes from data or a user is HTML-escaped (a Jinja2 template with autoescape:
templates/report.html.j2), and the file needs nothing else: no script, no
stylesheet link, no image file.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
from jinja2 import Environment, PackageLoader
from markupsafe import Markup

from core.catalogue.catalogue import Catalogue
from core.model.ceilings import ceiling, operation_table
from core.model.result import Ceiling
from core.model.roofline import SWEEP_BATCHES, decode_matmul_intensity, operating_points, ridge_table, roof_lines
from core.model.scenario import Scenario
from core.present.charts import export_chart, roofline_chart
from core.present.exports import scenario_line, scenario_parts, titled
from core.present.predicted import band_text, basis
from core.present.readings import plain_reading
from core.present.ridge_charts import ridge_chart
from core.present.text import duration, plain, plural, si, sig, web_link

#: The modelling rules the numbers rest on, stated in the report.
ASSUMPTIONS = (
    "Peaks are the vendor's dense figures (no 2:4 sparsity) in decimal units; the roof is min(P, B x I).",
    "Each operation's time is max(bytes / bandwidth, FLOPs / peak); a step is the sum over operations plus two "
    "tensor-parallel all-reduces per layer at the scale-up link's one-way bandwidth.",
    "Attention is fused (flash attention: no score matrix in HBM) unless stated; causal prefill counts half of S^2; "
    "sliding-window layers read at most the window.",
    "MoE layers read E (1 - (1 - k/E)^b) distinct experts at batch b (uniform routing).",
    "Weight bytes include quantisation scales (int4 g128 = 4.125 bits); a compute format the accelerator lacks runs at "
    "the nearest wider supported peak and is flagged.",
    "Time to first token is the prefill of one prompt; memory fit is weights + KV(batch, context) within GPUs x memory x (1 - reserve).",
)

HEADLINES = (
    ("tokens_per_s_per_user", "Tokens/s per user", lambda v: si(v, "")),
    ("tokens_per_s_total", "Tokens/s total", lambda v: si(v, "")),
    ("time_per_output_token_s", "Time per output token", duration),
    ("ttft_s", "Time to first token", duration),
    ("bound", "Decode is", lambda v: f"{v}-bound"),
    ("ridge", "Ridge point", lambda v: f"{v:,.0f} FLOP/byte"),
    ("intensity", "Decode step intensity", lambda v: f"{v:,.1f} FLOP/byte"),
    ("bandwidth_ceiling_tokens_per_s", "Bandwidth ceiling, weights only (per user)", lambda v: f"{si(v, '')} tokens/s"),
    ("bandwidth_ceiling_with_kv_tokens_per_s", "Bandwidth ceiling, weights + KV (per user)", lambda v: f"{si(v, '')} tokens/s"),
    ("memory_required_bytes", "Memory needed", lambda v: si(v, "B")),
    ("capacity_bytes", "Memory available", lambda v: si(v, "B")),
    ("max_batch", "Largest batch at this context", lambda v: "no KV limit" if v is None else f"{v:,}"),
    ("min_gpus", "Fewest GPUs for this model", lambda v: f"{v}"),
)


#: The operation table's columns.
OPERATION_COLUMNS = (
    "Layer group",
    "Operation",
    "Layers",
    "GFLOP",
    "Weights (MB)",
    "KV (MB)",
    "Intensity (FLOP/B)",
    "Bound",
    "Time (µs)",
    "Share",
)

#: A section's table shows at most this many rows (the page's CSV download has every one).
MAX_ROWS = 200


@dataclass(frozen=True)
class Section:
    """One part of the page being viewed, as the report holds it: a heading, a sentence, figures, a table, charts.

    A page hands the report what it shows beyond the scenario's own figures (the calculator's cost and charts, the
    comparison's table and frontier, a dataset's summary and scorecard, the roofline's overlays). Text is plain (no
    markdown); a table's floats are written to 4 significant figures; charts are Vega-Lite specs or Altair charts.
    """

    title: str
    text: str = ""
    figures: tuple[tuple[str, str], ...] = ()
    table: pl.DataFrame | None = None
    charts: tuple[Any, ...] = ()
    line: str | None = None  # what the charts are of, in their titles (None: the report's scenario)


def headline_figures(result: Ceiling) -> list[tuple[str, str]]:
    """(label, formatted value) pairs of the scenario's headline figures, as shown on screen."""
    out = []
    for key, label, fmt in HEADLINES:
        value = getattr(result, key)
        if key == "intensity" and result.scenario.uses_speculation:  # the step it is of, named
            label = f"Verify step intensity ({result.scenario.spec_draft_len + 1} tokens of each sequence)"
        if key.startswith("tokens_per_s") and not result.fits:
            out.append((label, "does not fit"))
        elif value is None and key != "max_batch":
            out.append((label, "n/a"))
        else:
            out.append((label, fmt(value)))
    if result.predicted_tokens_per_s_total is not None or result.predicted_ttft_s is not None:
        fw = result.scenario.framework
        out.append(
            (
                f"Expected with {fw}: tokens/s total",
                f"{si(result.predicted_tokens_per_s_total)} ({band_text(result.predicted_error)} held out)",
            )
        )
        out.append((f"Expected with {fw}: time per output token", duration(result.predicted_tpot_s)))
        out.append(
            (
                f"Expected with {fw}: time to first token",
                f"{duration(result.predicted_ttft_s)} ({band_text(result.predicted_ttft_error)} held out)",
            )
        )
        out.append(("What the expected figures rest on", basis(result)))
    return out


def report_html(
    cat: Catalogue,
    scenario: Scenario,
    *,
    page: str = "",
    sections: Sequence[Section] = (),
    generated: dt.datetime | None = None,
    subject: str | None = None,
    gpus: Sequence[str] = (),
) -> str:
    """The HTML report of the page being viewed (a complete document as a string).

    `scenario` is the page's (its own options included: the calculator's speculative decoding, reserve and price);
    its headline figures, roofline, ridge points and operations are the report's first part. `sections` are what
    the page shows beyond them, in the page's order, under the page's name `page`.

    A page whose subject is not one scenario (a comparison, a sweep, a dataset) gives its `subject`: the report is titled
    by it and leads with the page's sections; the sidebar's scenario follows for reference, and the sources of every
    accelerator in `gpus` (the page's) are cited.
    """
    result = ceiling(cat, scenario)
    gpu = cat.gpu(scenario.gpu)
    model = cat.model(scenario.model)
    paths = operating_points(cat, scenario, SWEEP_BATCHES)
    points = paths.filter(pl.col("batch") == scenario.batch) if scenario.batch in SWEEP_BATCHES else operating_points(cat, scenario)
    roofs = roof_lines(
        cat.gpus.filter(pl.col("id") == scenario.gpu),
        [result.compute_used or "bf16"],
        eff_bandwidth=scenario.eff_bandwidth,
        eff_compute=scenario.eff_compute,
    )
    title = f"{model.name} on {scenario.num_gpus} × {gpu.name}"
    heading = subject or title
    line, said = scenario_line(cat, scenario), scenario_parts(cat, scenario)
    roof_svg = export_chart(titled(roofline_chart(roofs, points, paths, title=title), line, said), "svg").decode("utf-8")
    prec = result.compute_used or "bf16"
    ridges = ridge_table(cat.gpus, prec, scenario.batch, scenario.weights)
    ridge_svg = export_chart(
        ridge_chart(
            ridges,
            decode_matmul_intensity(scenario.batch, scenario.weights),
            highlight=scenario.gpu,
            title=f"Ridge points at {prec}",
            batch=scenario.batch,
        ),
        "svg",
    ).decode("utf-8")
    ops = operation_table(cat, scenario, communication=True)
    when = (generated or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")

    scenario_rows = [
        ("Accelerator", f"{gpu.name} ({scenario.gpu}) × {scenario.num_gpus}"),
        ("Model", f"{model.name} ({scenario.model})"),
        (
            "Weights / compute / KV cache",
            f"{scenario.weights} / {result.scenario.compute or 'auto'} (peak used: {result.compute_used}) / {scenario.kv}",
        ),
        (
            "Batch, context, prompt",
            f"{plural(scenario.batch, 'sequence')}, {scenario.context:,} tokens cached, {scenario.prompt:,}-token prompt",
        ),
        ("Framework (for the expected figures)", scenario.framework),
        ("Efficiency factors", f"bandwidth {scenario.eff_bandwidth:.2f}, compute {scenario.eff_compute:.2f} (1.00 = datasheet roof)"),
        ("Memory reserve", f"{scenario.reserve_fraction:.0%} of each GPU's memory"),
        ("Attention", "fused (flash attention)" if scenario.flash_attention else "unfused (score matrix in HBM)"),
    ]
    if scenario.spec_draft_len and scenario.spec_draft_model:
        scenario_rows.append(
            (
                "Speculative decoding",
                f"draft {scenario.spec_draft_model}, {scenario.spec_draft_len} tokens, acceptance {scenario.spec_acceptance:.2f}",
            )
        )
    model_row = cat.models.filter(pl.col("id") == scenario.model).row(0, named=True)
    published = model_row.get("published_total_params")
    others = [g for g in dict.fromkeys(gpus) if g != scenario.gpu and g in cat.gpu_index]
    return _TEMPLATE.render(
        heading=heading,
        title=title,
        subject=subject,
        page=page,
        when=when,
        sections=[_section(s, line, said) for s in sections],
        max_rows=MAX_ROWS,
        scenario_rows=scenario_rows,
        headlines=headline_figures(result),
        flags=result.flags,
        reading=plain(plain_reading(cat, points, result)),
        roof_svg=Markup(roof_svg),
        ridge_svg=Markup(ridge_svg),
        operation_columns=OPERATION_COLUMNS,
        operations=[
            (
                r["group"],
                r["op"],
                r["layers"],
                _scaled(r["flops"], 1e9, 3),
                _scaled(r["weight_bytes"], 1e6),
                _scaled(r["kv_bytes"], 1e6),
                "n/a" if r["intensity"] is None else f"{r['intensity']:,.1f}",
                r["bound"],
                sig(r["time_s"] * 1e6, 4),
                f"{r['share']:.1%}",
            )
            for r in ops.iter_rows(named=True)
        ],
        assumptions=ASSUMPTIONS,
        accelerator_figures=[
            ("Memory", si(gpu.memory_bytes, "B")),
            ("Bandwidth", si(gpu.bandwidth_bytes_per_s, "B/s")),
            (f"Dense {prec} peak", si(gpu.peak_flops[prec], "FLOP/s")),
            ("Scale-up link", si(gpu.scaleup_bytes_per_s, "B/s") if gpu.scaleup_bytes_per_s else "none listed"),
            ("Board power", f"{gpu.power_w:,.0f} W" if gpu.power_w else "not listed"),
        ],
        sources=gpu.sources,
        notes=gpu.notes or "none",
        others=[(cat.gpu(g).name, cat.gpu(g).sources) for g in others],
        model_shape=(
            f"config.json from {model_row.get('config_source') or 'an uploaded config.json'}; "
            f"{model.num_layers} layers, hidden {model.hidden_size}, {model.num_heads} heads / {model.num_kv_heads} KV heads; "
            f"{model_row['total_params'] / 1e9:,.2f} B parameters (published: "
            f"{'n/a' if published is None else format(published / 1e9, ',.2f') + ' B'}, "
            f"source {model_row.get('params_source') or 'n/a'})."
        ),
    )


def _cell(value: Any) -> str:
    """A table cell as people write it: floats to 4 significant figures, an em dash where there is no value."""
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, float):
        return sig(value, 4)  # as people write numbers: 21,380 and 0.00123, never 2.138e+04
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def _section(section: Section, line: str, parts: Sequence[str]) -> dict[str, Any]:
    """One section of the page for the template: its heading, sentence, figures, table (at most MAX_ROWS rows) and
    charts as SVG."""
    frame = section.table
    rows = [tuple(_cell(v) for v in row) for row in frame.head(MAX_ROWS).iter_rows()] if frame is not None else []
    return {
        "title": section.title,
        "text": section.text,
        "figures": list(section.figures),
        "height": 0 if frame is None else frame.height,
        "columns": [] if frame is None else list(frame.columns),
        "rows": rows,
        "svgs": [
            Markup(export_chart(titled(chart, line, parts) if section.line is None else titled(chart, section.line), "svg").decode())
            for chart in section.charts
        ],
    }


#: A word longer than this (a URL, an id) may break anywhere in its cell, so the table keeps to the page; shorter ones
#: never break ("compute-bound", not "comput / e").
LONG_WORD = 24


def _wrap(text: object) -> Markup:
    """The cell's class: `long` where one of its words is longer than LONG_WORD characters."""
    return Markup(' class="long"') if any(len(w) > LONG_WORD for w in str(text).split()) else Markup("")


def _scaled(value: float | None, unit: float, digits: int = 4) -> str:
    """A table cell in reading units, as people write numbers (1,074, not 1.074e+03); an em dash where the row has no such
    figure (the all-reduce row moves no HBM bytes of its own)."""
    return "—" if value is None else sig(value / unit, digits)


def _source(url: str) -> Markup:
    """A source as HTML: a link where it is a web address (core.present.text.web_link), else its text, escaped."""
    target = web_link(url)
    if target is None:
        return Markup("{} (not a web address: not linked)").format(url)
    return Markup('<a href="{}">{}</a>').format(target, url)


_ENV = Environment(loader=PackageLoader("core.present", "templates"), autoescape=True)
_ENV.filters["wrap"] = _wrap
_ENV.globals["source"] = _source
_TEMPLATE = _ENV.get_template("report.html.j2")
