"""Measurements: the record, its rules, and the bulk validation of imported rows.

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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import polars as pl
from pydantic import ConfigDict, Field, model_validator

from core.catalogue.catalogue import Catalogue, UnknownIdError
from core.catalogue.precisions import UnknownPrecisionError, compute_precision, storage_format
from core.catalogue.specs import PrecisionFields
from core.evidence.formats import CANONICAL, CONTEXT_WORDS, EXTRA, Extract
from core.evidence.matching import match_model, resolve_accelerator, weights_in_model_name

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
    # the per-request distribution (optional: core.evidence.formats.DISTRIBUTION)
    "requests": Rule("requests", 1, 1e12, True, True),
    **{
        f"ttft_p{q}_s": Rule("s", 0, 600, False, False, "a first token after more than 10 minutes: a value in ms read as s?")
        for q in (50, 90, 99)
    },
    **{f"tpot_p{q}_s": Rule("s", 0, 10, False, False, "more than 10 s per output token: a value in ms read as s?") for q in (50, 90, 99)},
    # what the file says about the model it ran (optional: core.evidence.formats.FILE_FACTS)
    "model_bytes": Rule("bytes", 0, 1e13, False, False, "a model file of more than 10 TB"),
    "depth": Rule("tokens", 0, 10_000_000, True, True),
}
#: Columns a file may leave empty (the rest are required).
OPTIONAL = frozenset({"ttft_s", "tpot_s", *EXTRA})
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
    requests: Annotated[int, _field("requests")] | None = None
    ttft_p50_s: Annotated[float, _field("ttft_p50_s")] | None = None
    ttft_p90_s: Annotated[float, _field("ttft_p90_s")] | None = None
    ttft_p99_s: Annotated[float, _field("ttft_p99_s")] | None = None
    tpot_p50_s: Annotated[float, _field("tpot_p50_s")] | None = None
    tpot_p90_s: Annotated[float, _field("tpot_p90_s")] | None = None
    tpot_p99_s: Annotated[float, _field("tpot_p99_s")] | None = None
    model_bytes: Annotated[float, _field("model_bytes")] | None = None
    depth: Annotated[int, _field("depth")] | None = None

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
    for kind in ("ttft", "tpot"):
        for lower, upper in ((50, 90), (90, 99)):
            lo, hi = row.get(f"{kind}_p{lower}_s"), row.get(f"{kind}_p{upper}_s")
            if lo is not None and hi is not None and hi < lo:
                out.append(f"{kind}_p{upper}_s: p{upper} {hi:g} s is below p{lower} {lo:g} s")
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
    frame = frame.with_columns(*[pl.lit(None, dtype=pl.String).alias(c) for c in EXTRA if c not in frame.columns])
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
    frame = frame.with_columns((pl.col("num_gpus").is_not_null() & (pl.col("num_gpus").str.strip_chars() != "")).alias("__num_gpus_given"))
    frame = _weights_from_model_names(frame, sources, extract.notes)
    defaults = {"num_gpus": "1", "weights": "bf16", "kv": "bf16", "phase": "decode"}
    frame = frame.with_columns([pl.col(c).fill_null(v) for c, v in defaults.items()])
    strip = {c: pl.col(c).str.strip_chars() for c in RULES}
    work = frame.with_columns(*[strip[c].cast(pl.Float64, strict=False).mul(extract.scale.get(c, 1.0)).alias(f"__{c}") for c in RULES])
    checks: dict[str, pl.Expr] = {}
    for col, rule in RULES.items():
        raw, value = strip[col], pl.col(f"__{col}")
        present = raw.is_not_null() & (raw != "")
        hint = f"; give it as context: {CONTEXT_WORDS[col]}" if col in ("batch", "input_tokens", "output_tokens") else ""
        low = (value < rule.lo) if rule.lo_inclusive else (value <= rule.lo)
        sign = ">=" if rule.lo_inclusive else ">"
        above = f"{{}} is above {rule.hi:g} {rule.unit}" + (f": {rule.hint}" if rule.hint else "")
        chain: Any = pl.when(~present).then(pl.lit(None if col in OPTIONAL else f"missing value ({rule.unit}){hint}"))
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
        **{
            f"{kind}_p{upper}_s": pl.when(pl.col(f"{kind}_p{upper}_s") < pl.col(f"{kind}_p{lower}_s")).then(
                pl.format(f"p{upper} {{}} s is below p{lower} {{}} s", pl.col(f"{kind}_p{upper}_s"), pl.col(f"{kind}_p{lower}_s"))
            )
            for kind in ("ttft", "tpot")
            for lower, upper in ((50, 90), (90, 99))
        },
    }
    _raise_first(typed.select("row", *[e.alias(c) for c, e in cross.items()]), sources)
    resolved = _resolve_names(typed, cat, sources, label, extract.notes, leave_out=extract.leave_out_unknown)
    return resolved.select(
        "row",
        *CANONICAL,
        *EXTRA,
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


def _weights_from_model_names(frame: pl.DataFrame, sources: dict[str, str], notes: list[str]) -> pl.DataFrame:
    """Rows with no weight format (neither in the file nor given as context) whose model id ends in one ("-FP8", "-AWQ",
    "-GPTQ-Int4", "-NVFP4" ...): that format, said in the notes."""
    lacking = frame.filter(pl.col("weights").is_null() | (pl.col("weights").str.strip_chars() == ""))
    implied: dict[str, str] = {}
    for name in lacking["model"].drop_nulls().unique(maintain_order=True).to_list():
        hit = weights_in_model_name(name)
        if hit is not None:
            implied[name] = hit[0]
            notes.append(f"weights: {hit[0]}, from the model name {name!r} (its suffix {hit[1]!r}; the file holds no weight format)")
    if not implied:
        return frame
    sources.setdefault("weights", "weights (from the model name)")
    empty = pl.col("weights").is_null() | (pl.col("weights").str.strip_chars() == "")
    return frame.with_columns(
        pl.when(empty)
        .then(pl.col("model").replace_strict(implied, default=None, return_dtype=pl.String))
        .otherwise(pl.col("weights"))
        .alias("weights")
    )


def _resolve_names(
    frame: pl.DataFrame, cat: Catalogue, sources: dict[str, str], label: str, notes: list[str] | None = None, *, leave_out: bool = False
) -> pl.DataFrame:
    """Map every distinct accelerator, model and precision name to its catalogue id (once per name).

    `leave_out`: rows whose accelerator or model the catalogue lacks are dropped and named in the notes (a results table
    of many systems), not a refusal; the file is refused only when no row is left.

    An accelerator name that holds a count ("8xH200", "H100x4", "2 x MI300X") gives the row's num_gpus where neither the
    file nor the context gives one; a count that differs from a given num_gpus is refused, naming both.
    """
    out = frame
    counts: dict[str, int] = {}

    def gpu(v: str) -> str:
        gid, count = resolve_accelerator(v, cat)
        exact = v.strip().lower() in (gid, cat.gpu(gid).name.lower())
        if count is not None:
            counts[v] = count
        if notes is not None and not exact:
            notes.append(f"accelerator {v!r} read as {f'{count} × ' if count is not None else ''}{cat.gpu(gid).name}")
        return gid

    resolvers: dict[str, Callable[[str], str]] = {
        "gpu": gpu,
        "model": lambda v: match_model(v, cat),
        "weights": lambda v: storage_format(v, argument="weights").name,
        "kv": lambda v: storage_format(v, argument="kv").name,
        "compute": lambda v: compute_precision(v, argument="compute"),
    }
    for col, resolve in resolvers.items():
        names = out[col].drop_nulls().unique(maintain_order=True).to_list()
        if col in ("gpu", "model") and out[col].null_count():
            first = out.filter(pl.col(col).is_null())["row"][0]
            what = "accelerator" if col == "gpu" else "model"
            raise MeasurementError(
                f"no {what} in the file: give it as context: {CONTEXT_WORDS[col]}", row=first, column=sources.get(col, col)
            )
        mapping: dict[str, str] = {}
        unknown: list[str] = []
        for name in names:
            try:
                mapping[name] = resolve(name)
            except (UnknownIdError, UnknownPrecisionError) as exc:
                if leave_out and col in ("gpu", "model") and isinstance(exc, UnknownIdError):
                    unknown.append(name)
                    continue
                first = out.filter(pl.col(col) == name)["row"][0]
                n_rows = out.filter(pl.col(col) == name).height
                raise MeasurementError(str(exc).strip('"'), row=first, column=sources.get(col, col), more=n_rows - 1) from None
        if unknown:
            gone = out.filter(pl.col(col).is_in(unknown))
            out = out.filter(~pl.col(col).is_in(unknown))
            what = "accelerators" if col == "gpu" else "models"
            if out.is_empty():
                raise MeasurementError(
                    f"every row is on {what} the catalogue lacks ({', '.join(repr(u) for u in unknown[:5])}): add one on the Catalogue page",
                    row=int(gone["row"][0]),
                    column=sources.get(col, col),
                )
            if notes is not None:
                shown = ", ".join(repr(u) for u in unknown[:6]) + (f" and {len(unknown) - 6} more" if len(unknown) > 6 else "")
                notes.append(f"{gone.height:,} rows on {what} the catalogue lacks left out: {shown}")
        if col == "gpu" and counts:
            out = _counts_as_num_gpus(out, counts, sources)
        out = out.with_columns(pl.col(col).replace_strict(mapping, default=None, return_dtype=pl.String))
    return out.drop("__num_gpus_given", strict=False)


def _counts_as_num_gpus(frame: pl.DataFrame, counts: dict[str, int], sources: dict[str, str]) -> pl.DataFrame:
    """num_gpus from the count an accelerator name holds, where none was given; MeasurementError where a given one differs."""
    count = pl.col("gpu").replace_strict(counts, default=None, return_dtype=pl.Int64)
    given = pl.col("__num_gpus_given") if "__num_gpus_given" in frame.columns else pl.lit(False)
    clash = frame.filter(count.is_not_null() & given & (count != pl.col("num_gpus")))
    if clash.height:
        first = clash.row(0, named=True)
        raise MeasurementError(
            f"the accelerator {first['gpu']!r} says {counts[first['gpu']]} accelerators but num_gpus is {first['num_gpus']}: "
            "give one count (or fix the file)",
            row=first["row"],
            column=sources.get("num_gpus", "num_gpus"),
            more=clash["row"].n_unique() - 1,
        )
    return frame.with_columns(pl.when(count.is_not_null() & ~given).then(count).otherwise(pl.col("num_gpus")).alias("num_gpus"))


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
