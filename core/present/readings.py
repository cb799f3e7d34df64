"""Readings: a sentence or two on what a view shows, computed from the numbers it shows."""

from __future__ import annotations

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.prices import STALE_MONTHS
from core.model.ceilings import ceiling
from core.model.result import Ceiling
from core.model.roofline import operating_points
from core.model.scenario import Scenario
from core.plan.planning import ridge_batch
from core.present.predicted import band_text
from core.present.text import duration, escape_markdown, plural


def plain_reading(cat: Catalogue, points: pl.DataFrame, result: Ceiling) -> str:
    """A short reading of the roofline, computed from the numbers shown.

    `points` are the operating points at one batch (core.model.roofline);
    `result` is the scenario's ceilings. A mixture of experts' ridge batch is its own (core.plan.planning.ridge_batch).
    """
    by_point = {r["point"]: r for r in points.iter_rows(named=True)}
    step = by_point.get("decode step")
    mm = by_point.get("decode matmul")
    attn = by_point.get("decode attention")
    pre = by_point.get("prefill step")
    if step is None or mm is None:
        return "No operating points for this scenario."
    lines = []
    share = float(step["share_of_peak"])
    if step["bound"] == "memory":
        lines.append(
            f"Decode is **memory-bound**: the whole step runs at {step['intensity']:.1f} FLOP/byte against a ridge of "
            f"{step['ridge']:.0f}, so at most {share:.1%} of peak compute is usable. The levers that help are fewer bytes "
            "(quantised weights or KV cache, GQA/MLA) and more reuse per byte (a larger batch, speculative decoding); "
            "more FLOP/s would not."
        )
    else:
        lines.append(
            f"Decode is **compute-bound** at this batch: {step['intensity']:.1f} FLOP/byte is past the ridge of {step['ridge']:.0f}. "
            "Adding sequences now adds queueing delay; lower-precision math or more GPUs raise the roof."
        )
    sc = result.scenario
    if sc.uses_speculation:  # the points are the plain decode step; a verify step processes k + 1 tokens of each sequence
        q = sc.spec_draft_len + 1
        verify = ridge_batch(cat, sc, result)
        lines.append(
            f"These are the plain decode step's figures. With a {sc.spec_draft_len}-token draft, each verify step processes "
            f"{q} tokens of every sequence: it runs at {result.intensity:,.1f} FLOP/byte"
            + (f", and its matmuls reach the ridge at a batch of about **{verify:,}** (now {sc.batch:,})." if verify else ".")
        )
    elif mm["bound"] == "memory":
        model = cat.model(sc.model)
        if model.num_experts > 1:  # routed to k of E experts, the matmuls climb slower than the dense rule
            rb = ridge_batch(cat, sc, result)
            lines.append(
                f"Each token goes to {model.experts_per_token} of {model.num_experts} experts, so the decode matmuls are at "
                f"{mm['intensity']:,.1f} FLOP/byte at batch {mm['batch']:,} and "
                + (f"need a batch of about **{rb:,}** to reach the ridge." if rb else "no batch up to 65,536 reaches the ridge.")
            )
        else:
            lines.append(f"The decode matmuls need a batch of about **{mm['ridge_batch']:,}** to reach the ridge (now {mm['batch']}).")
    if attn is not None:
        lines.append(
            f"Decode attention sits at {attn['intensity']:.1f} FLOP/byte whatever the batch: every sequence reads its own KV cache."
        )
    if pre is not None:
        lines.append(f"Prefill runs at {pre['intensity']:,.0f} FLOP/byte, **{pre['bound']}-bound**.")
    expected = by_point.get("decode step, expected")
    if expected is not None and result.predicted_step_time_s:
        lines.append(
            f"With {result.scenario.framework} the decode step is expected to take {duration(result.predicted_step_time_s)} "
            f"against the roofline's {duration(result.step_time_s)} (the lower triangle: {expected['share_of_peak']:.1%} of peak "
            f"compute; {band_text(result.predicted_error)} held-out error)."
        )
    if result.flags:
        lines.append("Note: " + "; ".join(result.flags) + ".")
    return " ".join(lines)


def moe_ridge_note(cat: Catalogue, scenario: Scenario, ridges: pl.DataFrame) -> str | None:
    """For a mixture of experts, the ridge page's caveat: its decode matmuls are not at the dense rule's 2 x batch ÷ bytes
    per weight (the page's dashed line) but at the operating points' figure, and how many of `ridges` (a ridge table,
    core.model.roofline.ridge_table) that figure reaches. None for a dense model."""
    model = cat.model(scenario.model)
    if model.num_experts <= 1:
        return None
    pts = operating_points(cat, scenario)
    x = float(pts.filter(pl.col("point") == "decode matmul")["intensity"][0])
    reached = int((ridges["ridge"] <= x).sum())
    return (
        f"{model.name} routes each token to {model.experts_per_token} of {model.num_experts} experts: its decode matmuls are at "
        f"{x:,.1f} FLOP/byte at batch {scenario.batch:,}, not the dense rule's line; by that figure they are compute-bound "
        f"on {reached:,} of {plural(ridges.height, 'accelerator')}."
    )


def frontier_reading(cat: Catalogue, scenario: Scenario, front: pl.DataFrame, result: Ceiling | None = None) -> str:
    """One sentence on where the frontier ends: the memory cut, and the ridge batch against it.

    `result` is the scenario's ceiling() when the caller has it already.
    """
    r = result if result is not None else ceiling(cat, scenario)
    rb = ridge_batch(cat, scenario, r)
    fitting = front.filter(pl.col("fits"))
    if fitting.is_empty():
        return "Nothing fits: the weights and one sequence's KV cache exceed the usable memory at every batch. Add GPUs or quantise."
    cut = r.max_batch
    parts_now = [] if r.fits else [f"The current batch ({scenario.batch:,}) does not fit."]
    best = fitting.sort("tokens_per_s_total", descending=True).row(0, named=True)
    parts = parts_now + [
        f"The most throughput on this frontier is {best['tokens_per_s_total']:,.0f} tokens/s in total at batch {best['batch']:,}."
    ]
    if cut is not None:
        parts.append(f"Memory holds at most {plural(cut, 'sequence')} at this context.")
    if rb is None:
        model = cat.model(scenario.model)
        if model.num_experts > 1 and r.ridge is not None:
            parts.append(
                f"Each token goes to {model.experts_per_token} of {model.num_experts} experts: no batch up to 65,536 brings "
                "the decode matmuls to the ridge."
            )
        return " ".join(parts)
    which = (
        f"Verifying {scenario.spec_draft_len + 1} tokens of each sequence per step, the decode matmuls"
        if scenario.uses_speculation
        else "The decode matmuls"
    )
    if cut is not None and rb > cut:
        parts.append(f"{which} would reach the ridge at batch {rb:,}, beyond the memory cut: memory, not compute, ends the free lunch.")
    else:
        parts.append(f"{which} reach the ridge at batch {rb:,}; past it a larger batch mostly adds latency.")
    return " ".join(parts)


def comparison_reading(table: pl.DataFrame) -> str:
    """Markdown (names escaped; core.present.text.plain gives its text). Two sentences: the cheapest qualifying accelerator per million tokens (when priced), and the fastest per user
    against the slowest, like with like: per-GPU figures at equal GPU counts, aggregate ones when the counts differ.

    Says when the faster one wins despite a lower peak: decode at this batch
    follows bandwidth, not FLOP/s (seed 004's L40S vs A100 80GB).
    """
    ok = table.filter((pl.col("status") == "ok") & pl.col("tokens_per_s_per_user").is_not_null())
    if ok.height < 2:
        return ""
    parts = []
    if "basis" in ok.columns and ok["basis"][0] == "predicted":
        parts.append(
            "Searched on what the framework is expected to reach (the predicted model, its held-out error in the table), "
            "with the ceiling beside it as the bound."
        )
    priced = ok.filter(pl.col("usd_per_million_tokens").is_not_null()).sort("usd_per_million_tokens")
    if priced.height >= 2:
        lo, hi = priced.row(0, named=True), priced.row(-1, named=True)
        parts.append(
            f"Cheapest: {escape_markdown(lo['gpu_name'])} at \\${lo['usd_per_million_tokens']:,.3g} per million output tokens "
            f"({plural(lo['num_gpus'], 'GPU')}, batch {lo['batch']}), "
            f"{1 - lo['usd_per_million_tokens'] / hi['usd_per_million_tokens']:.0%} less than {escape_markdown(hi['gpu_name'])}'s "
            f"\\${hi['usd_per_million_tokens']:,.3g}."
        )
    ranked = ok.sort("tokens_per_s_per_user", descending=True)
    fast, slow = ranked.row(0, named=True), ranked.row(-1, named=True)
    speed = fast["tokens_per_s_per_user"] / slow["tokens_per_s_per_user"]
    text = f"{escape_markdown(fast['gpu_name'])} is {speed:.1f}× faster per user than {escape_markdown(slow['gpu_name'])}"
    if fast["num_gpus"] == slow["num_gpus"]:
        peak = fast["peak_flops"] / slow["peak_flops"]
        bw = fast["bandwidth_bytes_per_s"] / slow["bandwidth_bytes_per_s"]
        if peak < 1:
            text += f" despite a lower {fast['compute_used']} peak per GPU ({peak:.2f}× the other's)"
        text += f": on {plural(fast['num_gpus'], 'GPU')} each it has {bw:.2f}× the bandwidth"
    else:
        bw = fast["bandwidth_bytes_per_s"] * fast["num_gpus"] / (slow["bandwidth_bytes_per_s"] * slow["num_gpus"])
        text += f": its {fast['num_gpus']} GPUs have {bw:.2f}× the aggregate bandwidth of the other's {slow['num_gpus']}"
    parts.append(text + f", and decode at this batch is {fast['bound']}-bound.")
    return " ".join(parts)


def sweep_answer(frame: pl.DataFrame, matched: pl.DataFrame) -> str:
    """How many scenarios and accelerators meet the limits, in one sentence of markdown (names escaped)."""
    if frame.is_empty():
        return "The sweep is empty."
    if matched.is_empty():
        return f"Nothing meets these limits: 0 of {plural(frame.height, 'scenario')}."
    names = matched.group_by("gpu_name").agg(pl.col("num_gpus").min()).sort("num_gpus", "gpu_name")
    listed = ", ".join(f"{escape_markdown(n)} (from {plural(g, 'GPU')})" for n, g in names.iter_rows())
    return (
        f"{matched.height:,} of {plural(frame.height, 'scenario')} {'meets' if matched.height == 1 else 'meet'} these limits, "
        f"on {names.height} of {plural(frame['gpu'].n_unique(), 'accelerator')}: {listed}."
    )


def prices_used(cat: Catalogue, gpu_ids: list[str], kind: str = "rent") -> str:
    """One sentence naming the price each accelerator's $ figures use and how old it is (none published: said so)."""
    parts = []
    for g in dict.fromkeys(gpu_ids):
        p = cat.price(g, kind)
        name = cat.gpu(g).name
        if p.usd is None:
            parts.append(f"{name}: none published")
            continue
        old = f", older than {STALE_MONTHS} months" if p.too_old else ""
        parts.append(f"{name} ${p.usd:,.2f} ({p.basis}, {p.dates}{old})")
    unit = "per GPU-hour on demand" if kind == "rent" else "per GPU"
    return f"Prices {unit}: " + "; ".join(parts) + "." if parts else ""
