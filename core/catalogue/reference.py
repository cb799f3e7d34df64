"""Published measurements shipped with the app: one sourced row per printed number.

data/seed/reference_measurements.csv (format: data/seed/REFERENCE_FORMAT.md)
holds measurements that vendors, benchmark suites and communities printed,
each with the URL it is printed in, the publisher, the framework and its
version, the scenario (accelerator x count, parallel degrees, model, formats,
batch or concurrency, lengths), the metric, the value in the unit printed and
a note. `reference_seed_frame` validates every row against `Reference` and
the catalogue's ids and adds `value_si` (tokens/s of the whole system for a
throughput, tokens/s per user, seconds for a time). The rows form a read-only
reference table rebuilt with the seed; user datasets never mix with it.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Annotated, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.catalogue.precisions import UnknownPrecisionError, compute_precision, storage_format
from core.catalogue.specs import SLUG

#: metric -> (what it is, the units a row may give it in)
METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "output_tokens_per_s": ("generated tokens per second of the whole system (or per GPU)", ("tokens/s", "tokens/s/gpu")),
    "output_tokens_per_s_per_user": ("generated tokens per second each request sees", ("tokens/s/user",)),
    "tpot": ("time per output token (decode step time seen by a request)", ("ms", "s")),
    "itl": ("inter-token latency (time between two streamed tokens)", ("ms", "s")),
    "ttft": ("time to first token", ("ms", "s")),
    "prefill_tokens_per_s": ("prompt tokens processed per second", ("tokens/s", "tokens/s/gpu")),
}
#: metrics that are times (lower is better); the others are rates
TIME_METRICS = ("tpot", "itl", "ttft")
SCOPES = ("decode", "prefill", "end-to-end")
BATCH_KINDS = ("fixed batch", "concurrency", "max load")

REFERENCE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "id": pl.String,
    "source_url": pl.String,
    "publisher": pl.String,
    "campaign": pl.String,
    "framework": pl.String,
    "framework_version": pl.String,
    "gpu": pl.String,
    "num_gpus": pl.Int64,
    "tp": pl.Int64,
    "ep": pl.Int64,
    "model": pl.String,
    "weights": pl.String,
    "kv": pl.String,
    "compute": pl.String,
    "batch": pl.Int64,
    "batch_kind": pl.String,
    "requests": pl.Int64,
    "depth": pl.Int64,
    "kv_window": pl.Int64,
    "ttft_limit_s": pl.Float64,
    "tpot_limit_s": pl.Float64,
    "input_tokens": pl.Int64,
    "output_tokens": pl.Int64,
    "scope": pl.String,
    "metric": pl.String,
    "statistic": pl.String,
    "value": pl.Float64,
    "unit": pl.String,
    "value_si": pl.Float64,
    "model_bytes": pl.Int64,
    "source_date": pl.String,
    "read_on": pl.Date,
    "note": pl.String,
    "unscored": pl.String,
}
#: the CSV's columns (value_si is computed)
CSV_COLUMNS = tuple(c for c in REFERENCE_SCHEMA if c != "value_si")


#: how a row's note prints an MLPerf log's latency limits, and names a scenario that has them
_LIMITS = re.compile(r"constraints printed ttft_latency (\d+) ns, tpot_latency (\d+) ns")
_LIMITED_SCENARIO = re.compile(r"\b(Server|Interactive) scenario\b")
#: how a row's note names a rolling-window KV cache ("cache length 1280 < max input+output so rolling window attention")
_WINDOW = re.compile(r"cache length (\d+)[^;]*rolling window")


def _same(given: float | None, printed: float) -> bool:
    return given is not None and abs(given - printed) <= 1e-9 * printed


class ReferenceError(ValueError):
    """A reference row that fails validation; the message names the file, row and field."""


class Reference(BaseModel):
    """One published measurement, as printed in its source."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(pattern=SLUG, max_length=40)]
    source_url: Annotated[str, Field(pattern=r"^https?://\S+$")]
    publisher: Annotated[str, Field(min_length=1)]
    #: the publisher's campaign (one article, one submission, one performance page, whatever its URLs): the scorecard's fold
    campaign: Annotated[str, Field(pattern=SLUG, max_length=60)]
    framework: Annotated[str, Field(min_length=1)]
    framework_version: str = ""
    gpu: Annotated[str, Field(pattern=SLUG)]
    num_gpus: Annotated[int, Field(ge=1, le=1024)] = 1
    tp: Annotated[int, Field(ge=1, le=1024)] | None = None
    ep: Annotated[int, Field(ge=1, le=1024)] | None = None
    model: Annotated[str, Field(pattern=SLUG)]
    weights: str
    kv: str
    compute: str = ""
    #: sequences decoded together or client concurrency; None only for a max-load figure that prints no batch
    batch: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    batch_kind: Literal["fixed batch", "concurrency", "max load"]
    #: the requests the run sent, where the source prints them (a max-load run's running batch is at most these)
    requests: Annotated[int, Field(ge=1, le=100_000_000)] | None = None
    #: tokens already in the KV cache before the figure's own (llama-bench's '@ dN'): a prompt prefilled over them, or
    #: generation at that depth
    depth: Annotated[int, Field(ge=0, le=10_000_000)] | None = None
    #: the KV cache a run kept per sequence, in tokens, where it is a rolling window shorter than the sequence: attention
    #: then reads at most this many tokens
    kv_window: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    #: the latency limits a run was held to, in seconds (MLPerf Server and Interactive: the 99th-percentile TTFT and TPOT
    #: its log prints as ttft_latency and tpot_latency); a max-load row is then set at the largest batch that meets them
    ttft_limit_s: Annotated[float, Field(gt=0, le=3600)] | None = None
    tpot_limit_s: Annotated[float, Field(gt=0, le=60)] | None = None
    input_tokens: Annotated[int, Field(ge=0, le=10_000_000)]
    output_tokens: Annotated[int, Field(ge=0, le=10_000_000)] = 0  # may be left empty for a prefill figure
    scope: Literal["decode", "prefill", "end-to-end"]
    metric: Literal["output_tokens_per_s", "output_tokens_per_s_per_user", "tpot", "itl", "ttft", "prefill_tokens_per_s"]
    #: which statistic of the run's requests a time is, where the source prints it (empty: one figure, or not printed)
    statistic: Literal["median", "mean", "p90", "p95", "p99"] | None = None
    value: Annotated[float, Field(gt=0, le=1e9)]
    unit: Literal["tokens/s", "tokens/s/gpu", "tokens/s/user", "ms", "s"]
    model_bytes: Annotated[int, Field(gt=0, le=10**13)] | None = None
    source_date: Annotated[str, Field(pattern=r"^((19|20)\d\d(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?)?)?$")] = ""
    read_on: dt.date
    note: str = ""
    #: why the row is left out of the scorecard and the fit, where its scenario is not known as run (empty: scored)
    unscored: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> Reference:
        units = METRICS[self.metric][1]
        if self.unit not in units:
            raise ValueError(f"unit {self.unit!r} does not fit metric {self.metric} (use {' or '.join(units)})")
        for name in ("weights", "kv"):
            try:
                storage_format(getattr(self, name), argument=name)
            except UnknownPrecisionError as exc:
                raise ValueError(str(exc)) from None
        if self.compute:
            try:
                compute_precision(self.compute, argument="compute")
            except UnknownPrecisionError as exc:
                raise ValueError(str(exc)) from None
        if self.batch is None and self.batch_kind != "max load":
            raise ValueError(f"batch: a {self.batch_kind} measurement needs its batch or concurrency")
        if self.metric == "prefill_tokens_per_s" and self.scope != "prefill":
            raise ValueError("scope: a prefill throughput has scope prefill")
        if self.scope == "prefill" and self.metric not in ("prefill_tokens_per_s", "ttft"):
            raise ValueError(f"scope: {self.metric} is not a prefill figure")
        if self.scope == "prefill" and self.input_tokens < 1:
            raise ValueError("input_tokens: a prefill figure needs a prompt of at least 1 token")
        if self.scope != "prefill" and self.metric != "ttft" and self.output_tokens < 1:
            raise ValueError("output_tokens: a decode or end-to-end figure needs at least 1 output token")
        at_depth = re.search(r"@ ?d(\d+)\b", self.note)
        if at_depth and self.depth != int(at_depth.group(1)):
            raise ValueError(f"depth: the note's test runs at '{at_depth.group(0)}' but depth is {self.depth or 'empty'}")
        limits = _LIMITS.search(self.note)
        if limits:
            ttft, tpot = (int(x) / 1e9 for x in limits.groups())
            if not (_same(self.ttft_limit_s, ttft) and _same(self.tpot_limit_s, tpot)):
                raise ValueError(
                    f"ttft_limit_s, tpot_limit_s: the note prints the run's limits ({ttft:g} s, {tpot:g} s) but the row carries "
                    f"{self.ttft_limit_s or 'none'}, {self.tpot_limit_s or 'none'}"
                )
        elif self.framework == "MLPerf" and _LIMITED_SCENARIO.search(self.note):
            raise ValueError("ttft_limit_s, tpot_limit_s: an MLPerf Server or Interactive run is held to latency limits; give them")
        window = _WINDOW.search(self.note)
        if window and self.kv_window != int(window.group(1)):
            raise ValueError(f"kv_window: the note's run keeps a {window.group(1)}-token rolling window but kv_window is {self.kv_window}")
        if self.statistic and self.metric not in TIME_METRICS:
            raise ValueError(f"statistic: {self.metric} is a rate; a statistic of the requests is given for a time (ttft, tpot, itl)")
        if self.read_on > dt.date.today():
            raise ValueError(f"read_on: {self.read_on} is in the future")
        return self

    @property
    def value_si(self) -> float:
        """The value in SI: tokens/s of the whole system, tokens/s per user, or seconds."""
        if self.unit == "tokens/s/gpu":
            return self.value * self.num_gpus
        if self.unit == "ms":
            return self.value * 1e-3
        return self.value


def reference_seed_frame(seed_dir: Path, gpu_ids: set[str], model_ids: set[str]) -> pl.DataFrame:
    """data/seed/reference_measurements.csv as the store's `reference_measurements` rows, every row validated."""
    path = seed_dir / "reference_measurements.csv"
    if not path.exists():
        return pl.DataFrame(schema=REFERENCE_SCHEMA)
    raw = pl.read_csv(path, infer_schema_length=0)
    missing = [c for c in CSV_COLUMNS if c not in raw.columns]
    if missing:
        raise ReferenceError(f"{path.name}: missing column(s) {', '.join(missing)} (see REFERENCE_FORMAT.md)")
    extra = [c for c in raw.columns if c not in CSV_COLUMNS]
    if extra:
        raise ReferenceError(f"{path.name}: unknown column(s) {', '.join(extra)} (see REFERENCE_FORMAT.md)")
    rows, seen = [], set()
    for line, cells in enumerate(raw.iter_rows(named=True), start=2):
        values = {k: v.strip() for k, v in cells.items() if isinstance(v, str) and v.strip()}
        try:
            rec = Reference.model_validate(values)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "row"
            raise ReferenceError(f"{path.name} row {line} ({cells.get('id')}): {where}: {_message(err['msg'])}") from None
        if rec.id in seen:
            raise ReferenceError(f"{path.name} row {line}: id {rec.id!r} is used twice")
        seen.add(rec.id)
        if rec.gpu not in gpu_ids:
            raise ReferenceError(f"{path.name} row {line} ({rec.id}): unknown accelerator {rec.gpu!r} (not in accelerators.csv)")
        if rec.model not in model_ids:
            raise ReferenceError(f"{path.name} row {line} ({rec.id}): unknown model {rec.model!r} (not in models.csv)")
        row = rec.model_dump()
        row["weights"] = storage_format(rec.weights).name  # one spelling per format (Q4_K_M -> q4_k_m, f16 -> fp16)
        row["kv"] = storage_format(rec.kv).name
        row["compute"] = compute_precision(rec.compute) if rec.compute else None
        row["value_si"] = rec.value_si
        row["unscored"] = rec.unscored or None
        rows.append(row)
    return pl.DataFrame(rows, schema=REFERENCE_SCHEMA)


def _message(msg: str) -> str:
    """A pydantic message without its 'Value error, ' prefix."""
    return re.sub(r"^Value error, ", "", msg)


def source_key(url: str) -> str:
    """The document a URL points into: no scheme, "www.", fragment or query; a page in any locale (amd.com/ja/...,
    amd.com/zh-cn/...) and a GitHub file at any commit as one document.

    The scorecard holds out one publisher's campaign at a time (the `campaign` column, core.evidence.scorecard); this
    key counts and links the documents: two versions of the same performance page are one source.
    """
    base = url.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    base = re.sub(r"^https?://(www\.)?", "https://", base)
    base = re.sub(r"^(https://(?!github\.com/)[^/]+)/(?:en|fr|de|es|it|ja|ko|pt|ru|zh)(?:-[a-z]{2})?/", r"\1/", base)
    return re.sub(r"(github\.com/[^/]+/[^/]+/(?:blob|tree|raw)/)[^/]+/", r"\1*/", base)
