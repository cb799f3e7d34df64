"""The guided tour: the seeds' argument as steps, with numbers from the user's own scenario.

Each step has a title, a short explanation written for the chosen accelerator
and model, the kind of chart the page draws, and "check yourself" questions
whose answers are computed from the same scenario.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.precisions import storage_format
from core.model.ceilings import ceiling, evaluate, operation_table
from core.model.result import Ceiling
from core.model.roofline import SWEEP_BATCHES, operating_points
from core.model.scenario import Scenario
from core.plan.planning import MOVES, what_ifs, would_fit
from core.present.tables import what_if_display
from core.present.text import duration, escape_markdown, si

#: Seed 004's worked example (Llama 70B in bf16 on 2 x H100 SXM, batch 32, "roughly 1,530" tokens/s) at the context that
#: reproduces it: the seed counts weights only (no KV reads), so a short context (256 tokens: 2.7 GB of KV cache for 32
#: sequences against 141 GB of weights), with the default 10% memory reserve; at the default 4,096 tokens it does not fit.
SEED_004_EXAMPLE = Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=32, context=256)

#: The CLI command that reproduces SEED_004_EXAMPLE (README, tour step 5).
SEED_004_COMMAND = (
    "roofline ceiling --gpu h100-sxm --num-gpus 2 --model llama-3.1-70b --batch 32 --context 256 --reserve-fraction 0.1 --json"
)

#: Step time growth below which the tour says it "barely moves" (x).
BARELY = 1.25

#: The batch the tour's batching sentence compares with batch 1.
COMPARE_BATCH = 64


@dataclass(frozen=True)
class Step:
    """One step of the tour."""

    title: str
    text: str
    chart: str  # "roofline", "points", "batching", "attention", "moves", "ridges"
    questions: list[tuple[str, str]] = field(default_factory=list)


def batching_table(cat: Catalogue, scenario: Scenario, batches: tuple[int, ...] = SWEEP_BATCHES) -> pl.DataFrame:
    """Decode step time and throughput over batch sizes, with the step time the weights alone would take (context 0).

    Columns (units in the names): batch, step time (ms), step time, weights alone (ms), weights read (GB),
    KV cache read (GB), tokens/s per user, tokens/s total, whole-step intensity (FLOP/byte), bound, fits. One evaluation.
    """
    scenarios = [scenario.model_copy(update={"batch": b}) for b in batches]
    alone = [s.model_copy(update={"context": 0}) for s in scenarios]
    res = evaluate(cat, scenarios + alone)
    with_kv, weights = res.head(len(batches)), res.tail(len(batches))
    return with_kv.select(
        "batch",
        (pl.col("step_time_s") * 1e3).alias("step time (ms)"),
        pl.Series("step time, weights alone (ms)", (weights["step_time_s"] * 1e3).to_list(), dtype=pl.Float64),
        (pl.col("weight_bytes") / 1e9).alias("weights read (GB)"),
        (pl.col("kv_bytes") / 1e9).alias("KV cache read (GB)"),
        pl.col("tokens_per_s_per_user").alias("tokens/s per user"),
        pl.col("tokens_per_s_total").alias("tokens/s total"),
        pl.col("intensity").alias("whole-step intensity (FLOP/byte)"),
        "bound",
        "fits",
    )


def kv_matches_weights_batch(cat: Catalogue, scenario: Scenario) -> int | None:
    """The smallest decode batch at which a step's KV-cache bytes reach its weight bytes: where the free lunch ends.

    Weights read once per step serve the whole batch; every sequence reads its
    own KV cache, so KV bytes grow with batch x context. None when there is no
    KV to read (context 0) or not even batch 1,000,000 gets there. Bisected over
    the batch (an MoE step reads more experts at a larger batch).
    """
    if scenario.context == 0:
        return None

    def ratio(batches: list[int]) -> list[float]:
        res = evaluate(cat, [scenario.model_copy(update={"batch": b}) for b in batches], columns=["weight_bytes", "kv_bytes"])
        return (res["kv_bytes"] / res["weight_bytes"]).to_list()

    if ratio([1])[0] >= 1.0:
        return 1
    hi = 1_000_000
    if ratio([hi])[0] < 1.0:
        return None
    lo = 1  # ratio(lo) < 1 <= ratio(hi)
    while hi - lo > 1:
        step = max(1, (hi - lo) // 64)
        tries = list(range(lo + step, hi, step))
        got = ratio(tries)
        lo = max([b for b, r in zip(tries, got, strict=True) if r < 1.0], default=lo)
        hi = min([b for b, r in zip(tries, got, strict=True) if r >= 1.0 and b > lo], default=hi)
    return hi


@dataclass(frozen=True)
class PrefillMatmuls:
    """One prompt's prefill matmuls counted two ways.

    `intensity` is the roofline's "prefill matmul" point: every layer's
    projections, MLP and experts plus the lm_head (which prefill runs for the
    last prompt token only), FLOPs over the weights and the activations they
    read and write. `weights_only` is seed 004's count: the layers' matmuls,
    FLOPs over weight bytes alone, which for a dense model is 2 FLOPs per
    weight per token x tokens / bytes per weight (`seed_rule`).
    """

    tokens: int
    flops: float  # the point's: layers' matmuls and the lm_head
    weight_bytes: float
    act_bytes: float
    layer_flops: float  # the layers' matmuls and experts only
    layer_weight_bytes: float
    lm_head_weight_bytes: float
    bytes_per_weight: float

    @property
    def intensity(self) -> float:
        """FLOP/byte counting weights and activations: the roofline's prefill matmul point."""
        return self.flops / (self.weight_bytes + self.act_bytes)

    @property
    def weights_only(self) -> float:
        """FLOP/byte of the layers' matmuls counting weight bytes only (seed 004's count)."""
        return self.layer_flops / self.layer_weight_bytes

    @property
    def seed_rule(self) -> float:
        """Seed 004's rule for a dense model: 2 FLOPs per weight per token x tokens / bytes per weight."""
        return 2.0 * self.tokens / self.bytes_per_weight


def prefill_matmuls(cat: Catalogue, scenario: Scenario) -> PrefillMatmuls:
    """The prefill matmuls of one prompt (scenario.prompt tokens), from the per-operation table."""
    ops = operation_table(cat, scenario, phase="prefill").filter(pl.col("kind").is_in(["matmul", "moe", "lm_head"]))
    layers = ops.filter(pl.col("kind") != "lm_head")
    return PrefillMatmuls(
        tokens=scenario.prompt,
        flops=float(ops["flops"].sum()),
        weight_bytes=float(ops["weight_bytes"].sum()),
        act_bytes=float(ops["act_bytes"].sum()),
        layer_flops=float(layers["flops"].sum()),
        layer_weight_bytes=float(layers["weight_bytes"].sum()),
        lm_head_weight_bytes=float(ops.filter(pl.col("kind") == "lm_head")["weight_bytes"].sum()),
        bytes_per_weight=storage_format(scenario.weights).bytes,
    )


def prefill_sentence(pm: PrefillMatmuls) -> str:
    """Both intensities of the prefill matmuls and why they differ."""
    text = (
        f"A {pm.tokens:,}-token prefill's matmuls sit at {pm.intensity:,.0f} FLOP/byte counting weights and activations "
        f"(the chart's prefill matmul); {pm.weights_only:,.0f} counting weights only, as the seed does"
    )
    if abs(pm.weights_only / pm.seed_rule - 1.0) < 0.01:
        text += (
            f": each weight byte read once serves 2 FLOPs per token × {pm.tokens:,} tokens ÷ {per_element(pm.bytes_per_weight, 'weight')}."
        )
    else:
        text += (
            f" (the seed's rule, 2 × {pm.tokens:,} tokens ÷ {per_element(pm.bytes_per_weight, 'weight')} = {pm.seed_rule:,.0f}, "
            "holds for a dense model; each token here uses only its routed experts)."
        )
    return text + (
        f" They differ because every matmul also reads its input and writes its output ({si(pm.act_bytes, 'B')} of activations "
        f"beside {si(pm.weight_bytes, 'B')} of weights), and the lm_head ({si(pm.lm_head_weight_bytes, 'B')}) runs for the "
        "last prompt token only."
    )


@dataclass(frozen=True)
class Batching:
    """What tour step 5 says, read off its table: the step time at batch 1 and COMPARE_BATCH, with and without the KV cache."""

    batch: int
    ms_1: float
    ms_b: float
    weights_ms_1: float
    weights_ms_b: float
    fits_b: bool
    kv_gb_1: float  # one sequence's KV-cache read per step
    weights_gb_1: float
    weights_gb_b: float
    lunch_ends: int | None  # kv_matches_weights_batch
    ridge_batch: int | None
    weights_gb_lunch: float | None = None  # the weights a step reads at the batch `lunch_ends` (an MoE step reads more experts)
    kv_gb_lunch: float | None = None  # and the KV cache it reads there

    @property
    def growth(self) -> float:
        return self.ms_b / self.ms_1

    @property
    def weights_growth(self) -> float:
        return self.weights_ms_b / self.weights_ms_1


def batching_facts(cat: Catalogue, scenario: Scenario, table: pl.DataFrame, ridge_batch: int | None) -> Batching:
    """The figures step 5 quotes, from the batching table shown beside it."""
    rows = {r["batch"]: r for r in table.iter_rows(named=True)}
    b = COMPARE_BATCH if COMPARE_BATCH in rows else max(rows)
    one, big = rows[1], rows[b]
    lunch = kv_matches_weights_batch(cat, scenario)
    at_lunch = None
    if lunch is not None:
        at_lunch = evaluate(cat, [scenario.model_copy(update={"batch": lunch})], columns=["weight_bytes", "kv_bytes"]).row(0, named=True)
    return Batching(
        batch=b,
        ms_1=one["step time (ms)"],
        ms_b=big["step time (ms)"],
        weights_ms_1=one["step time, weights alone (ms)"],
        weights_ms_b=big["step time, weights alone (ms)"],
        fits_b=bool(big["fits"]),
        kv_gb_1=one["KV cache read (GB)"],
        weights_gb_1=one["weights read (GB)"],
        weights_gb_b=big["weights read (GB)"],
        lunch_ends=lunch,
        ridge_batch=ridge_batch,
        weights_gb_lunch=None if at_lunch is None else at_lunch["weight_bytes"] / 1e9,
        kv_gb_lunch=None if at_lunch is None else at_lunch["kv_bytes"] / 1e9,
    )


def _ms(ms: float) -> str:
    return duration(ms / 1e3)


def per_element(nbytes: float, what: str) -> str:
    """ "1 byte per weight", "2 bytes per KV element", "0.5 bytes per weight": the unit agrees with its count."""
    return f"{nbytes:g} {'byte' if nbytes == 1 else 'bytes'} per {what}"


@dataclass(frozen=True)
class MatmulClimb:
    """How the decode matmuls climb toward the ridge over the batch, read off the operating points (core.model.roofline)."""

    rule_batch: int | None  # seed 004's dense rule: ridge x bytes per weight / 2
    reached_at: int | None  # the first batch of SWEEP_BATCHES whose decode matmuls reach the ridge (None: none does)
    intensities: dict[int, float]  # at 256, 512 and 1,024


def matmul_climb(cat: Catalogue, scenario: Scenario, ridge: float | None, rule_batch: int | None) -> MatmulClimb:
    """The decode matmuls' intensity over the batches 1 .. 1,024 and the first that reaches the ridge (one evaluation)."""
    pts = operating_points(cat, scenario, SWEEP_BATCHES).filter(pl.col("point") == "decode matmul").sort("batch")
    by_batch = dict(zip(pts["batch"].to_list(), pts["intensity"].to_list(), strict=True))
    reached = next((b for b, x in by_batch.items() if ridge is not None and x >= ridge), None)
    return MatmulClimb(rule_batch, reached, {b: by_batch[b] for b in (256, 512, 1024) if b in by_batch})


def climb_sentence(climb: MatmulClimb, model: Any, bytes_per_weight: float, ridge: float | None, max_batch: int | None) -> str:
    """Step 5's sentence on where the decode matmuls reach the ridge: the seed's rule for a dense model; for a mixture of
    experts, what its routing does to the rule and the figures the operating points show."""
    rule = f"the seed's rule (2 × batch ÷ {per_element(bytes_per_weight, 'weight')})"
    if model.num_experts <= 1 or climb.rule_batch is None:
        if climb.rule_batch is None:
            return "This accelerator lists no peak at the compute format, so there is no ridge to reach."
        return f"by {rule}, reach the ridge at a batch of about {climb.rule_batch:,}."
    shown = ", ".join(f"{x:,.1f}" for x in climb.intensities.values())
    batches = ", ".join(f"{b:,}" for b in climb.intensities)
    text = (
        f"by {rule}, a dense model's would reach the ridge at a batch of about {climb.rule_batch:,}. But a mixture-of-experts "
        f"step routes each token to {model.experts_per_token} of {model.num_experts} experts, so an expert's weights serve "
        f"about batch × {model.experts_per_token} ÷ {model.num_experts} tokens: here the decode matmuls are at {shown} "
        f"FLOP/byte at batch {batches}, against a ridge of {ridge:,.0f}"
    )
    text += f", reaching it at batch {climb.reached_at:,}." if climb.reached_at is not None else ", and no batch up to 1,024 reaches it."
    if max_batch is not None and (climb.reached_at is None or max_batch < climb.reached_at):
        text += f" Memory caps the batch at {max_batch:,} first."
    return text


def attention_sentence(model: Any, kv_bytes: float, at_1: float, at_512: float) -> str:
    """Step 6's sentence: decode attention's intensity and the rule it follows, MLA's or grouped-query attention's."""
    kv = per_element(kv_bytes, "KV element")
    if model.is_mla:
        h, r, rope = model.num_heads, model.kv_lora_rank, model.qk_rope_head_dim
        rule = 2 * h * (2 * r + rope) / ((r + rope) * kv_bytes)
        how = (
            f"Multi-head latent attention caches one {r + rope}-element latent per token ({r} + {rope} rotary dims) that all "
            f"{h} heads read: about 2 × {h} heads × (2 × {r} + {rope}) FLOPs per cached token ÷ ({r + rope} elements × {kv}) = "
            f"{rule:,.1f} FLOP/byte"
        )
    else:
        g = model.num_heads // model.num_kv_heads
        rule = 2 * g / kv_bytes
        how = f"{g} query {'head shares' if g == 1 else 'heads share'} each KV head: about 2 × {g} ÷ {kv} = {rule:,.1f} FLOP/byte"
    return (
        f"Each sequence reads its own KV cache, so decode attention stays where it is at any batch: {at_1:,.1f} FLOP/byte at "
        f"batch 1, {at_512:,.1f} at batch 512. {how}."
    )


def batching_sentence(f: Batching, context: int, max_batch: int | None) -> str:
    """Step 5's account of the free lunch: how much the step time grows from batch 1, why, and where the lunch ends."""
    verb = "barely moves:" if f.growth < BARELY else "grows"
    text = (
        f"From batch 1 to {f.batch:,} the step time {verb} {f.growth:.1f}× ({_ms(f.ms_1)} → {_ms(f.ms_b)}); "
        f"with the weights alone (no KV cache) it would grow {f.weights_growth:.1f}× ({_ms(f.weights_ms_1)} → {_ms(f.weights_ms_b)})"
    )
    if f.weights_growth >= BARELY and f.weights_gb_b > f.weights_gb_1 * BARELY:
        text += (
            f": a mixture-of-experts step reads more experts at a larger batch ({si(f.weights_gb_1 * 1e9, 'B')} → "
            f"{si(f.weights_gb_b * 1e9, 'B')} of weights)."
        )
    elif f.weights_growth >= BARELY:
        text += ": the matmuls have passed the ridge, so the math, not the bytes, sets the time."
    else:
        text += "."
    if not f.fits_b:
        held = f"memory holds at most {max_batch:,}" if max_batch else "not even batch 1 fits"
        text += f" (Batch {f.batch:,} does not fit at this context: {held}; the times show what the bytes would cost.)"
    if f.lunch_ends is None:
        return text + " With no KV cache to read, the free lunch lasts until the ridge."
    text += (
        "\n\nThe seed's free lunch is that the weights, read once per step, serve the whole batch. But each sequence also reads "
        f"its own KV cache: {si(f.kv_gb_1 * 1e9, 'B')} per sequence per step at {context:,} tokens of context, beside "
        f"{si(f.weights_gb_1 * 1e9, 'B')} of weights at batch 1"
    )
    grew = f.weights_gb_lunch is not None and f.weights_gb_lunch > f.weights_gb_1 * BARELY
    if grew and f.kv_gb_lunch is not None and f.weights_gb_lunch is not None:
        text += (
            f". A mixture-of-experts step reads more experts as the batch grows, so at batch {f.lunch_ends:,} its "
            f"{si(f.kv_gb_lunch * 1e9, 'B')} of KV cache reach the {si(f.weights_gb_lunch * 1e9, 'B')} of weights it reads there: "
            f"the KV reads match the weight reads at a batch of about {f.lunch_ends:,}."
        )
    else:
        text += f", so KV reads grow with batch × context and match the weight reads at a batch of about {f.lunch_ends:,}."
    if max_batch is not None and f.lunch_ends > max_batch:
        text += f" That is more sequences than memory holds at this context (at most {max_batch:,})."
    if f.ridge_batch is not None and f.lunch_ends < f.ridge_batch:
        text += (
            f" So the lunch ends first, before the ridge (batch {f.ridge_batch:,}): past it each added sequence "
            "adds about as many bytes as the weights it shares."
        )
    elif f.ridge_batch is not None:
        text += f" Here the ridge (batch {f.ridge_batch:,}) comes first: the lunch lasts until the matmuls turn compute-bound."
    return text


def seed_example_answer(cat: Catalogue) -> str:
    """The answer to 'what does seed 004's 1,530 tokens/s assume?', computed from SEED_004_EXAMPLE."""
    r = ceiling(cat, SEED_004_EXAMPLE)
    at_default = would_fit(cat, SEED_004_EXAMPLE.at(context=4096))
    reserve = f"{SEED_004_EXAMPLE.reserve_fraction:.0%}"
    text = (
        f"The seed counts weights only: 32 × {r.bandwidth_ceiling_tokens_per_s:,.1f} = {r.bandwidth_ceiling_tokens_per_s_total:,.0f} "
        f"tokens/s, which needs a short context so the KV cache stays small. At {SEED_004_EXAMPLE.context:,} tokens of context "
        f"and a {reserve} memory reserve it fits, and with the KV reads and the all-reduces the ceiling is "
        f"{r.tokens_per_s_total or 0:,.0f} tokens/s: `{SEED_004_COMMAND}`."
    )
    if at_default is not None:
        text += f" At the default 4,096 tokens: {at_default.sentence()}"
    return text


def moves_sentence(table: pl.DataFrame) -> str:
    """One clause per move from the moves table shown (moves_table): the lever and its × tokens/s."""
    rows = {r["lever"]: r for r in table.iter_rows(named=True)}
    base = rows["current scenario"]
    per_user, total = "× per user", "× total"
    parts = []
    for move, lever, what in (
        ("lift the diagonal", "more bandwidth", None),
        ("slide right", "int4 weights", "int4 weights"),
        ("slide right", "larger batch", None),
        ("raise the ceiling", "more FLOP/s", None),
    ):
        row = rows.get(lever)
        if row is None:
            continue
        if row[per_user] is None:
            parts.append(f"{move}, {lever}: {row['change']}")
            continue
        right = str(row["change"]).split("→ ", 1)[-1]  # "A → B (why)": B and why
        label = what or (f"batch {right.split(' (')[0]}" if lever == "larger batch" else right)
        figure = total if lever == "larger batch" else per_user
        unit = "tokens/s in total" if lever == "larger batch" else "tokens/s per user"
        parts.append(f"{move} with {label}: {row[figure]:.2f}× the {unit}")
    bound = base["bound"] or "memory"
    return (
        "; ".join(parts)
        + f". Decode here is {bound}-bound, so "
        + (
            "more FLOP/s helps only as much as the bandwidth that comes with it."
            if bound == "memory"
            else "the ceiling is what you are touching: more FLOP/s helps."
        )
    )


def moves_table(cat: Catalogue, scenario: Scenario, result: Ceiling | None = None) -> pl.DataFrame:
    """The seed's three moves on the scenario: the ceiling calculator's what-if table itself (core.plan.planning.what_ifs)."""
    return what_if_display(what_ifs(cat, scenario, result))


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
    name, gname = escape_markdown(model.name), escape_markdown(gpu.name)  # the text is markdown: a name is shown, never rendered
    pm = prefill_matmuls(cat, scenario)
    climb = matmul_climb(cat, scenario, ridge, mm1["ridge_batch"] if ridge else None)
    # where the decode matmuls truly reach the ridge (for a mixture of experts, not the dense rule's batch)
    facts = batching_facts(cat, scenario, batching_table(cat, scenario), climb.reached_at if model.num_experts > 1 else climb.rule_batch)
    moves = moves_table(cat, scenario, r)
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
            f"{pts['decode step']['share_of_peak']:.1%} of the compute roof.\n\n{prefill_sentence(pm)} "
            f"The whole prefill step, attention and norms included, sits at {pre['intensity']:,.0f} FLOP/byte against a ridge of "
            f"{ridge:,.0f}: {pre['bound']}-bound.",
            "points",
            [
                (
                    "Why is prefill far right of decode?",
                    "Every weight read is used for every prompt token at once, so the FLOPs per byte grow with the prompt length.",
                ),
                (
                    "Why is the prefill matmul's intensity below the prompt length?",
                    f"Each matmul also reads its input activations and writes its output ({si(pm.act_bytes, 'B')} for this prompt), "
                    f"so {si(pm.flops, 'FLOP')} ÷ ({si(pm.weight_bytes, 'B')} + {si(pm.act_bytes, 'B')}) = {pm.intensity:,.0f}; "
                    f"the seed divides by the weights alone: {pm.weights_only:,.0f}.",
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
            f"(intensity {mm1['intensity']:.1f} at batch 1, {big['decode matmul']['intensity']:,.1f} at batch 512) and, "
            + climb_sentence(climb, model, storage_format(scenario.weights).bytes, ridge, r.max_batch)
            + f"\n\n{batching_sentence(facts, scenario.context, r.max_batch)}",
            "batching",
            [
                (
                    "When does the step time barely move as the batch grows?",
                    "While the weights are most of the bytes a step reads: left of the ridge and below the batch where the KV "
                    + (
                        f"reads match the weight reads (here about {facts.lunch_ends:,} at {scenario.context:,} tokens of context)."
                        if facts.lunch_ends is not None
                        else "reads match the weight reads (here there is no KV cache to read)."
                    ),
                ),
                (
                    "What stops the free lunch in practice?",
                    "The KV cache, twice: its reads grow with batch × context, and its memory caps the batch"
                    + (f" (at most {r.max_batch:,} here)" if r.max_batch is not None else "")
                    + "; then the ridge, where each sequence adds compute time.",
                ),
                ("Seed 004 gets ~1,530 tokens/s for a 70B on 2 × H100 SXM at batch 32. What does that assume?", seed_example_answer(cat)),
            ],
        ),
        Step(
            "6. Attention does not batch",
            attention_sentence(model, storage_format(scenario.kv).bytes, attn1["intensity"], big["decode attention"]["intensity"]),
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
            "Seed 004's three moves: "
            + "; ".join(f"**{m}** ({what})" for m, what in MOVES.items())
            + ". The table applies them to your scenario one lever at a time: it is the ceiling calculator's what-if table."
            + "\n\nHere: "
            + moves_sentence(moves),
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
