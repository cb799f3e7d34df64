"""Planning one deployment: step-time breakdown, memory use, the throughput-latency frontier, what-ifs.

Every function takes the catalogue and a `Scenario` (and, where the caller
has it, the scenario's `Ceiling` from core.model.ceilings.ceiling) and
returns plain values or a Polars frame; the ceiling calculator only renders
them. Scenarios that differ in one value (the frontier's batches, the
what-if levers) are evaluated together as one frame by
core.model.ceilings.evaluate.

Units: seconds, bytes, tokens/s; `change_*` columns are ratios new / current.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.precisions import storage_format
from core.model.ceilings import ceiling, evaluate, operation_table
from core.model.result import Ceiling
from core.model.roofline import operating_points
from core.model.scenario import Scenario

#: Decode batches of the frontier (the current batch, the ridge batch and the memory cut are added).
FRONTIER_BATCHES = tuple(2**i for i in range(11))  # 1 .. 1024

#: Step-time components in stacking order.
COMPONENTS = ("weights", "KV cache", "activations", "compute", "communication", "draft model", "overhead")

#: Memory segments in stacking order.
MEMORY_SEGMENTS = ("weights", "KV cache", "reserve", "free")

#: Headline figures compared by the what-if panel: column -> True when larger is better.
HEADLINES: dict[str, bool] = {
    "tokens_per_s_per_user": True,
    "tokens_per_s_total": True,
    "time_per_output_token_s": False,
    "ttft_s": False,
}

#: Speculative decoding defaults for the what-if lever (draft length, acceptance).
SPEC_LEVER = (4, 0.7)


def step_breakdown(cat: Catalogue, scenario: Scenario, result: Ceiling | None = None) -> pl.DataFrame:
    """The time of one decode cycle split by what it waits for.

    Each operation of the target's decode step (k + 1 tokens per sequence
    when speculative) is bounded by memory or compute: a memory-bound
    operation's time is split into reading weights, KV cache and activations
    in proportion to the bytes each GPU moves; a compute-bound one counts as
    compute. Tensor-parallel communication, the k draft steps and the stated
    overhead are added. Rows: component, time_s, share; the times sum to the
    cycle time (`cycle_time_s` of the result).
    """
    r = result if result is not None else ceiling(cat, scenario)
    n = float(scenario.num_gpus)
    bw = r.bandwidth_bytes_per_s * scenario.eff_bandwidth
    mem = pl.col("bound") == "memory"
    sums = operation_table(cat, scenario).select(
        pl.when(mem).then(pl.col("weight_bytes") / n / bw).otherwise(0.0).sum().alias("weights"),
        pl.when(mem).then(pl.col("kv_bytes") / pl.col("kv_shard") / bw).otherwise(0.0).sum().alias("KV cache"),
        pl.when(mem).then(pl.col("act_bytes") / n / bw).otherwise(0.0).sum().alias("activations"),
        pl.when(mem).then(0.0).otherwise(pl.col("time_s")).sum().alias("compute"),
    )
    draft = scenario.spec_draft_len * (r.draft_step_time_s or 0.0) if scenario.uses_speculation else 0.0
    times = {**sums.row(0, named=True), "communication": r.comm_time_s, "draft model": draft, "overhead": scenario.overhead_s}
    total = sum(times.values())
    return pl.DataFrame(
        {
            "component": list(COMPONENTS),
            "time_s": [float(times[c]) for c in COMPONENTS],
            "share": [float(times[c]) / total if total > 0 else 0.0 for c in COMPONENTS],
        }
    )


def memory_use(result: Ceiling) -> pl.DataFrame:
    """Memory held across all GPUs: weights (draft included), KV cache, reserve, and what is left free.

    Rows: segment, bytes; plus capacity_bytes on every row. When the scenario
    does not fit, `free` is 0 and the other segments add up past capacity.
    """
    r = result
    free = max(0.0, r.capacity_bytes - r.weight_memory_bytes - r.kv_memory_bytes - r.reserve_bytes)
    return pl.DataFrame(
        {
            "segment": list(MEMORY_SEGMENTS),
            "bytes": [r.weight_memory_bytes, r.kv_memory_bytes, r.reserve_bytes, free],
            "capacity_bytes": [r.capacity_bytes] * len(MEMORY_SEGMENTS),
        }
    )


#: The decode batches tried for a mixture of experts' ridge batch: about 4% apart, 1 to 65,536 tokens a step.
MOE_BATCHES = tuple(sorted({max(1, round(1.04**i)) for i in range(284)}))


def ridge_batch(cat: Catalogue, scenario: Scenario, result: Ceiling) -> int | None:
    """The decode batch at which the weight matmuls reach the (derated) ridge.

    A dense model's decode matmul intensity is about 2 x batch x tokens per sequence per step / bytes per weight, so
    the batch is ceil(ridge x bytes / (2 q)). A mixture of experts routes each token to k of its E experts: an expert's
    weights serve fewer tokens and the matmuls climb slower, so its batch is read off the operating points (the first of
    MOE_BATCHES tokens a step whose decode matmuls reach the ridge, over q tokens of each sequence). None when the
    accelerator has no usable peak, or (a mixture of experts) no batch up to 65,536 tokens a step reaches it.
    """
    if result.ridge is None:
        return None
    derated = result.ridge * scenario.eff_compute / scenario.eff_bandwidth
    q = scenario.spec_draft_len + 1 if scenario.uses_speculation else 1
    if cat.model(scenario.model).num_experts <= 1:
        return max(1, math.ceil(derated * storage_format(scenario.weights).bytes / (2.0 * q)))
    # the matmuls of a verify step of b sequences x q tokens are those of a plain decode step of b x q sequences
    climb = operating_points(cat, scenario, MOE_BATCHES).filter(pl.col("point") == "decode matmul")
    reached = climb.filter(pl.col("intensity") >= derated)["batch"]
    return None if reached.is_empty() else max(1, math.ceil(int(reached.min()) / q))  # type: ignore[arg-type]


def frontier(cat: Catalogue, scenario: Scenario, batches: Sequence[int] = FRONTIER_BATCHES, result: Ceiling | None = None) -> pl.DataFrame:
    """Tokens/s per user against tokens/s in total over decode batches, one evaluation.

    The batches are `batches` plus the current batch, the ridge batch and the
    largest batch that fits (when inside the range). One row per batch with
    fits, bound, is_current, is_ridge and is_cut (the largest batch that
    fits); rows that do not fit carry null throughput (the chart cuts them).
    """
    base = result if result is not None else ceiling(cat, scenario)
    rb = ridge_batch(cat, scenario, base)
    lo, hi = min(batches), max(batches)
    extra = [scenario.batch] + [b for b in (rb, base.max_batch) if b is not None and lo <= b <= hi]
    all_batches = sorted({int(b) for b in (*batches, *extra)})
    columns = ["batch", "tokens_per_s_per_user", "tokens_per_s_total", "time_per_output_token_s", "bound", "fits"]
    out = evaluate(cat, [scenario.model_copy(update={"batch": b}) for b in all_batches], columns=columns)
    return out.with_columns(
        (pl.col("batch") == scenario.batch).alias("is_current"),
        (pl.col("batch") == (rb if rb is not None else -1)).alias("is_ridge"),
        (pl.col("batch") == (base.max_batch if base.max_batch is not None else -1)).alias("is_cut"),
    )


def default_draft_model(cat: Catalogue, model_id: str) -> str | None:
    """A draft model for speculative decoding: the smallest catalogue model of the same family
    and vocabulary (same tokenizer size) with at most a third of the target's parameters."""
    target = cat.model(model_id)
    params = dict(zip(cat.models["id"], cat.models["total_params"], strict=True))
    family = dict(zip(cat.models["id"], cat.models["family"], strict=True))
    candidates = [
        m
        for m, rec in cat.records.items()
        if m != model_id
        and rec.vocab_size == target.vocab_size
        and family.get(m) == family.get(model_id)
        and params[m] <= params[model_id] / 3.0
    ]
    return min(candidates, key=lambda m: params[m]) if candidates else None


def more_bandwidth_accelerator(cat: Catalogue, gpu_id: str, *, at_least: float = 1.25) -> str | None:
    """The accelerator with the least bandwidth that still has `at_least` x this one's.

    The same vendor is preferred (then the higher bf16 peak on a tie); any
    vendor otherwise; None when none has that much.
    """
    me = cat.gpu(gpu_id)
    faster = cat.gpus.filter(pl.col("bandwidth_bytes_per_s") >= at_least * me.bandwidth_bytes_per_s).sort(
        "bandwidth_bytes_per_s", "peak_bf16", "id", descending=[False, True, False], nulls_last=True
    )
    same = faster.filter(pl.col("vendor") == me.vendor)
    pick = same if same.height else faster
    return str(pick["id"][0]) if pick.height else None


#: The seed's three moves (seed 004, "Three moves, and no others"), in its words: name -> what it is.
MOVES: dict[str, str] = {
    "lift the diagonal": "more memory bandwidth: helps everything left of the ridge, proportionally",
    "slide right": "fewer bytes for the same math, or more math per byte: helps until the ridge",
    "raise the ceiling": "more arithmetic capacity: helps nothing left of the ridge",
}


def more_compute_accelerator(
    cat: Catalogue, gpu_id: str, precision: str | None, *, at_least: float = 1.5, band: float = 0.15
) -> str | None:
    """An accelerator with at least `at_least` x this one's peak at `precision` and about the same bandwidth (within `band`).

    The move that raises only the ceiling: of those, the one whose bandwidth is
    closest to this one's (then the same vendor, then the higher peak); None
    when none qualifies or the precision has no peak here.
    """
    col = f"peak_{precision}"
    if precision is None or col not in cat.gpus.columns:
        return None
    me = cat.gpus.filter(pl.col("id") == gpu_id).row(0, named=True)
    if me[col] is None:
        return None
    bw = float(me["bandwidth_bytes_per_s"])
    pick = (
        cat.gpus.filter(
            (pl.col(col) >= at_least * me[col]) & ((pl.col("bandwidth_bytes_per_s") / bw - 1.0).abs() <= band) & (pl.col("id") != gpu_id)
        )
        .with_columns((pl.col("bandwidth_bytes_per_s") / bw - 1.0).abs().alias("_gap"), (pl.col("vendor") != me["vendor"]).alias("_other"))
        .sort("_gap", "_other", col, "id", descending=[False, False, True, False])
    )
    return str(pick["id"][0]) if pick.height else None


def levers(cat: Catalogue, scenario: Scenario, result: Ceiling | None = None) -> list[tuple[str, str, str, Scenario | None]]:
    """The seed's three moves applied one lever at a time: (move, lever, what changes, scenario or None when it cannot apply).

    `move` is one of MOVES: lift the diagonal (more bandwidth: a faster-memory
    accelerator, twice the GPUs, whose bandwidths add up), slide right (a
    larger batch, quantised weights or KV cache, speculative decoding) or raise
    the ceiling (an accelerator with more FLOP/s at about the same bandwidth).
    The calculator's what-if table and the tour's step 7 both show these.
    """
    r = result if result is not None else ceiling(cat, scenario)
    out: list[tuple[str, str, str, Scenario | None]] = []

    def add(move: str, name: str, note: str, **changes: Any) -> None:
        out.append((move, name, note, scenario.at(**changes) if changes else None))

    faster = more_bandwidth_accelerator(cat, scenario.gpu)
    mine = cat.gpu(scenario.gpu)
    if faster is None:
        add("lift the diagonal", "more bandwidth", "no accelerator in the catalogue has 1.25× this bandwidth")
    else:
        theirs = cat.gpu(faster)
        ratio = theirs.bandwidth_bytes_per_s / mine.bandwidth_bytes_per_s
        add("lift the diagonal", "more bandwidth", f"{mine.name} → {theirs.name} ({ratio:.2f}× bandwidth)", gpu=faster)
    domain = mine.scaleup_domain
    if domain is not None and scenario.num_gpus * 2 > domain:
        add(
            "lift the diagonal",
            "twice the GPUs",
            f"{scenario.num_gpus * 2} GPUs exceed one scale-up domain ({domain}): replicas add users, not speed",
        )
    elif scenario.num_gpus * 2 <= 1024:
        add(
            "lift the diagonal",
            "twice the GPUs",
            f"{scenario.num_gpus} → {scenario.num_gpus * 2} GPUs (tensor parallel: bandwidths add up)",
            num_gpus=scenario.num_gpus * 2,
        )
    room = r.max_batch
    bigger = min(4 * scenario.batch, room if room is not None else 4 * scenario.batch, 1_000_000)
    if bigger > scenario.batch:
        add("slide right", "larger batch", f"batch {scenario.batch} → {bigger} (4× or the most that fits)", batch=bigger)
    else:
        add("slide right", "larger batch", "no room: memory already holds the largest batch at this context")
    w = storage_format(scenario.weights).bytes
    for fmt in ("fp8", "int4"):
        if storage_format(fmt).bytes < w:
            add(
                "slide right",
                f"{fmt} weights",
                f"weights {scenario.weights} → {fmt} (compute at its default format)",
                weights=fmt,
                compute=None,
            )
        else:
            add("slide right", f"{fmt} weights", f"weights already {scenario.weights}")
    if storage_format("fp8").bytes < storage_format(scenario.kv).bytes:
        add("slide right", "fp8 KV cache", f"KV cache {scenario.kv} → fp8", kv="fp8")
    else:
        add("slide right", "fp8 KV cache", f"KV cache already {scenario.kv}")
    draft = scenario.spec_draft_model or default_draft_model(cat, scenario.model)
    if scenario.uses_speculation:
        add("slide right", "speculative decoding", "already on")
    elif draft is None:
        add("slide right", "speculative decoding", "no smaller model of the same family and vocabulary in the catalogue")
    else:
        k, a = SPEC_LEVER
        note = f"draft {cat.model(draft).name}, {k} tokens, acceptance {a:.0%}"
        add("slide right", "speculative decoding", note, spec_draft_len=k, spec_acceptance=a, spec_draft_model=draft)
    prec = r.compute_used
    stronger = more_compute_accelerator(cat, scenario.gpu, prec)
    if stronger is None:
        add(
            "raise the ceiling",
            "more FLOP/s",
            f"no accelerator in the catalogue has 1.5× this {prec or 'compute'} peak at about this bandwidth",
        )
    else:
        theirs = cat.gpu(stronger)
        peak_ratio = float(getattr(theirs, f"peak_{prec}")) / float(getattr(mine, f"peak_{prec}"))
        bw_ratio = theirs.bandwidth_bytes_per_s / mine.bandwidth_bytes_per_s
        add(
            "raise the ceiling",
            "more FLOP/s",
            f"{mine.name} → {theirs.name} ({peak_ratio:.2f}× the {prec} peak, {bw_ratio:.2f}× bandwidth)",
            gpu=stronger,
        )
    return out


def what_ifs(cat: Catalogue, scenario: Scenario, result: Ceiling | None = None) -> pl.DataFrame:
    """The current scenario and each lever applied, evaluated as one frame.

    Columns: move (one of MOVES; "as is" for the current scenario), lever,
    change (text), the headline figures (HEADLINES), fits, bound, and
    change_<figure> = lever / current (null when either is null). Levers that
    cannot apply keep their row with null figures and say why. The ceiling
    calculator's what-if table and the tour's three moves are this frame.
    """
    rows = [("as is", "current scenario", "as set", scenario), *levers(cat, scenario, result)]
    applied = [(i, s) for i, (_, _, _, s) in enumerate(rows) if s is not None]
    results = evaluate(cat, [s for _, s in applied], columns=["scenario_id", *HEADLINES, "fits", "bound"])
    results = results.with_columns(pl.Series("row", [i for i, _ in applied], dtype=pl.Int64)).drop("scenario_id")
    table = pl.DataFrame(
        {"row": list(range(len(rows))), "move": [r[0] for r in rows], "lever": [r[1] for r in rows], "change": [r[2] for r in rows]}
    ).join(results, on="row", how="left")
    base = table.row(0, named=True)
    ratios = [
        (pl.col(c) / base[c]).alias(f"change_{c}") if base[c] else pl.lit(None, dtype=pl.Float64).alias(f"change_{c}") for c in HEADLINES
    ]
    return table.with_columns(ratios).sort("row").drop("row")


#: The most GPUs `would_fit` tries (the Scenario's own limit).
MAX_GPUS = 1024


@dataclass(frozen=True)
class WouldFit:
    """What would fit when a scenario does not: each one change away from it (None where no such change fits).

    max_batch: the largest batch that fits at this context and GPU count;
    min_gpus: the fewest GPUs that hold this batch at this context (up to MAX_GPUS);
    max_context: the longest context (tokens) that fits at this batch and GPU count.
    """

    scenario: Scenario
    max_batch: int | None
    min_gpus: int | None
    max_context: int | None

    def sentence(self) -> str:
        """One sentence naming the three, in the user's units."""
        sc = self.scenario
        gpus = "GPU" if sc.num_gpus == 1 else "GPUs"
        parts = [
            f"a batch of at most {self.max_batch:,}" if self.max_batch else "no batch at this context",
            f"{self.min_gpus:,} GPUs or more" if self.min_gpus is not None else f"no GPU count up to {MAX_GPUS:,}",
            f"a context of at most {self.max_context:,} tokens"
            if self.max_context is not None
            else "no context: the weights alone exceed the usable memory",
        ]
        return (
            "What would fit, changing one thing: "
            + "; ".join(parts)
            + f" (the rest as set: batch {sc.batch:,}, {sc.context:,} tokens of context, {sc.num_gpus} {gpus}, "
            + f"{sc.reserve_fraction:.0%} memory reserve)."
        )

    def record(self) -> dict[str, Any]:
        """The three as plain values plus the sentence (the CLI's `would_fit`)."""
        return {"max_batch": self.max_batch, "min_gpus": self.min_gpus, "max_context": self.max_context, "sentence": self.sentence()}


def would_fit(cat: Catalogue, scenario: Scenario, result: Ceiling | None = None) -> WouldFit | None:
    """None when the scenario fits; otherwise the largest batch, the fewest GPUs and the longest context that would.

    Memory grows with batch and context and shrinks per GPU with more GPUs, so
    each answer is the edge of a monotone search: the largest batch is the
    ceiling's own max_batch; the GPU counts 1 .. MAX_GPUS are evaluated in one
    frame; the context is bisected below the current one (64 candidates per
    evaluation, a sliding window's cache included).
    """
    r = result if result is not None else ceiling(cat, scenario)
    if r.fits:
        return None
    max_batch = int(r.max_batch) if r.max_batch is not None and r.max_batch >= 1 else None
    lo, hi = 0, scenario.context  # fits(lo) unknown yet; fits(hi) is False

    def tries_between(lo: int, hi: int) -> list[int]:
        step = max(1, (hi - lo) // 64)
        return list(range(lo + step, hi, step))

    # one evaluation: every GPU count, the context 0 and the search's first contexts (the rest only where it narrows)
    tries = tries_between(lo, hi)
    rows = [scenario.at(num_gpus=n) for n in range(1, MAX_GPUS + 1)] + [scenario.at(context=c) for c in (0, *tries)]
    fits = evaluate(cat, rows, columns=["fits"])["fits"].to_list()
    gpu_fits, zero_fits, fits = fits[:MAX_GPUS], fits[MAX_GPUS], fits[MAX_GPUS + 1 :]
    min_gpus = next((n for n, f in enumerate(gpu_fits, 1) if f), None)
    if not zero_fits:
        return WouldFit(scenario, max_batch, min_gpus, None)
    while True:  # invariant: lo fits, hi does not
        below = [c for c, f in zip(tries, fits, strict=True) if f]
        above = [c for c, f in zip(tries, fits, strict=True) if not f]
        lo = max(below, default=lo)
        hi = min([c for c in above if c > lo], default=hi)
        if hi - lo <= 1:
            return WouldFit(scenario, max_batch, min_gpus, lo)
        tries = tries_between(lo, hi)
        fits = evaluate(cat, [scenario.at(context=c) for c in tries], columns=["fits"])["fits"].to_list()
