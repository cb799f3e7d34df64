"""Comparing accelerators for one workload (a purchase decision): the cheapest configuration, its cost, the frontier.

One workload (model, precisions, context, prompt) and either the workload's
decode batch or a service target (time per output token <= x, time to first
token <= y). For every accelerator each tensor-parallel degree up to its
scale-up domain (8 on an HGX board, 72 in an NVL72 rack, 1 for parts that are
not ganged) and each batch are evaluated as one frame
(core.model.ceilings.evaluate). The configuration kept is the cheapest one
that fits and meets the target: at a price per GPU, the one with the most
output tokens/s per GPU (fewer GPUs on a tie). Beyond one scale-up domain a
load is served by replicas, never by a wider tensor-parallel group.

Prices are the catalogue's published ones (core.catalogue.prices: the median
where there are several) unless the user gives their own; costs of renting
or owning follow core.plan.costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from core.catalogue.catalogue import Catalogue
from core.catalogue.specs import SOURCE_SEPARATOR
from core.model.ceilings import evaluate
from core.model.result import RESULT_SCHEMA
from core.model.scenario import Scenario, grid
from core.plan.costs import HOURS_PER_MONTH, Ownership, break_even_months, owned_usd_per_gpu_hour, served_usd_per_gpu_hour

#: Tensor-parallel degrees tried per accelerator (those within its scale-up domain).
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)
#: The most GPUs tried where an accelerator's scale-up domain is not known (a custom one): one server's.
UNKNOWN_DOMAIN = 8
#: Decode batches tried under a service target and drawn on the frontier.
TARGET_BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)

#: What a comparison's figures are: what the workload's framework is expected to reach, or the ceiling.
BASIS_LABELS = {"predicted": "expected", "ceiling": "ceiling"}
#: The largest price a user may give, by kind: a GPU-hour as the Scenario bounds it, a GPU as a published price is bounded.
PRICE_MAX = {
    "rent": next(m.le for m in Scenario.model_fields["usd_per_gpu_hour"].metadata if hasattr(m, "le")),
    "buy": 5_000_000.0,
}

#: Sort keys offered by the page: column -> True when larger is better.
SORT_KEYS: dict[str, bool] = {
    "usd_per_million_tokens": False,
    "tokens_per_s_per_gpu": True,
    "tokens_per_s_total": True,
    "tokens_per_s_per_user": True,
    "tokens_per_s_per_watt": True,
    "num_gpus": False,
}
SORT_LABELS = {
    "usd_per_million_tokens": "$ per million output tokens",
    "tokens_per_s_per_gpu": "tokens/s per GPU",
    "tokens_per_s_total": "tokens/s total",
    "tokens_per_s_per_user": "tokens/s per user",
    "tokens_per_s_per_watt": "tokens/s per W",
    "num_gpus": "fewest GPUs",
}

COMPARISON_COLUMNS = (
    "gpu",
    "gpu_name",
    "status",
    "num_gpus",
    "batch",
    "binds",
    "why",
    "tokens_per_s_per_user",
    "tokens_per_s_total",
    "tokens_per_s_per_gpu",
    "time_per_output_token_s",
    "ttft_s",
    "price_kind",
    "price_usd",
    "price_basis",
    "price_as_of",
    "price_old",
    "price_sources",
    "usd_per_gpu_hour",
    "usd_per_million_tokens",
    "usd_per_million_input_tokens",
    "break_even_months",
    "tokens_per_s_per_watt",
    "replicas",
    "gpus_needed",
    "usd_per_month",
    "scaleup_domain",
    "ridge",
    "compute_used",
    "bound",
    "peak_flops",
    "bandwidth_bytes_per_s",
    "memory_required_bytes",
    "capacity_bytes",
    "basis",
    "ceiling_tokens_per_s_total",
    "ceiling_time_per_output_token_s",
    "ceiling_ttft_s",
    "predicted_error",
)
_STRINGS = {
    "gpu",
    "gpu_name",
    "status",
    "binds",
    "why",
    "price_kind",
    "price_basis",
    "price_as_of",
    "price_sources",
    "compute_used",
    "bound",
    "basis",
}
_INTS = {"num_gpus", "batch", "replicas", "gpus_needed", "scaleup_domain"}


#: The bounds of a load's figures, shared with every control that asks for one (core.plan.compare_request).
REQUESTS_PER_S = Field(gt=0, le=1e7)
TOKENS = Field(ge=1, le=10_000_000)


class Load(BaseModel):
    """A stated load: requests per second, each with its input and output tokens."""

    model_config = ConfigDict(extra="forbid")

    requests_per_s: Annotated[float, REQUESTS_PER_S]
    input_tokens: Annotated[int, TOKENS]
    output_tokens: Annotated[int, TOKENS]


def tp_counts(cat: Catalogue, gpu_id: str, counts: Sequence[int] = GPU_COUNTS) -> list[int]:
    """The tensor-parallel degrees of `counts` one scale-up domain of the accelerator holds."""
    domain = cat.gpu(gpu_id).scaleup_domain or UNKNOWN_DOMAIN
    return [n for n in counts if n <= domain] or [1]


@dataclass(frozen=True)
class Pricing:
    """The prices a comparison uses: per accelerator (`rows`: gpu, price_kind, price_usd, price_basis, price_as_of,
    price_old, price_sources, usd_per_gpu_hour as paid, served_usd_per_gpu_hour, break_even_months)."""

    rows: pl.DataFrame

    def served(self) -> dict[str, float]:
        """Accelerator -> cost of one serving GPU-hour (only those with a price)."""
        rows = self.rows.filter(pl.col("served_usd_per_gpu_hour").is_not_null())
        return dict(zip(rows["gpu"], rows["served_usd_per_gpu_hour"], strict=True))


def pricing(
    cat: Catalogue,
    gpu_ids: Sequence[str],
    own: Ownership | None = None,
    *,
    rent: Mapping[str, float] | None = None,
    buy: Mapping[str, float] | None = None,
) -> Pricing:
    """Per accelerator: the price used (the user's `rent`/`buy` one when > 0, else the published median), its basis and date,
    the cost of a paid and of a served GPU-hour, and after how many months buying beats renting (both prices known)."""
    own = own or Ownership()
    rows = []
    for g in dict.fromkeys(gpu_ids):
        r = cat.price(g, "rent", override=(rent or {}).get(g), rates=own.rent_prices)
        b = cat.price(g, "buy", override=(buy or {}).get(g))
        power = cat.gpu(g).power_w
        used = r if own.mode == "rent" else b
        paid = None
        if used.usd is not None:
            paid = used.usd if own.mode == "rent" else owned_usd_per_gpu_hour(used.usd, power, own)
        even = break_even_months(b.usd, r.usd, power, own) if r.usd is not None and b.usd is not None else None
        rows.append(
            {
                "gpu": g,
                "price_kind": own.mode,
                "price_usd": used.usd,
                "price_basis": used.label,
                "price_as_of": used.as_of,
                "price_old": used.stale,
                "price_sources": SOURCE_SEPARATOR.join(used.sources) or None,
                "usd_per_gpu_hour": paid,
                "served_usd_per_gpu_hour": None if paid is None else served_usd_per_gpu_hour(paid, own),
                "break_even_months": even,
            }
        )
    schema = {
        "gpu": pl.String,
        "price_kind": pl.String,
        "price_usd": pl.Float64,
        "price_basis": pl.String,
        "price_as_of": pl.String,
        "price_old": pl.Boolean,
        "price_sources": pl.String,
        "usd_per_gpu_hour": pl.Float64,
        "served_usd_per_gpu_hour": pl.Float64,
        "break_even_months": pl.Float64,
    }
    return Pricing(pl.DataFrame(rows, schema=schema))


def price_table(
    cat: Catalogue, gpu_ids: Sequence[str], own: Ownership | None = None, *, given: Mapping[str, float] | None = None
) -> pl.DataFrame:
    """The editable price table of the page: per accelerator the price of the mode's kind (the user's or the published median)
    and what it rests on; `usd` is what the user may overwrite."""
    own = own or Ownership()
    mine = dict(given or {})
    rows = []
    for g in dict.fromkeys(gpu_ids):
        p = cat.price(g, own.mode, override=mine.get(g), rates=own.rent_prices)
        rows.append({"gpu": g, "accelerator": cat.gpu(g).name, "usd": p.usd, "source": p.label, "old": p.stale})
    return pl.DataFrame(
        rows, schema={"gpu": pl.String, "accelerator": pl.String, "usd": pl.Float64, "source": pl.String, "old": pl.Boolean}
    )


def evaluate_configurations(
    cat: Catalogue,
    counts: Mapping[str, Sequence[int]],
    workload: Scenario,
    *,
    batches: Sequence[int],
    served: Mapping[str, float],
    basis: str = "predicted",
) -> pl.DataFrame:
    """Every accelerator x its tensor-parallel degrees (`counts`) x batch, as one evaluation, with tokens/s per GPU.

    With the catalogue's predictor (a user's refit of their accelerator included), the figures are what the workload's
    framework is expected to reach, the ceiling's kept beside them; `basis` "ceiling": the ceiling's alone."""
    frames = [grid(workload, gpu=[g], num_gpus=list(ns), batch=list(batches)) for g, ns in counts.items()]
    axes = pl.concat(frames).with_columns(
        pl.col("gpu").replace_strict(dict(served), default=0.0, return_dtype=pl.Float64).alias("usd_per_gpu_hour")
    )
    # the comparison's columns the engine gives (its price columns come from `pricing`), and what the search needs
    columns = [c for c in COMPARISON_COLUMNS if c in RESULT_SCHEMA and c != "usd_per_gpu_hour"] + ["fits", "prefill_tokens_per_s"]
    predicting = cat.predictor is not None and basis == "predicted"
    if predicting:
        columns += [f"predicted_{c}" for c in _PREDICTED_AS.values()] + ["predicted_error"]
    out = evaluate(cat, axes, columns=columns)
    if predicting:  # the search runs on what the framework is expected to reach; the ceiling stays beside it as the bound
        out = out.with_columns(
            *(pl.col(c).alias(f"ceiling_{c}") for c in ("tokens_per_s_total", "time_per_output_token_s", "ttft_s")),
            *(pl.col(f"predicted_{p}").alias(c) for c, p in _PREDICTED_AS.items()),
            # the same price over the tokens the prefill is expected to process
            (pl.col("usd_per_million_input_tokens") * pl.col("prefill_tokens_per_s") / pl.col("predicted_prefill_tokens_per_s")).alias(
                "usd_per_million_input_tokens"
            ),
            pl.lit("predicted").alias("basis"),
        )
    else:
        out = out.with_columns(
            *(pl.col(c).alias(f"ceiling_{c}") for c in ("tokens_per_s_total", "time_per_output_token_s", "ttft_s")),
            pl.lit("ceiling").alias("basis"),
            pl.lit(None, dtype=pl.Float64).alias("predicted_error"),
        )
    priced = pl.col("gpu").is_in(list(served))
    return out.with_columns(
        (pl.col("tokens_per_s_total") / pl.col("num_gpus")).alias("tokens_per_s_per_gpu"),
        # no price of this kind: no $ (the engine would otherwise fall back to the published rent)
        *(pl.when(priced).then(pl.col(c)).alias(c) for c in ("usd_per_million_tokens", "usd_per_million_input_tokens")),
    )


#: The comparison's figures and the predicted ones the search uses in their place (core.model.result).
_PREDICTED_AS = {
    "tokens_per_s_per_user": "tokens_per_s_per_user",
    "tokens_per_s_total": "tokens_per_s_total",
    "time_per_output_token_s": "tpot_s",
    "ttft_s": "ttft_s",
    "prefill_tokens_per_s": "prefill_tokens_per_s",
    "usd_per_million_tokens": "usd_per_million_tokens",
}


def _meets(max_tpot_s: float | None, max_ttft_s: float | None) -> pl.Expr:
    ok = pl.col("fits") & pl.col("tokens_per_s_total").is_not_null()
    if max_tpot_s is not None:
        ok = ok & (pl.col("time_per_output_token_s") <= max_tpot_s)
    if max_ttft_s is not None:
        ok = ok & (pl.col("ttft_s") <= max_ttft_s)
    return ok


def compare_accelerators(
    cat: Catalogue,
    gpu_ids: Sequence[str],
    workload: Scenario,
    *,
    max_tpot_s: float | None = None,
    max_ttft_s: float | None = None,
    own: Ownership | None = None,
    prices: Mapping[str, float] | None = None,
    buy_prices: Mapping[str, float] | None = None,
    load: Load | None = None,
    gpu_counts: Sequence[int] = GPU_COUNTS,
    batches: Sequence[int] = TARGET_BATCHES,
    sort_by: str = "usd_per_million_tokens",
    basis: str = "predicted",
) -> pl.DataFrame:
    """One row per accelerator for the workload, sorted by `sort_by` (best first, unmet last); `basis`: the figures
    the search runs on, what the framework is expected to reach ("predicted", where the catalogue has a fit) or the
    ceiling ("ceiling").

    Without a target (both limits None) the batch is the workload's; with
    one, every batch in `batches` is tried. A configuration qualifies when it
    fits and meets both limits; the one kept has the most tokens/s per GPU
    (the cheapest at any price per GPU), fewer GPUs on a tie. `binds` says
    what stops a cheaper one (memory, TPOT or TTFT on fewer GPUs; memory or
    TPOT at a larger batch), `why` says it in words. status: "ok",
    "does not fit on N GPUs (one scale-up domain)" or "misses the target";
    the figures of an unqualified row are null. With a `load`, replicas of
    the configuration serve it: a replica's capacity is one request per
    (output tokens / its tokens/s + input tokens / its prefill tokens/s)
    seconds; `gpus_needed` = replicas x GPUs and `usd_per_month` their paid
    hours over a month of 730 h.
    """
    own = own or Ownership()
    ids = list(dict.fromkeys(gpu_ids))
    if not ids:
        return pl.DataFrame(schema=_schema())
    targeted = max_tpot_s is not None or max_ttft_s is not None
    price = pricing(cat, ids, own, rent=prices, buy=buy_prices)
    counts = {g: tp_counts(cat, g, gpu_counts) for g in ids}
    swept = batches if targeted else [workload.batch]
    out = evaluate_configurations(cat, counts, workload, batches=swept, served=price.served(), basis=basis)
    out = out.with_columns(_meets(max_tpot_s, max_ttft_s).alias("meets")).sort("gpu", "num_gpus", "batch")
    best = (
        out.filter(pl.col("meets"))
        .sort(["gpu", "tokens_per_s_per_gpu", "num_gpus", "batch"], descending=[False, True, False, False])
        .group_by("gpu", maintain_order=True)
        .first()
    )
    explained = [_explain(out, row, targeted, max_tpot_s, max_ttft_s) for row in best.iter_rows(named=True)]
    best = best.with_columns(
        pl.Series("binds", [e[0] for e in explained], dtype=pl.String),
        pl.Series("why", [e[1] for e in explained], dtype=pl.String),
        pl.lit("ok").alias("status"),
    )
    domain = {g: cat.gpu(g).scaleup_domain for g in ids}
    why_not = out.group_by("gpu").agg(
        pl.col("fits").any().alias("any_fit"), pl.col("gpu_name").first(), pl.col("num_gpus").max().alias("most")
    )
    missing = why_not.join(best.select("gpu"), on="gpu", how="anti")
    missing = missing.with_columns(
        pl.when(pl.col("any_fit"))
        .then(pl.lit("misses the target"))
        .when(pl.col("most") == 1)
        .then(pl.lit("does not fit on its one device (not ganged in tensor parallel)"))
        .otherwise(pl.format("does not fit on {} GPUs (one scale-up domain)", pl.col("most")))
        .alias("status")
    ).drop("any_fit", "most")
    table = pl.concat([best, missing], how="diagonal_relaxed")
    table = table.join(price.rows.drop("served_usd_per_gpu_hour"), on="gpu", how="left").with_columns(
        pl.col("gpu").replace_strict(domain, default=None, return_dtype=pl.Int64).alias("scaleup_domain")
    )
    table = _with_load(table, load)
    for c in COMPARISON_COLUMNS:
        if c not in table.columns:
            table = table.with_columns(pl.lit(None).alias(c))
    table = table.select(COMPARISON_COLUMNS).cast(_schema())  # type: ignore[arg-type]
    larger_better = SORT_KEYS.get(sort_by, True)
    return table.sort([pl.col("status") != "ok", sort_by, "gpu"], descending=[False, larger_better, False], nulls_last=True)


def _with_load(table: pl.DataFrame, load: Load | None) -> pl.DataFrame:
    """Replicas, GPUs and the monthly cost of serving `load` with each row's configuration."""
    if load is None:
        return table.with_columns(pl.lit(None, dtype=pl.Int64).alias("replicas"), pl.lit(None, dtype=pl.Int64).alias("gpus_needed"))
    seconds = load.output_tokens / pl.col("tokens_per_s_total") + load.input_tokens / pl.col("prefill_tokens_per_s")
    replicas = (load.requests_per_s * seconds).ceil().cast(pl.Int64)
    return (
        table.with_columns(replicas.alias("replicas"))
        .with_columns(
            (pl.col("replicas") * pl.col("num_gpus")).alias("gpus_needed"),
        )
        .with_columns((pl.col("gpus_needed") * pl.col("usd_per_gpu_hour") * HOURS_PER_MONTH).alias("usd_per_month"))
    )


def _explain(out: pl.DataFrame, row: dict[str, Any], targeted: bool, max_tpot_s: float | None, max_ttft_s: float | None) -> tuple[str, str]:
    """(binds, why) of the configuration kept: what stops a larger batch at its GPU count and what rules out fewer GPUs."""
    g, n, b = row["gpu"], row["num_gpus"], row["batch"]
    mine = out.filter(pl.col("gpu") == g)
    plural = "s" if n > 1 else ""
    head = f"{n} GPU{plural} at batch {b}: the most tokens/s per GPU ({row['tokens_per_s_per_gpu']:,.0f}) that "
    head += "meets the target" if targeted else "fits at this batch"
    batch_limit = "the batch asked for"
    if targeted:
        larger = mine.filter((pl.col("num_gpus") == n) & (pl.col("batch") > b)).sort("batch").head(1)
        if larger.is_empty():
            batch_limit, batch_why = "batch range", f"{b} is the largest batch tried"
        elif not larger["fits"][0]:
            batch_limit, batch_why = "memory", f"batch {larger['batch'][0]} does not fit in memory"
        else:
            batch_limit = "TPOT"
            batch_why = f"batch {larger['batch'][0]} takes {larger['time_per_output_token_s'][0] * 1e3:.3g} ms per token"
        head += f"; {batch_why}"
    fewer = mine.filter(pl.col("num_gpus") < n)
    if fewer.is_empty():
        return batch_limit, head + "."
    m = int(fewer["num_gpus"].max())  # type: ignore[arg-type]
    at = fewer.filter(pl.col("num_gpus") == m)
    qualified = at.filter(pl.col("meets"))
    s = "s" if m > 1 else ""
    if qualified.height:
        best = float(qualified["tokens_per_s_per_gpu"].max())  # type: ignore[arg-type]
        return batch_limit, head + f"; {m} GPU{s} reach at most {best:,.0f} tokens/s per GPU."
    if not at["fits"].any():
        return "memory", head + f"; on {m} GPU{s} the weights and KV cache do not fit."
    fitting = at.filter(pl.col("fits"))
    first_token = float(fitting["ttft_s"].min())  # type: ignore[arg-type]
    if max_ttft_s is not None and first_token > max_ttft_s:
        return "TTFT", head + f"; on {m} GPU{s} the first token takes {first_token:.3g} s > {max_ttft_s:g} s."
    if max_tpot_s is not None:
        fastest = float(fitting["time_per_output_token_s"].min())  # type: ignore[arg-type]
        return "TPOT", head + f"; on {m} GPU{s} the fastest token takes {fastest * 1e3:.3g} ms > {max_tpot_s * 1e3:g} ms."
    return batch_limit, head + "."


def frontier_curves(
    cat: Catalogue,
    table: pl.DataFrame,
    workload: Scenario,
    *,
    own: Ownership | None = None,
    prices: Mapping[str, float] | None = None,
    buy_prices: Mapping[str, float] | None = None,
    num_gpus: int | None = None,
    batches: Sequence[int] = TARGET_BATCHES,
    max_tpot_s: float | None = None,
    max_ttft_s: float | None = None,
    basis: str = "predicted",
) -> pl.DataFrame:
    """The throughput-interactivity frontier of each accelerator of a comparison: its batch sweep at the GPU count kept
    (or `num_gpus`, as given: a group wider than the scale-up domain is flagged, not narrowed), one row per batch that
    fits: tokens/s per user, output tokens/s per GPU, $ per million output tokens, whether it meets the target and
    whether it is the configuration kept (`chosen`); one evaluation for all of them."""
    ok = table.filter(pl.col("status") == "ok") if num_gpus is None else table
    counts = {g: [num_gpus or n] for g, n in zip(ok["gpu"], ok["num_gpus"], strict=True)}
    if not counts:
        return pl.DataFrame(schema=_frontier_schema())
    chosen = dict(zip(ok["gpu"], ok["batch"], strict=True)) if num_gpus is None else {}
    price = pricing(cat, list(counts), own, rent=prices, buy=buy_prices)
    swept = sorted({*batches, *chosen.values()})
    out = evaluate_configurations(cat, counts, workload, batches=swept, served=price.served(), basis=basis)
    out = out.filter(pl.col("fits") & pl.col("tokens_per_s_total").is_not_null())
    kept = pl.DataFrame({"gpu": list(chosen), "batch": list(chosen.values()), "chosen": [True] * len(chosen)}, schema=_KEPT)
    return (
        out.with_columns(_meets(max_tpot_s, max_ttft_s).alias("meets"))
        .join(kept, on=["gpu", "batch"], how="left")
        .with_columns(pl.col("chosen").fill_null(False))
        .select(list(_frontier_schema()))
    )


_KEPT = {"gpu": pl.String, "batch": pl.Int64, "chosen": pl.Boolean}


def _frontier_schema() -> dict[str, Any]:
    return {
        "gpu": pl.String,
        "gpu_name": pl.String,
        "num_gpus": pl.Int64,
        "batch": pl.Int64,
        "tokens_per_s_per_user": pl.Float64,
        "tokens_per_s_per_gpu": pl.Float64,
        "tokens_per_s_total": pl.Float64,
        "time_per_output_token_s": pl.Float64,
        "usd_per_million_tokens": pl.Float64,
        "bound": pl.String,
        "meets": pl.Boolean,
        "chosen": pl.Boolean,
    }


def _schema() -> dict[str, Any]:
    return {
        c: pl.String if c in _STRINGS else pl.Int64 if c in _INTS else pl.Boolean if c == "price_old" else pl.Float64
        for c in COMPARISON_COLUMNS
    }
