"""Published measurements against the ceilings of their own scenarios.

Each reference row (core.catalogue.reference) is one printed number. To set
it against the model it becomes a measurement (core.evidence.measurements'
columns) whose `tokens_per_s` carries the same information:

| metric | phase | tokens_per_s |
| --- | --- | --- |
| output_tokens_per_s | decode (scope decode) or mixed (end-to-end) | the value (whole system) |
| output_tokens_per_s_per_user | decode or mixed, as its scope | value x batch |
| tpot, itl | decode | batch / value |
| ttft | prefill | prompt / value |
| prefill_tokens_per_s | prefill | the value |

so `ratio` = measured / ceiling is, for every metric, the share of the
ceiling reached (for a time: ceiling time / measured time). A max-load
figure that prints no batch is set against the ceiling at the largest batch
that fits. `ceiling` and `measured` are given in the metric's own SI unit
(tokens/s of the system, tokens/s per user, seconds). A row above its
ceiling is a finding: `cause` names the likely reason (max-load throughput
counting prompt tokens, speculative decoding, a sparse figure, a power mode,
or the generic checks of core.evidence.compare).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from core.catalogue.catalogue import Catalogue
from core.catalogue.once import Once
from core.catalogue.reference import TIME_METRICS, source_key
from core.evidence.compare import ABOVE_CEILING, compare, decode_context
from core.model import predicted as pm
from core.model.ceilings import evaluate

#: columns of a reference row kept beside the comparison
META = (
    "id",
    "source_url",
    "publisher",
    "campaign",
    "framework",
    "framework_version",
    "tp",
    "ep",
    "batch_kind",
    "requests",
    "depth",
    "kv_window",
    "ttft_limit_s",
    "tpot_limit_s",
    "scope",
    "metric",
    "statistic",
    "value",
    "unit",
    "value_si",
    "model_bytes",
    "source_date",
    "read_on",
    "note",
    "unscored",
)


def as_measurements(cat: Catalogue, ref: pl.DataFrame) -> pl.DataFrame:
    """Reference rows as measurement rows (see the module's table), with the reference columns kept beside."""
    if not ref.height:
        return ref
    metric, scope = pl.col("metric"), pl.col("scope")
    phase = (
        pl.when((scope == "prefill") | (metric == "ttft"))
        .then(pl.lit("prefill"))
        .when(metric.is_in(["tpot", "itl"]) | (scope == "decode"))
        .then(pl.lit("decode"))
        .otherwise(pl.lit("mixed"))
    )
    rows = ref.with_columns(phase.alias("phase"), pl.col("batch").alias("batch_printed"))
    rows = rows.with_columns(pl.coalesce("batch", _max_batch(cat, rows)).alias("batch"))
    b = pl.col("batch").cast(pl.Float64)
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    v = pl.col("value_si")
    tps = (
        pl.when(metric == "output_tokens_per_s_per_user")
        .then(v * b)
        .when(metric.is_in(["tpot", "itl"]))
        .then(b / v)
        .when(metric == "ttft")
        .then(prompt / v)
        .otherwise(v)
    )
    return rows.with_columns(
        tps.alias("tokens_per_s"),
        pl.when(metric == "ttft").then(v).otherwise(None).alias("ttft_s"),
        pl.when(metric.is_in(["tpot", "itl"])).then(v).otherwise(None).alias("tpot_s"),
        _compute(),
    )


def _compute() -> pl.Expr:
    """The compute format asked for (None: the weights' default)."""
    c = pl.col("compute").str.strip_chars().str.to_lowercase()
    return pl.when(c.is_null() | (c == "")).then(None).otherwise(c).alias("compute")


def _max_batch(cat: Catalogue, rows: pl.DataFrame) -> pl.Series:
    """For rows with no printed batch, the largest batch that fits at the row's context (1 when none does), at most the
    requests the run sent where they are printed, and, where the run was held to latency limits (`ttft_limit_s`,
    `tpot_limit_s`: MLPerf Server and Interactive), the largest at which the ceiling's time per output token and time to
    first token still meet them: no run that met them held more."""
    todo = rows.with_row_index("__i").filter(pl.col("batch").is_null())
    out = pl.Series("batch", [None] * rows.height, dtype=pl.Int64)
    if not todo.height:
        return out
    scen = _scenarios(todo, pl.lit(1, dtype=pl.Int64))
    fit = evaluate(cat, scen, columns=["max_batch"])["max_batch"].fill_null(1).clip(lower_bound=1)
    if "requests" in todo.columns:
        fit = pl.select(pl.min_horizontal(fit, todo["requests"])).to_series()
    if "tpot_limit_s" in todo.columns:
        fit = _within_limits(cat, todo, fit)
    return out.scatter(todo["__i"], fit)


def _scenarios(rows: pl.DataFrame, batch: pl.Expr) -> pl.DataFrame:
    """The Scenario columns of max-load reference rows at `batch`: decode context as core.evidence.compare reads it."""
    return rows.select(
        "gpu",
        "model",
        "num_gpus",
        "weights",
        _compute(),
        "kv",
        batch.alias("batch"),
        decode_context(rows).alias("context"),
        pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).alias("prompt"),
        pl.col("depth").fill_null(0).alias("depth"),
    )


def _within_limits(cat: Catalogue, rows: pl.DataFrame, fit: pl.Series) -> pl.Series:
    """`fit` lowered, for rows with latency limits, to the largest batch whose ceiling meets them (every batch from 1 to
    `fit` evaluated at once; at least 1)."""
    limited = (
        rows.with_columns(fit.alias("__fit"))
        .with_row_index("__j")
        .filter(pl.col("tpot_limit_s").is_not_null() | pl.col("ttft_limit_s").is_not_null())
    )
    if not limited.height:
        return fit
    grid = limited.with_columns(pl.int_ranges(1, pl.col("__fit") + 1).alias("__b")).explode("__b")
    figures = evaluate(cat, _scenarios(grid, pl.col("__b").cast(pl.Int64)), columns=["time_per_output_token_s", "ttft_s"])
    meets = (figures["time_per_output_token_s"] <= grid["tpot_limit_s"].fill_null(float("inf"))) & (
        figures["ttft_s"] <= grid["ttft_limit_s"].fill_null(float("inf"))
    )
    best = (
        grid.with_columns(meets.alias("__ok")).group_by("__j").agg(pl.col("__b").filter(pl.col("__ok")).max().fill_null(1).alias("__best"))
    )
    lowered = limited.join(best, on="__j")
    return fit.scatter(lowered["__j"], lowered["__best"])


_TABLES: Once[pl.DataFrame] = Once()


def reference_compare(cat: Catalogue, ref: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every reference row against its ceiling: the comparison's columns, `ceiling` and `measured` in the metric's unit, `cause`.

    Cached per catalogue when `ref` is the catalogue's own reference set (computed once however many ask at once).
    """
    if ref is None:
        return _TABLES.get((cat.key, id(cat.reference)), lambda: _compared(cat, cat.reference))
    return _compared(cat, ref)


def _compared(cat: Catalogue, rows: pl.DataFrame) -> pl.DataFrame:
    if not rows.height:
        return _empty()
    meas = as_measurements(cat, rows)
    cmp = _as_pipelines(cat, meas, compare(cat, meas))
    return _with_ceiling(cat, cmp)


def _as_pipelines(cat: Catalogue, meas: pl.DataFrame, cmp: pl.DataFrame) -> pl.DataFrame:
    """llama.cpp on several GPUs with no tensor-parallel degree printed runs its default layer split, a pipeline
    (core.evidence.predictor.layer_split; core.plan.layouts costs pipelines): its stages run one after another for a
    sequence, so a decode step takes the whole model's time at one GPU's rates, and a prompt's micro-batches (512
    tokens, n_ubatch, at most four in flight: core.model.predicted.LAYER_SPLIT_MICROBATCHES) overlap across the n
    stages, (m + n - 1) / (m n) of that time. The ceiling is rescaled by those times (from the same scenarios on one
    GPU); memory, formats and flags stay those of the n GPUs. Stage-to-stage transfers (one token's activations over
    PCIe) are left out."""
    tp = pl.col("tp").is_null() if "tp" in meas.columns else pl.lit(True)
    split = ((pl.col("framework") == "llama.cpp") & tp & (pl.col("num_gpus") > 1)).fill_null(False)
    at = meas.with_row_index("_row").filter(split)
    if not at.height:
        return cmp
    one = compare(cat, at.drop("_row").with_columns(pl.lit(1, dtype=meas.schema["num_gpus"]).alias("num_gpus")), flag_text=False)
    n = at["num_gpus"].cast(pl.Float64)
    prompt = at["input_tokens"].cast(pl.Float64).clip(lower_bound=1.0)
    micro = (prompt / pm.PREFILL_CHUNK["llama.cpp"]).ceil().clip(upper_bound=pm.LAYER_SPLIT_MICROBATCHES)
    prefill = at["phase"] == "prefill"
    rows = at["_row"]
    old_decode, old_prefill = cmp["step_time_s"].gather(rows), cmp["predicted_ttft_s"].gather(rows)
    pipe_prefill = one["predicted_ttft_s"] * (micro + n - 1.0) / (micro * n)
    scale = (old_prefill / pipe_prefill).zip_with(prefill, old_decode / one["step_time_s"])
    predicted = cmp["predicted_tokens_per_s"].scatter(rows, cmp["predicted_tokens_per_s"].gather(rows) * scale)
    return (
        cmp.with_columns(predicted.alias("predicted_tokens_per_s"))
        .with_columns((pl.col("tokens_per_s") / pl.col("predicted_tokens_per_s")).alias("ratio"))
        .with_columns(pl.when(pl.col("ratio") > ABOVE_CEILING).then(pl.lit("above ceiling")).otherwise(pl.lit("ok")).alias("status"))
    )


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema={"id": pl.String, "metric": pl.String, "ratio": pl.Float64, "ceiling": pl.Float64, "measured": pl.Float64})


def in_metric_unit(tokens_per_s: pl.Expr) -> pl.Expr:
    """A rate in the measurement frame's tokens_per_s (the module's table) as a row's metric: tokens/s of the system,
    tokens/s per user, or seconds (TPOT / ITL: batch / rate; TTFT: prompt / rate)."""
    metric = pl.col("metric")
    b = pl.col("batch").cast(pl.Float64)
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    return (
        pl.when(metric == "output_tokens_per_s_per_user")
        .then(tokens_per_s / b)
        .when(metric.is_in(["tpot", "itl"]))
        .then(b / tokens_per_s)
        .when(metric == "ttft")
        .then(prompt / tokens_per_s)
        .otherwise(tokens_per_s)
    )


def _with_ceiling(cat: Catalogue, cmp: pl.DataFrame) -> pl.DataFrame:
    ceiling = in_metric_unit(pl.col("predicted_tokens_per_s"))
    vendors = dict(zip(cat.gpus["id"], cat.gpus["vendor"], strict=True))
    names = dict(zip(cat.gpus["id"], cat.gpus["name"], strict=True))
    model_names = dict(zip(cat.models["id"], cat.models["name"], strict=True))
    experts = dict(zip(cat.models["id"], cat.models["experts"], strict=True))
    families = dict(zip(cat.hardware.ids, cat.hardware.families, strict=True))
    sources = {u: source_key(u) for u in cmp["source_url"].unique().to_list()}
    out = cmp.with_columns(
        pl.col("model").replace_strict(experts, default=None, return_dtype=pl.Int64).alias("experts"),
        ceiling.alias("ceiling"),
        pl.col("value_si").alias("measured"),
        pl.col("gpu").replace_strict(names, default=pl.col("gpu")).alias("gpu_name"),
        pl.col("model").replace_strict(model_names, default=pl.col("model")).alias("model_name"),
        pl.col("gpu").replace_strict(families, default=None).alias("family"),
        pl.col("gpu").replace_strict(vendors, default=None).alias("vendor"),
        pl.col("source_url").replace_strict(sources, default=None).alias("source"),
    )
    return out.with_columns(_cause().alias("cause"))


_SPECULATIVE = re.compile(r"specul|\bMTP\b|eagle|medusa|draft model|lookahead", re.IGNORECASE)
_SPARSE = re.compile(r"sparse|sparsity|2:4", re.IGNORECASE)
_POWER = re.compile(r"power mode|power limit|MAXN|overclock|boost clock", re.IGNORECASE)
_SAME_PROMPT = re.compile(r"batched-bench", re.IGNORECASE)
_NOT_TP = re.compile(r"DP\+EP|data[- ]parallel|DP attention|attention DP|\bDEP\d*|disaggregat", re.IGNORECASE)

#: where a row's note records, once understood, why it lies above its ceiling
NOTED = "Above its ceiling:"
#: the likely causes of a row above its ceiling, in the order they are tried
CAUSES = {
    "speculative": "speculative decoding: several tokens per verify step (the note says so)",
    "sparse": "a sparse (2:4) figure: the ceiling uses the dense peak",
    "power": "a different power mode or clock than the datasheet's",
    "same_prompt": (
        "identical sequences: llama-batched-bench decodes copies of one prompt, so every sequence routes to the same experts and "
        "fewer expert weights are read than the ceiling's uniform routing assumes"
    ),
    "no_batch": (
        "no batch printed: the ceiling is taken at the largest batch that fits, and a time or per-user figure at the run's smaller "
        "running batch beats it"
    ),
    "not_tp": (
        "data or expert parallelism (DP attention, EP, disaggregated prefill): the ceiling assumes tensor parallelism over the GPUs, "
        "with two all-reduces per layer that such a system does not make"
    ),
    "replicas": (
        "many GPUs and no tensor-parallel degree printed: the ceiling assumes one tensor-parallel group over all of them (an all-reduce "
        "per layer across every GPU); such a system runs data-parallel replicas of a smaller group"
    ),
    "overlap": (
        "in-flight batching overlaps prefill with decode: the ceiling adds each prompt's prefill time to the decode steps, while the run "
        "computes prompts inside memory-bound decode steps; it stays under the decode-only ceiling"
    ),
    "max_load_memory": (
        "no batch printed, a max-load throughput: the ceiling runs the largest batch that fits with the row's KV format and a "
        "10% memory reserve, and the run held more sequences (an fp8 KV cache where none is printed, more of the memory)"
    ),
    "kv_format": "does not fit at the printed batch with a 16-bit KV cache: the run probably kept its KV cache in fp8",
    "dense_peak": "above the dense compute peak: a sparse figure or the wrong accelerator or count",
    "unexplained": "unexplained: check the precision, the accelerator count and what the figure counts",
}


def _cause() -> pl.Expr:
    """The likely cause of a row above its ceiling (None for a row under it), tried in the order of CAUSES."""
    above = pl.col("ratio") > ABOVE_CEILING
    note = pl.col("note").fill_null("").str.split(NOTED).list.first()  # what the source says, not the cause noted after it
    decode_only = pl.col("batch").cast(pl.Float64) / pl.col("step_time_s")
    tried = {
        "speculative": note.str.contains(_SPECULATIVE.pattern),
        "sparse": note.str.contains(_SPARSE.pattern),
        "power": note.str.contains(_POWER.pattern),
        "same_prompt": note.str.contains(_SAME_PROMPT.pattern) & (pl.col("experts").fill_null(0) > 1),
        "no_batch": pl.col("batch_printed").is_null() & pl.col("metric").is_in(["tpot", "itl", "output_tokens_per_s_per_user"]),
        "not_tp": pl.col("ep").is_not_null() | note.str.contains(_NOT_TP.pattern),
        "replicas": pl.col("tp").is_null() & (pl.col("num_gpus") > 8),
        "overlap": (pl.col("phase") == "mixed")
        & (pl.col("metric") == "output_tokens_per_s")
        & (pl.col("value_si") <= decode_only * ABOVE_CEILING),
        "max_load_memory": pl.col("batch_printed").is_null()
        & (pl.col("batch_kind") == "max load")
        & (pl.col("metric") == "output_tokens_per_s"),
        "kv_format": ~pl.col("fits"),
        "dense_peak": pl.col("mfu") > 1.0,
    }
    chain: Any = pl.when(~above).then(None)
    for key, test in tried.items():
        chain = chain.when(test).then(pl.lit(CAUSES[key]))
    out: pl.Expr = chain.otherwise(pl.lit(CAUSES["unexplained"]))
    return out


@dataclass(frozen=True)
class Evidence:
    """The published measurements that bear on one scenario: how they sit under their ceilings, with links."""

    sentence: str  # markdown, one line
    rows: pl.DataFrame  # the matching rows (id, metric, value, unit, ratio, ceiling, source_url, ...), best match first
    exact: bool  # same model on the same accelerator (else the nearest shown)


def evidence_for(cat: Catalogue, gpu: str, model: str) -> Evidence:
    """The published measurements of `model` on `gpu`, or the nearest ones (same accelerator, other model size; else same model).

    "published: 3 measurements of Llama 3.1 8B on H100 SXM reached 58-81% of their ceilings".
    """
    table = reference_compare(cat)
    gname = _name(cat.gpus, gpu)
    mname = _name(cat.models, model)
    if not table.height:
        return Evidence("No published measurements are in this catalogue.", table, False)
    hit = table.filter((pl.col("gpu") == gpu) & (pl.col("model") == model))
    if hit.height:
        return Evidence("published: " + _sentence(hit, f"{mname} on {gname}"), _shown(hit), True)
    family_of = dict(zip(cat.models["id"], cat.models["family"], strict=True))
    params = dict(zip(cat.models["id"], cat.models["total_params"], strict=True)) if "total_params" in cat.models.columns else {}
    same_gpu = table.filter(pl.col("gpu") == gpu)
    if same_gpu.height:
        size = params.get(model) or 0.0
        fam = family_of.get(model)
        ranked = same_gpu.with_columns(
            (pl.col("model").replace_strict(family_of, default=None) != fam).alias("__other_family"),
            (pl.col("model").replace_strict(params, default=0.0, return_dtype=pl.Float64) / max(size, 1.0)).log().abs().alias("__dist"),
        ).sort("__other_family", "__dist")
        nearest = ranked["model"][0]
        near = same_gpu.filter(pl.col("model") == nearest)
        text = f"No published measurement of {mname} on {gname}. Nearest published: " + _sentence(
            near, f"{_name(cat.models, nearest)} on {gname}"
        )
        return Evidence(text, _shown(near), False)
    same_model = table.filter(pl.col("model") == model)
    if same_model.height:
        text = f"No published measurement of {mname} on {gname}. Nearest published: " + _sentence(
            same_model, f"{mname} on other accelerators"
        )
        return Evidence(text, _shown(same_model), False)
    return Evidence(f"No published measurement of {mname} or on {gname} in the reference set.", table.head(0), False)


def _name(frame: pl.DataFrame, key: str) -> str:
    hit = frame.filter(pl.col("id") == key)
    return str(hit["name"][0]) if hit.height else key


def _pct(x: float) -> str:
    return f"{x:.1%}" if x < 0.095 else f"{x:.0%}"


def _span(rows: pl.DataFrame) -> str:
    lo, hi = float(rows["ratio"].min()), float(rows["ratio"].max())  # type: ignore[arg-type]
    return _pct(lo) if _pct(lo) == _pct(hi) else f"{_pct(lo)}-{_pct(hi)}"


def _sentence(rows: pl.DataFrame, what: str) -> str:
    """published: N measurements of <what> (frameworks) reached a-b% of their ceilings; TTFT apart; findings counted."""
    n = rows.height
    frameworks = ", ".join(sorted(set(rows["framework"].to_list())))
    under = rows.filter(pl.col("ratio") <= ABOVE_CEILING)
    rates = under.filter(pl.col("metric") != "ttft")
    firsts = under.filter(pl.col("metric") == "ttft")
    text = f"{n} measurement{'s' if n != 1 else ''} of {what} ({frameworks})"
    if rates.height:
        text += f"; {'it' if n == 1 else rates.height} reached {_span(rates)} of {'its' if rates.height == 1 else 'their'} ceiling"
        text += "s" if rates.height > 1 else ""
    if firsts.height:
        text += (
            f"; {firsts.height} time{'s' if firsts.height > 1 else ''} to first token reached {_span(firsts)} "
            "(under load they include queueing)"
        )
    above = n - under.height
    if above:
        text += f"; {above} {'is' if above == 1 else 'are'} above {'its' if above == 1 else 'their'} ceiling{'s' if above > 1 else ''} (a finding: see the cause)"
    return text + "."


def _shown(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.sort("ratio", descending=True)


def unit_of(metric: str) -> str:
    """The SI unit `ceiling` and `measured` are given in for a metric."""
    if metric in TIME_METRICS:
        return "s"
    return "tokens/s per user" if metric == "output_tokens_per_s_per_user" else "tokens/s"
