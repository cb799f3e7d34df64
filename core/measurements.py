"""Measurements: the record, its rules, bulk validation, and measured against predicted.

One measurement is a throughput observed on a scenario (accelerator x count,
model, precisions, batch, prompt and output lengths):

- phase `decode`: tokens_per_s = generated tokens/s of the whole batch while
  decoding (no prefill in the window); context = input + output / 2.
- phase `prefill`: tokens_per_s = prompt tokens/s.
- phase `mixed`: a serving run's output tokens/s, prefill included.

`RULES` holds each numeric column's bounds once; the pydantic `Measurement`
and the vectorised `validate` (Polars expressions, no Python loop per row) are
both built from it, so a row the record refuses is a row the bulk check
refuses, with the same message.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import polars as pl
from pydantic import ConfigDict, Field, model_validator

from core.catalogue import Catalogue, UnknownIdError
from core.formats import CANONICAL, Extract
from core.matching import match_accelerator, match_model
from core.precisions import UnknownPrecisionError, compute_precision, storage_format
from core.specs import PrecisionFields

PHASES = ("decode", "prefill", "mixed")


@dataclass(frozen=True)
class Rule:
    """Bounds of one numeric column: lo < x (or lo <= x when lo_inclusive), x <= hi; whole numbers when integer."""

    unit: str
    lo: float
    hi: float
    lo_inclusive: bool
    integer: bool
    hint: str = ""  # said when the value is above hi (a unit slip?)


RULES: dict[str, Rule] = {
    "num_gpus": Rule("count", 1, 1024, True, True),
    "batch": Rule("sequences", 1, 1_000_000, True, True),
    "input_tokens": Rule("tokens", 0, 10_000_000, True, True),
    "output_tokens": Rule("tokens", 0, 10_000_000, True, True),
    "tokens_per_s": Rule("tokens/s", 0, 1e8, False, False, "above 100 million tokens/s"),
    "ttft_s": Rule("s", 0, 600, False, False, "a first token after more than 10 minutes: a value in ms read as s?"),
    "tpot_s": Rule("s", 0, 10, False, False, "more than 10 s per output token: a value in ms read as s?"),
}
#: tokens_per_s against batch / tpot_s (decode): a factor past this is a unit slip, not a measurement.
CONSISTENCY_FACTOR = 100.0


def _field(name: str) -> Any:
    r = RULES[name]
    return Field(ge=r.lo, le=r.hi) if r.lo_inclusive else Field(gt=r.lo, le=r.hi)


class Measurement(PrecisionFields):
    """One validated measurement (SI units); the bulk check applies the same RULES."""

    model_config = ConfigDict(extra="forbid")

    gpu: str
    num_gpus: Annotated[int, _field("num_gpus")] = 1
    model: str
    weights: str = "bf16"
    kv: str = "bf16"
    compute: str | None = None
    phase: Literal["decode", "prefill", "mixed"] = "decode"
    batch: Annotated[int, _field("batch")]
    input_tokens: Annotated[int, _field("input_tokens")]
    output_tokens: Annotated[int, _field("output_tokens")]
    tokens_per_s: Annotated[float, _field("tokens_per_s")]
    ttft_s: Annotated[float, _field("ttft_s")] | None = None
    tpot_s: Annotated[float, _field("tpot_s")] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Measurement:
        for problem in cross_problems(self.model_dump()):
            raise ValueError(problem)
        return self


def cross_problems(row: dict[str, Any]) -> list[str]:
    """The rules between columns, for one row (the bulk check has the same ones as expressions)."""
    out = []
    if row["phase"] == "prefill" and row["input_tokens"] < 1:
        out.append("input_tokens: a prefill measurement needs a prompt of at least 1 token")
    if row["phase"] != "prefill" and row["output_tokens"] < 1:
        out.append("output_tokens: a decode or serving measurement needs at least 1 output token")
    if row["phase"] == "decode" and row.get("tpot_s"):
        implied = row["batch"] / row["tpot_s"]
        if not 1 / CONSISTENCY_FACTOR <= row["tokens_per_s"] / implied <= CONSISTENCY_FACTOR:
            out.append(
                f"tokens_per_s is {row['tokens_per_s'] / implied:.3g} x batch / tpot_s: one of them is in the wrong unit (ms read as s?)"
            )
    return out


class MeasurementError(ValueError):
    """A value that breaks a rule: names the row (record), the file's column and the problem."""

    def __init__(self, problem: str, *, row: int | None = None, column: str | None = None, more: int = 0) -> None:
        super().__init__(problem)
        self.problem, self.row, self.column, self.more = problem, row, column, more


# -- bulk validation ------------------------------------------------------------------


def validate(
    extract: Extract, cat: Catalogue, context: dict[str, Any], progress: Callable[[float, str], None] | None = None
) -> pl.DataFrame:
    """The typed measurement frame of an Extract, or MeasurementError naming the first bad cell.

    Context values (non-None) replace the file's column for every row; the
    file's own names for the accelerator and the model are kept in
    source_gpu / source_model.
    """
    frame = extract.frame
    sources = dict(extract.sources)
    overrides = {k: v for k, v in context.items() if v is not None and k in CANONICAL}
    frame = frame.with_columns(
        pl.col("gpu").alias("source_gpu"),
        pl.col("model").alias("source_model"),
        *[pl.lit(str(v)).alias(k) for k, v in overrides.items()],
    )
    for k in overrides:
        sources[k] = f"{k} (given as context)"
        extract.scale.pop(k, None)
    label = extract.row_label
    defaults = {"num_gpus": "1", "weights": "bf16", "kv": "bf16", "phase": "decode"}
    frame = frame.with_columns([pl.col(c).fill_null(v) for c, v in defaults.items()])
    strip = {c: pl.col(c).str.strip_chars() for c in RULES}
    work = frame.with_columns(*[strip[c].cast(pl.Float64, strict=False).mul(extract.scale.get(c, 1.0)).alias(f"__{c}") for c in RULES])
    checks: dict[str, pl.Expr] = {}
    for col, rule in RULES.items():
        raw, value = strip[col], pl.col(f"__{col}")
        present = raw.is_not_null() & (raw != "")
        hint = f"; give it as context (--{col.replace('_', '-')})" if col in ("batch", "input_tokens", "output_tokens") else ""
        low = (value < rule.lo) if rule.lo_inclusive else (value <= rule.lo)
        sign = ">=" if rule.lo_inclusive else ">"
        above = f"{{}} is above {rule.hi:g} {rule.unit}" + (f": {rule.hint}" if rule.hint else "")
        chain: Any = pl.when(~present).then(pl.lit(None if col in ("ttft_s", "tpot_s") else f"missing value ({rule.unit}){hint}"))
        chain = chain.when(value.is_null()).then(pl.format("not a number: '{}'", raw.str.slice(0, 40)))
        chain = chain.when(~value.is_finite()).then(pl.format("not a finite number: '{}'", raw.str.slice(0, 40)))
        chain = chain.when(low).then(pl.format(f"{{}} is not {sign} {rule.lo:g} ({rule.unit})", raw))
        chain = chain.when(value > rule.hi).then(pl.format(above, raw))
        if rule.integer:
            chain = chain.when(value != value.floor()).then(pl.format(f"{{}} is not a whole number ({rule.unit})", raw))
        checks[col] = chain.otherwise(pl.lit(None, dtype=pl.String))
    checks["phase"] = pl.when(~pl.col("phase").is_in(list(PHASES))).then(
        pl.format(f"'{{}}' is not one of {', '.join(PHASES)}", pl.col("phase").str.slice(0, 40))
    )
    _raise_first(work.select("row", *[e.alias(c) for c, e in checks.items()]), sources)
    if progress:
        progress(0.55, "checking names against the catalogue")
    typed = work.with_columns(*[pl.col(f"__{c}").cast(pl.Int64 if RULES[c].integer else pl.Float64).alias(c) for c in RULES]).drop(
        [f"__{c}" for c in RULES]
    )
    ph, factor = pl.col("phase"), pl.col("tokens_per_s") / (pl.col("batch") / pl.col("tpot_s"))
    cross = {
        "input_tokens": pl.when((ph == "prefill") & (pl.col("input_tokens") < 1)).then(
            pl.lit("a prefill measurement needs a prompt of at least 1 token")
        ),
        "output_tokens": pl.when((ph != "prefill") & (pl.col("output_tokens") < 1)).then(
            pl.lit("a decode or serving measurement needs at least 1 output token")
        ),
        "tokens_per_s": pl.when(
            (ph == "decode") & pl.col("tpot_s").is_not_null() & ((factor > CONSISTENCY_FACTOR) | (factor < 1 / CONSISTENCY_FACTOR))
        ).then(
            pl.format("tokens_per_s is {} x batch / tpot_s: one of them is in the wrong unit (ms read as s?)", factor.round_sig_figs(3))
        ),
    }
    _raise_first(typed.select("row", *[e.alias(c) for c, e in cross.items()]), sources)
    resolved = _resolve_names(typed, cat, sources, label)
    return resolved.select(
        "row",
        *CANONICAL,
        "source_gpu",
        "source_model",
    )


def _raise_first(problems: pl.DataFrame, sources: dict[str, str]) -> None:
    """Raise MeasurementError for the first non-null problem (by row) of a frame of row + per-column messages."""
    flagged = problems.filter(pl.any_horizontal(pl.all().exclude("row").is_not_null()))
    if not flagged.height:
        return
    long = flagged.unpivot(index="row", variable_name="column", value_name="problem").drop_nulls("problem")
    if not long.height:
        return
    first = long.sort("row").row(0, named=True)
    raise MeasurementError(
        first["problem"], row=first["row"], column=sources.get(first["column"], first["column"]), more=long["row"].n_unique() - 1
    )


def _resolve_names(frame: pl.DataFrame, cat: Catalogue, sources: dict[str, str], label: str) -> pl.DataFrame:
    """Map every distinct accelerator, model and precision name to its catalogue id (once per name)."""
    out = frame
    resolvers: dict[str, Callable[[str], str]] = {
        "gpu": lambda v: match_accelerator(v, cat),
        "model": lambda v: match_model(v, cat),
        "weights": lambda v: storage_format(v, argument="weights").name,
        "kv": lambda v: storage_format(v, argument="kv").name,
        "compute": lambda v: compute_precision(v, argument="compute"),
    }
    for col, resolve in resolvers.items():
        names = out[col].drop_nulls().unique().to_list()
        if col in ("gpu", "model") and out[col].null_count():
            first = out.filter(pl.col(col).is_null())["row"][0]
            what = "accelerator" if col == "gpu" else "model"
            raise MeasurementError(f"no {what} in the file: give one as context (--{col})", row=first, column=sources.get(col, col))
        mapping: dict[str, str] = {}
        for name in names:
            try:
                mapping[name] = resolve(name)
            except (UnknownIdError, UnknownPrecisionError) as exc:
                first = out.filter(pl.col(col) == name)["row"][0]
                n_rows = out.filter(pl.col(col) == name).height
                raise MeasurementError(str(exc).strip('"'), row=first, column=sources.get(col, col), more=n_rows - 1) from None
        out = out.with_columns(pl.col(col).replace_strict(mapping, default=None, return_dtype=pl.String))
    return out


def error_text(file_name: str, exc: MeasurementError | Any, row_label: str = "row") -> str:
    """One line naming the file, the row, the column and the problem."""
    where = []
    if getattr(exc, "row", None) is not None:
        where.append(f"{row_label} {exc.row}")
    if getattr(exc, "column", None):
        where.append(f"column {exc.column}")
    more = getattr(exc, "more", 0)
    tail = f" ({more} more {row_label}{'s' if more > 1 else ''} with problems)" if more else ""
    return f"{file_name}: {', '.join(where) + ': ' if where else ''}{getattr(exc, 'problem', str(exc))}{tail}"


# -- measured against predicted ------------------------------------------------------------

#: A measurement this far above its predicted ceiling is flagged (2% for rounding in the files).
ABOVE_CEILING = 1.02
WELL_TUNED_MBU = (0.70, 0.90)  # seed 000: a well-tuned memory-bound decode
SUSPICIOUS_DECODE_MFU = 0.40  # seed 000: 40% of peak FLOP/s on decode is suspicious
_PREDICT_COLUMNS = [
    "scenario_id",
    "step_time_s",
    "ttft_s",
    "flops",
    "bytes",
    "intensity",
    "prefill_flops",
    "prefill_bytes",
    "prefill_intensity",
    "prefill_step_time_s",
    "prefill_bound",
    "decode_memory_bound_time_s",
    "decode_compute_bound_time_s",
    "decode_comm_time_s",
    "peak_flops",
    "bandwidth_bytes_per_s",
    "compute_used",
    "fits",
]


def scenarios_of(rows: pl.DataFrame, calibration: pl.DataFrame | None = None) -> pl.DataFrame:
    """The Scenario columns of each measurement: decode context = input + output / 2, prefill prompt = input.

    With a calibration (core.measurements.calibrate) its efficiencies and
    per-step overhead apply per accelerator.
    """
    scen = rows.select(
        "gpu",
        "model",
        "num_gpus",
        "weights",
        "compute",
        "kv",
        "batch",
        pl.when(pl.col("phase") == "prefill")
        .then(pl.col("input_tokens"))
        .otherwise(pl.col("input_tokens") + pl.col("output_tokens") // 2)
        .alias("context"),
        pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).alias("prompt"),
    )
    if calibration is None or not calibration.height:
        return scen.with_columns(pl.lit(1.0).alias("eff_bandwidth"), pl.lit(1.0).alias("eff_compute"), pl.lit(0.0).alias("overhead_s"))
    cal = calibration.select("gpu", "eff_bandwidth", pl.col("eff_compute").fill_null(1.0), "overhead_s")
    return scen.join(cal, on="gpu", how="left", maintain_order="left").with_columns(
        pl.col("eff_bandwidth").fill_null(1.0), pl.col("eff_compute").fill_null(1.0), pl.col("overhead_s").fill_null(0.0)
    )


def predicted(cat: Catalogue, rows: pl.DataFrame, calibration: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per measurement: the predicted tokens/s for its phase and the step figures behind it.

    decode: batch / step time; prefill: prompt / time to first token; mixed (a
    serving run): batch x output / (batch x TTFT + output x step time), every
    prompt prefilled once and every output token one decode step.
    """
    from core.ceilings import evaluate

    res = (
        evaluate(cat, scenarios_of(rows, calibration), columns=_PREDICT_COLUMNS).drop("scenario_id").rename({"ttft_s": "predicted_ttft_s"})
    )
    b = pl.col("batch").cast(pl.Float64)
    out = pl.col("output_tokens").cast(pl.Float64)
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    phase = pl.col("phase")
    return pl.concat([rows, res], how="horizontal").with_columns(
        pl.when(phase == "decode")
        .then(b / pl.col("step_time_s"))
        .when(phase == "prefill")
        .then(prompt / pl.col("predicted_ttft_s"))
        .otherwise(b * out / (b * pl.col("predicted_ttft_s") + out * pl.col("step_time_s")))
        .alias("predicted_tokens_per_s")
    )


def compare(cat: Catalogue, rows: pl.DataFrame, calibration: pl.DataFrame | None = None) -> pl.DataFrame:
    """Measured against predicted, one row per measurement.

    Adds predicted_tokens_per_s (datasheet roofs), ratio = measured / predicted,
    MBU = achieved bytes/s / (num_gpus x peak bandwidth) and MFU = achieved
    FLOP/s / (num_gpus x dense peak), the operating point (intensity and the
    achieved and predicted FLOP/s per GPU), `status` ("above ceiling" or "ok")
    and `flags` (likely causes, the seed's hints). With a calibration,
    calibrated_tokens_per_s and calibrated_ratio too.
    """
    if not rows.height:
        return rows
    pred = predicted(cat, rows)
    n = pl.col("num_gpus").cast(pl.Float64)
    phase = pl.col("phase")
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    # achieved steps per second: decode (and serving) steps = tokens/s / batch, prefill prompts = tokens/s / prompt
    steps = pl.when(phase == "prefill").then(pl.col("tokens_per_s") / prompt).otherwise(pl.col("tokens_per_s") / pl.col("batch"))
    step_flops = pl.when(phase == "prefill").then(pl.col("prefill_flops")).otherwise(pl.col("flops"))
    step_bytes = pl.when(phase == "prefill").then(pl.col("prefill_bytes")).otherwise(pl.col("bytes"))
    step_time = pl.when(phase == "prefill").then(pl.col("predicted_ttft_s")).otherwise(pl.col("step_time_s"))
    out = pred.with_columns(
        (pl.col("tokens_per_s") / pl.col("predicted_tokens_per_s")).alias("ratio"),
        (step_bytes * steps / (n * pl.col("bandwidth_bytes_per_s"))).alias("mbu"),
        (step_flops * steps / (n * pl.col("peak_flops"))).alias("mfu"),
        pl.when(phase == "prefill").then(pl.col("prefill_intensity")).otherwise(pl.col("intensity")).alias("point_intensity"),
        (step_flops * steps / n).alias("achieved_flops_per_gpu"),
        (step_flops / step_time / n).alias("predicted_flops_per_gpu"),
    ).with_columns(pl.when(pl.col("ratio") > ABOVE_CEILING).then(pl.lit("above ceiling")).otherwise(pl.lit("ok")).alias("status"))
    out = out.with_columns(_flags().alias("flags"))
    if calibration is not None and calibration.height:
        cal = predicted(cat, rows, calibration)["predicted_tokens_per_s"]
        out = out.with_columns(cal.alias("calibrated_tokens_per_s")).with_columns(
            (pl.col("tokens_per_s") / pl.col("calibrated_tokens_per_s")).alias("calibrated_ratio")
        )
    return out


def _flags() -> pl.Expr:
    """Likely causes for rows above their ceiling, and the seed's hints on MBU and MFU."""
    above = pl.col("status") == "above ceiling"
    r, phase = pl.col("ratio"), pl.col("phase")
    half_bytes = pl.col("weights").is_in(["bf16", "fp16", "fp32"])
    return pl.concat_list(
        pl.when(above).then(
            pl.format(
                "above its ceiling ({}x the prediction): check the precision, a sparse peak, the accelerator and count, phases mixed in one figure",
                r.round_sig_figs(3),
            )
        ),
        pl.when(above & half_bytes & r.is_between(1.5, 4.5)).then(
            pl.lit("wrong precision? about 2-4x a 16-bit ceiling: the weights may be fp8/int8 or 4-bit")
        ),
        pl.when(above & (pl.col("mfu") > 1.0)).then(
            pl.lit("above the dense compute peak: a sparse (2:4) figure or the wrong accelerator?")
        ),
        pl.when(above & (phase == "mixed")).then(pl.lit("a serving figure mixes prefill and decode (and may count prompt tokens)")),
        pl.when(above & (r > 300)).then(pl.lit("about 1000x: a unit slip (ms read as s, or tokens/ms)?")),
        pl.when(above & (pl.col("num_gpus") == 1) & (r > 1.8)).then(pl.lit("wrong accelerator count? the run may have used more GPUs")),
        pl.when(~above & (phase == "decode") & pl.col("mbu").is_between(*WELL_TUNED_MBU)).then(
            pl.format("well-tuned decode: {}% MBU (70-90% is the mark)", (pl.col("mbu") * 100).round(0).cast(pl.Int64))
        ),
        pl.when(~above & (phase == "decode") & (pl.col("mfu") >= SUSPICIOUS_DECODE_MFU)).then(
            pl.format("{}% MFU on decode is suspicious: decode should be judged by MBU", (pl.col("mfu") * 100).round(0).cast(pl.Int64))
        ),
        pl.when(~pl.col("fits")).then(pl.lit("the model predicts this does not fit in memory: check the accelerator count and precisions")),
    ).list.drop_nulls()


def calibrate(cat: Catalogue, rows: pl.DataFrame) -> pl.DataFrame:
    """Per accelerator, fit time = overhead x steps + memory time / eff_bandwidth + compute time / eff_compute.

    Least squares on relative error over the measurements at or under their
    ceiling (rows above it would pull the roof up). Times are the datasheet
    model's memory-bound and compute-bound operation times; a compute
    efficiency is reported only when some point has compute-bound time.
    Returns gpu, points, eff_bandwidth, eff_compute, overhead_s, r2,
    rel_rmse (relative RMS error of the fitted times) and note.
    """
    import numpy as np

    cols = ["gpu", "points", "eff_bandwidth", "eff_compute", "overhead_s", "r2", "rel_rmse", "note"]
    if not rows.height:
        return pl.DataFrame(schema={c: pl.String if c in ("gpu", "note") else pl.Float64 for c in cols})
    cmp = compare(cat, rows).filter(pl.col("status") == "ok")
    b, o = pl.col("batch").cast(pl.Float64), pl.col("output_tokens").cast(pl.Float64)
    prompt = pl.max_horizontal(pl.col("input_tokens"), pl.lit(1)).cast(pl.Float64)
    pre_mem = pl.when(pl.col("prefill_bound") == "memory").then(pl.col("prefill_step_time_s")).otherwise(0.0)
    pre_cmp = pl.col("prefill_step_time_s") - pre_mem
    ph = pl.col("phase")
    design = cmp.select(
        "gpu",
        pl.when(ph == "decode")
        .then(b / pl.col("tokens_per_s"))
        .when(ph == "prefill")
        .then(prompt / pl.col("tokens_per_s"))
        .otherwise(b * o / pl.col("tokens_per_s"))
        .alias("y"),
        pl.when(ph == "mixed").then(b + o).otherwise(1.0).alias("steps"),
        pl.when(ph == "decode")
        .then(pl.col("decode_memory_bound_time_s"))
        .when(ph == "prefill")
        .then(pre_mem)
        .otherwise(b * pre_mem + o * pl.col("decode_memory_bound_time_s"))
        .alias("mem"),
        pl.when(ph == "decode")
        .then(pl.col("decode_compute_bound_time_s"))
        .when(ph == "prefill")
        .then(pre_cmp)
        .otherwise(b * pre_cmp + o * pl.col("decode_compute_bound_time_s"))
        .alias("cmp"),
        pl.when(ph == "decode")
        .then(pl.col("decode_comm_time_s"))
        .when(ph == "prefill")
        .then(0.0)
        .otherwise(o * pl.col("decode_comm_time_s"))
        .alias("comm"),
    )
    out = []
    for (gpu,), g in design.group_by("gpu", maintain_order=True):
        y = g["y"].to_numpy() - g["comm"].to_numpy()
        names = ["steps", "mem"] + (["cmp"] if float(g["cmp"].sum()) > 0 else [])
        x = np.column_stack([g[c].to_numpy() for c in names])
        if g.height < len(names) + 1:
            out.append(
                {"gpu": gpu, "points": g.height, "note": f"needs at least {len(names) + 1} points under the ceiling, has {g.height}"}
            )
            continue
        w = 1.0 / g["y"].to_numpy()
        coef, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
        note = []
        if coef[0] < 0:  # no negative overhead: refit without it
            coef = np.concatenate([[0.0], np.linalg.lstsq(x[:, 1:] * w[:, None], y * w, rcond=None)[0]])
            note.append("overhead fitted below 0, fixed at 0")
        fit = x @ coef + g["comm"].to_numpy()
        ys = g["y"].to_numpy()
        r2 = (
            1.0 - float(np.sum((ys - fit) ** 2)) / float(np.sum((ys - ys.mean()) ** 2)) if g.height > 1 and np.ptp(ys) > 0 else float("nan")
        )
        effs = [1.0 / c if c > 0 else float("nan") for c in coef[1:]]
        if any(e > 1.0 for e in effs):
            note.append("an efficiency above 1: the datasheet roof is beaten, check the precisions")
        if "cmp" not in names:
            note.append("no compute-bound time in these points: compute efficiency not identified")
        out.append(
            {
                "gpu": gpu,
                "points": g.height,
                "eff_bandwidth": min(effs[0], 1.0),
                "eff_compute": min(effs[1], 1.0) if len(effs) > 1 else None,
                "overhead_s": float(coef[0]),
                "r2": r2,
                "rel_rmse": float(np.sqrt(np.mean(((fit - ys) / ys) ** 2))),
                "note": "; ".join(note),
            }
        )
    return pl.DataFrame(out, schema={c: pl.String if c in ("gpu", "note") else pl.Float64 for c in cols})


def batch_curves(cat: Catalogue, rows: pl.DataFrame, calibration: pl.DataFrame | None = None, *, groups: int = 6) -> pl.DataFrame:
    """Predicted tokens/s against batch (powers of two and the measured batches) for each measured setup.

    One `series` per (accelerator, count, model, precisions, phase, lengths)
    of decode and serving measurements (at most `groups`); with a calibration,
    calibrated_tokens_per_s beside the datasheet ceiling.
    """
    keys = ["gpu", "num_gpus", "model", "weights", "kv", "compute", "phase", "input_tokens", "output_tokens"]
    sub = rows.filter(pl.col("phase") != "prefill")
    if not sub.height:
        return pl.DataFrame()
    setups = sub.group_by(keys, maintain_order=True).agg(
        pl.col("batch").max().alias("max_batch"), pl.col("batch").unique().alias("measured")
    )
    setups = setups.head(groups)
    grid_rows = []
    for setup in setups.iter_rows(named=True):
        batches = sorted({2**i for i in range(21) if 2**i <= 2 * setup["max_batch"]} | set(setup["measured"]))
        grid_rows += [{**{k: setup[k] for k in keys}, "batch": b} for b in batches]
    grid = pl.DataFrame(grid_rows, schema={**{k: rows.schema[k] for k in keys}, "batch": rows.schema["batch"]})
    grid = grid.with_columns(pl.lit(1.0).alias("tokens_per_s"))
    curves = predicted(cat, grid.select(*keys, "batch", "tokens_per_s")).select(
        *keys,
        "batch",
        pl.format("{} × {} · {} · {} ({} in / {} out)", "num_gpus", "gpu", "model", "weights", "input_tokens", "output_tokens").alias(
            "series"
        ),
        "predicted_tokens_per_s",
        "fits",
    )
    if calibration is not None and calibration.height:
        curves = curves.with_columns(
            predicted(cat, grid.select(*keys, "batch", "tokens_per_s"), calibration)["predicted_tokens_per_s"].alias(
                "calibrated_tokens_per_s"
            )
        )
    return curves.sort("series", "batch")


def comparison_table(cmp: pl.DataFrame) -> pl.DataFrame:
    """The comparison in reading units (units in the column names)."""
    cols = [
        pl.col("row"),
        pl.col("status"),
        pl.col("gpu").alias("accelerator"),
        pl.col("num_gpus").alias("GPUs"),
        pl.col("model"),
        pl.col("weights"),
        pl.col("kv").alias("KV"),
        pl.col("phase"),
        pl.col("batch").alias("batch (sequences)"),
        pl.col("input_tokens").alias("input (tokens)"),
        pl.col("output_tokens").alias("output (tokens)"),
        pl.col("tokens_per_s").alias("measured (tokens/s)"),
        pl.col("predicted_tokens_per_s").alias("ceiling (tokens/s)"),
        (pl.col("ratio") * 100).alias("measured / ceiling (%)"),
        (pl.col("mbu") * 100).alias("MBU (%)"),
        (pl.col("mfu") * 100).alias("MFU (%)"),
    ]
    if "calibrated_tokens_per_s" in cmp.columns:
        cols.append(pl.col("calibrated_tokens_per_s").alias("calibrated (tokens/s)"))
    cols += [
        (pl.col("ttft_s") * 1e3).alias("TTFT (ms)"),
        (pl.col("tpot_s") * 1e3).alias("TPOT (ms)"),
        pl.col("flags").list.join("; ").alias("flags"),
    ]
    return cmp.select(cols)


def escape_markdown(value: str) -> str:
    """A user-supplied string made inert for Streamlit markdown (no links, emphasis or HTML)."""
    return "".join("\\" + c if c in "\\`*_{}[]()<>#+-.!|~=@$:" else c for c in value)


def calibration_fits(cal: pl.DataFrame | None) -> dict[str, dict[str, float]]:
    """Per accelerator id, the fitted factors as Scenario fields (eff_* clipped to (0, 1]; a factor not fitted is 1)."""
    if cal is None or cal.is_empty():
        return {}
    out: dict[str, dict[str, float]] = {}
    for row in cal.iter_rows(named=True):
        bw = row.get("eff_bandwidth")
        if bw is None or not math.isfinite(bw) or bw <= 0:
            continue
        comp = row.get("eff_compute")
        comp = 1.0 if comp is None or not math.isfinite(comp) or comp <= 0 else comp
        over = row.get("overhead_s")
        over = 0.0 if over is None or not math.isfinite(over) or over < 0 else over
        out[str(row["gpu"])] = {"eff_bandwidth": min(bw, 1.0), "eff_compute": min(comp, 1.0), "overhead_s": min(over, 10.0)}
    return out
