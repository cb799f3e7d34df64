"""The guided tour: the seeds' argument as steps, with numbers from the user's own scenario.

Each step has a title, a short explanation written for the chosen accelerator
and model, the kind of chart the page draws, and "check yourself" questions
whose answers are computed from the same scenario.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.model.ceilings import ceiling, evaluate
from core.model.roofline import SWEEP_BATCHES, operating_points
from core.model.scenario import Scenario
from core.present.text import si


@dataclass(frozen=True)
class Step:
    """One step of the tour."""

    title: str
    text: str
    chart: str  # "roofline", "points", "batching", "attention", "moves", "ridges"
    questions: list[tuple[str, str]] = field(default_factory=list)


def batching_table(cat: Catalogue, scenario: Scenario, batches: tuple[int, ...] = SWEEP_BATCHES) -> pl.DataFrame:
    """Decode step time and throughput over batch sizes (one vectorised evaluation)."""
    res = evaluate(cat, [scenario.model_copy(update={"batch": b}) for b in batches])
    return res.select(
        "batch",
        (pl.col("step_time_s") * 1e3).alias("step time (ms)"),
        pl.col("tokens_per_s_per_user").alias("tokens/s per user"),
        pl.col("tokens_per_s_total").alias("tokens/s total"),
        "intensity",
        "bound",
        "fits",
    )


def moves_table(cat: Catalogue, scenario: Scenario, faster_gpu: str | None) -> pl.DataFrame:
    """The three moves applied to the scenario: tokens/s per user and total for each."""
    variants: list[tuple[str, Scenario]] = [("as is", scenario)]
    if faster_gpu:
        variants.append((f"lift the diagonal: {faster_gpu} (more bandwidth)", scenario.model_copy(update={"gpu": faster_gpu})))
    variants.append(("slide right: int4 weights (fewer bytes)", scenario.model_copy(update={"weights": "int4", "compute": None})))
    variants.append(("slide right: 8 x the batch (more reuse)", scenario.model_copy(update={"batch": scenario.batch * 8})))
    res = evaluate(cat, [v for _, v in variants])
    return res.select(
        pl.Series("move", [name for name, _ in variants]),
        "tokens_per_s_per_user",
        "tokens_per_s_total",
        (pl.col("step_time_s") * 1e3).alias("step_time_ms"),
        "bound",
        "fits",
    )


def steps(cat: Catalogue, scenario: Scenario) -> list[Step]:
    """The tour's steps for one scenario."""
    gpu = cat.gpu(scenario.gpu)
    model = cat.model(scenario.model)
    r = ceiling(cat, scenario)
    pts = {p["point"]: p for p in operating_points(cat, scenario.model_copy(update={"batch": 1})).iter_rows(named=True)}
    big = {p["point"]: p for p in operating_points(cat, scenario.model_copy(update={"batch": 512})).iter_rows(named=True)}
    peak, bw, ridge = r.peak_flops, r.bandwidth_bytes_per_s, r.ridge
    prec = r.compute_used
    mm1, attn1, pre = pts["decode matmul"], pts["decode attention"], pts["prefill step"]
    group = model.num_heads // model.num_kv_heads
    name, gname = model.name, gpu.name
    return [
        Step(
            "1. Arithmetic intensity",
            f"Every kernel does some FLOPs and moves some bytes to and from memory. Their ratio, in FLOP/byte, is all the "
            f"roofline needs. For {name} decoding one token, the weight matmuls do {mm1['flops'] / 1e9:,.1f} GFLOP over "
            f"{mm1['bytes'] / 1e9:,.1f} GB: {mm1['intensity']:.2f} FLOP/byte.",
            "points",
            [
                (
                    "What two numbers define an operation's intensity?",
                    "The FLOPs it performs and the bytes it moves to or from HBM; intensity is their ratio in FLOP/byte.",
                ),
                (
                    "Why is a bf16 decode matmul's intensity close to 1 at batch 1?",
                    "Each weight is read once (2 bytes in bf16) and used for one multiply and one add (2 FLOPs) per sequence: about one FLOP per byte per sequence.",
                ),
            ],
        ),
        Step(
            "2. Two roofs",
            f"{gname} moves at most {si(bw, 'B/s')} and computes at most {si(peak, 'FLOP/s')} in {prec} (dense). "
            "On log-log axes the memory limit is a 45° line (bandwidth × intensity) and the compute limit is flat: "
            "no kernel can sit above either.",
            "roofline",
            [
                (
                    "What does a 45° line on this chart stand for?",
                    "A bandwidth: attainable FLOP/s = bytes/s × FLOP/byte, a straight line of slope 1 on log axes.",
                ),
                (
                    "Can a kernel beat the lower of the two roofs?",
                    "No. The roofs are the datasheet peaks; real kernels land 10-30% below them.",
                ),
            ],
        ),
        Step(
            "3. The ridge",
            f"The roofs meet at the ridge, peak ÷ bandwidth = {ridge:,.0f} FLOP/byte on {gname} in {prec}. "
            "Left of it an operation is memory-bound (faster math would not help), right of it compute-bound.",
            "ridges",
            [
                (f"What is the ridge of {gname} in {prec}?", f"{si(peak, 'FLOP/s')} ÷ {si(bw, 'B/s')} = {ridge:,.0f} FLOP/byte."),
                (
                    "Why do newer accelerators have ridges further right?",
                    "Peak compute at the newest precision grows faster than memory bandwidth, so each byte must be reused more often to keep the tensor cores busy.",
                ),
            ],
        ),
        Step(
            "4. Where decode and prefill land",
            f"At batch 1 the decode step of {name} sits at {pts['decode step']['intensity']:.1f} FLOP/byte, using at most "
            f"{pts['decode step']['share_of_peak']:.1%} of the compute roof. A {scenario.prompt:,}-token prefill sits at "
            f"{pre['intensity']:,.0f} FLOP/byte: {pre['bound']}-bound.",
            "points",
            [
                (
                    "Why is prefill far right of decode?",
                    "Every weight read is used for every prompt token at once, so the FLOPs per byte grow with the prompt length.",
                ),
                (
                    f"How much of {gname}'s compute can batch-1 decode use?",
                    f"At most {pts['decode step']['share_of_peak']:.1%}: intensity × bandwidth ÷ peak.",
                ),
            ],
        ),
        Step(
            "5. Batching is free until the ridge",
            f"A larger batch reuses each weight for more sequences. The decode matmuls climb the memory roof "
            f"(intensity {mm1['intensity']:.1f} at batch 1, {big['decode matmul']['intensity']:,.0f} at batch 512) while the "
            f"step time barely moves, until they reach the ridge at a batch of about {mm1['ridge_batch']:,}.",
            "batching",
            [
                (
                    "Why does per-user latency barely change as the batch grows (left of the ridge)?",
                    "The step was waiting on weight reads, which a larger batch shares; the extra math fills idle tensor cores.",
                ),
                (
                    "What stops the free lunch in practice?",
                    "The ridge (then each sequence adds compute time) and, usually earlier, memory for the KV caches.",
                ),
            ],
        ),
        Step(
            "6. Attention does not batch",
            f"Each sequence reads its own KV cache, so decode attention stays at about 2 × {group} ÷ bytes per KV element = "
            f"{attn1['intensity']:.1f} FLOP/byte at any batch ({big['decode attention']['intensity']:.1f} at batch 512).",
            "attention",
            [
                (
                    "Why does batching not raise attention's intensity?",
                    "Doubling the batch doubles both the attention FLOPs and the KV bytes read; the ratio stays at about 2g ÷ bytes per element.",
                ),
                (
                    "What does move it?",
                    "Fewer KV bytes (GQA/MLA, a quantised cache) or shared prefixes that let several queries reuse one cache read.",
                ),
            ],
        ),
        Step(
            "7. Three moves, and no others",
            "Lift the diagonal (more bandwidth), slide right (fewer bytes or more reuse per byte), or raise the ceiling "
            "(more compute, which helps nothing left of the ridge). The table applies them to your scenario.",
            "moves",
            [
                (
                    "Which move does weight quantisation make?",
                    "It slides right: fewer bytes for the same FLOPs, so both intensity and the bandwidth ceiling rise.",
                ),
                (
                    "When does a chip with 2x the FLOPs but the same bandwidth help decode?",
                    "Only past the ridge; for memory-bound decode it changes nothing.",
                ),
            ],
        ),
    ]


def faster_bandwidth_gpu(cat: Catalogue, gpu_id: str) -> str | None:
    """The accelerator with the next higher bandwidth (for the 'lift the diagonal' move)."""
    bw = cat.gpu(gpu_id).bandwidth_bytes_per_s
    faster = cat.gpus.filter(pl.col("bandwidth_bytes_per_s") > bw).sort("bandwidth_bytes_per_s")
    return str(faster["id"][0]) if faster.height else None
