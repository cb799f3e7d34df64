"""Published prices of accelerators, each with its seller, date and source, and the one a figure uses.

data/seed/prices.csv (format: data/seed/PRICES_FORMAT.md) holds one row per
published price: `rent` is US$ per GPU-hour on demand, `buy` US$ per GPU (a
server's price divided by its GPUs, said so in the row's note). Where an
accelerator has several prices of a kind, a figure uses their median and
says so (`price_used`); a price the user types overrides it. A price whose
date (`as_of`, the month the source shows) is more than `STALE_MONTHS`
before today, or whose source shows no date, is marked as old wherever it
is used.
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.catalogue.specs import SLUG

KINDS = ("rent", "buy")
#: A price dated more than this many months before today is marked as old.
STALE_MONTHS = 12
#: What each kind of price is per.
UNITS = {"rent": "$ per GPU-hour", "buy": "$ per GPU"}

PRICE_SCHEMA = {
    "gpu": pl.String,
    "kind": pl.String,
    "usd": pl.Float64,
    "provider": pl.String,
    "offer": pl.String,
    "region": pl.String,
    "as_of": pl.String,
    "source_url": pl.String,
    "note": pl.String,
}


class Price(BaseModel):
    """One published price of one accelerator."""

    model_config = ConfigDict(extra="forbid")

    gpu: Annotated[str, Field(pattern=SLUG)]
    kind: Literal["rent", "buy"]
    usd: Annotated[float, Field(gt=0, le=5_000_000)]
    provider: Annotated[str, Field(min_length=1)]
    offer: Annotated[str, Field(min_length=1)]
    region: str = ""
    #: the month the source shows for the price (YYYY-MM); empty when it shows none (then the price counts as old)
    as_of: Annotated[str, Field(pattern=r"^((19|20)\d\d-(0[1-9]|1[0-2]))?$")] = ""
    source_url: Annotated[str, Field(pattern=r"^https?://\S+$")]
    note: str = ""


class PriceError(ValueError):
    """A price row that fails validation; the message names the row and the field."""


def price_seed_frame(seed_dir: Path, gpu_ids: set[str]) -> pl.DataFrame:
    """data/seed/prices.csv as the store's `prices` rows, every row validated against the record and the catalogue's ids."""
    path = seed_dir / "prices.csv"
    if not path.exists():
        return pl.DataFrame(schema=PRICE_SCHEMA)
    raw = pl.read_csv(path, infer_schema_length=0)
    missing = [c for c in PRICE_SCHEMA if c not in raw.columns]
    if missing:
        raise PriceError(f"{path.name}: missing column(s) {', '.join(missing)} (see PRICES_FORMAT.md)")
    rows = []
    for line, cells in enumerate(raw.iter_rows(named=True), start=2):
        values = {k: (v.strip() if isinstance(v, str) else v) for k, v in cells.items() if k in PRICE_SCHEMA}
        values = {k: v for k, v in values.items() if v is not None}
        try:
            price = Price.model_validate(values)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise PriceError(f"{path.name} row {line} ({cells.get('gpu')}): {where}: {err['msg']}") from None
        if price.gpu not in gpu_ids:
            raise PriceError(f"{path.name} row {line}: unknown accelerator {price.gpu!r} (not in accelerators.csv)")
        rows.append(price.model_dump())
    return pl.DataFrame(rows, schema=PRICE_SCHEMA)


def months_between(as_of: str, today: dt.date) -> int:
    """Whole months from the month `as_of` (YYYY-MM) to today's month."""
    year, month = (int(x) for x in as_of.split("-"))
    return (today.year - year) * 12 + today.month - month


@dataclass(frozen=True)
class PriceUsed:
    """The price a figure uses for one accelerator: the user's, the published median, or none."""

    gpu: str
    kind: str
    usd: float | None
    basis: str  # "your price", "median of N published rent prices", "the published rent price", "no published rent price"
    as_of: str | None = None  # the newest date of the prices it rests on (None: the user's, none, or undated)
    oldest: str | None = None
    months_old: int | None = None  # of the oldest dated price it rests on
    stale: bool = False  # a price it rests on is older than STALE_MONTHS or undated
    undated: int = 0  # how many of the prices it rests on show no date
    sources: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """One line for a page: which price and how old, e.g. "$2.99 per GPU-hour: median of 3 published rent prices (Lambda, AWS, RunPod), 2025-03 to 2025-11"."""
        if self.usd is None:
            return f"no price: {self.basis}"
        unit = "per GPU-hour" if self.kind == "rent" else "per GPU"
        text = f"${self.usd:,.2f} {unit}: {self.basis}"
        if self.providers:
            text += f" ({', '.join(self.providers)})"
        if self.dates:
            text += (", as of " if self.as_of and self.oldest == self.as_of else ", ") + self.dates
        if self.too_old:
            text += f" (older than {STALE_MONTHS} months)"
        return text

    @property
    def dates(self) -> str:
        """When the prices it rests on were printed: "2025-11", "2025-03 to 2025-11", "undated", "2025-11, 1 undated" ("" for yours)."""
        if self.as_of is None:
            return "undated" if self.undated else ""
        text = self.as_of if self.oldest == self.as_of else f"{self.oldest} to {self.as_of}"
        return text + (f", {self.undated} undated" if self.undated else "")

    @property
    def too_old(self) -> bool:
        """Whether its oldest dated price is more than STALE_MONTHS old (an undated one says "undated" instead)."""
        return self.months_old is not None and self.months_old > STALE_MONTHS


def price_used(prices: pl.DataFrame, gpu: str, kind: str, *, override: float | None = None, today: dt.date | None = None) -> PriceUsed:
    """The price for one accelerator and kind: `override` when > 0, else the median of the published ones, else none."""
    if override is not None and override > 0:
        return PriceUsed(gpu, kind, float(override), "your price")
    rows = prices.filter((pl.col("gpu") == gpu) & (pl.col("kind") == kind)).sort("as_of")
    if rows.is_empty():
        return PriceUsed(gpu, kind, None, f"no published {kind} price in the catalogue: enter yours")
    usd = float(statistics.median(rows["usd"].to_list()))
    n = rows.height
    basis = f"the published {kind} price" if n == 1 else f"median of {n} published {kind} prices"
    dated = [d for d in rows["as_of"].to_list() if d]
    undated = rows.height - len(dated)
    age = months_between(dated[0], today or dt.date.today()) if dated else None
    return PriceUsed(
        gpu,
        kind,
        usd,
        basis,
        as_of=dated[-1] if dated else None,
        oldest=dated[0] if dated else None,
        months_old=age,
        stale=bool(undated) or (age is not None and age > STALE_MONTHS),
        undated=undated,
        sources=list(dict.fromkeys(rows["source_url"].to_list())),
        providers=list(dict.fromkeys(rows["provider"].to_list())),
    )


def price_summary(prices: pl.DataFrame, *, today: dt.date | None = None) -> pl.DataFrame:
    """Per accelerator and kind: how many published prices, their median, lowest, highest, oldest and newest date, and whether any is old."""
    now = today or dt.date.today()
    dated = pl.when(pl.col("as_of") != "").then(pl.col("as_of"))
    months = (now.year * 12 + now.month) - (dated.str.slice(0, 4).cast(pl.Int32) * 12 + dated.str.slice(5, 2).cast(pl.Int32))
    return (
        prices.group_by("gpu", "kind")
        .agg(
            pl.len().alias("prices"),
            pl.col("usd").median().alias("median_usd"),
            pl.col("usd").min().alias("lowest_usd"),
            pl.col("usd").max().alias("highest_usd"),
            dated.min().alias("oldest"),
            dated.max().alias("newest"),
            ((months.max() > STALE_MONTHS) | (dated.null_count() > 0)).alias("any_old"),
        )
        .sort("gpu", "kind")
    )


def is_old(as_of: str, today: dt.date | None = None) -> bool:
    """Whether one price counts as old: dated more than STALE_MONTHS before today, or undated."""
    return not as_of or months_between(as_of, today or dt.date.today()) > STALE_MONTHS


def parse_price(item: str, separator: str) -> tuple[str, float] | None:
    """An accelerator's price as a link (`id:usd`) or the CLI (`id=usd`) writes it; None unless it names an id and a price > 0."""
    gpu, sep, usd = item.partition(separator)
    try:
        value = float(usd)
    except ValueError:
        return None
    return (gpu.strip(), value) if sep and gpu.strip() and value > 0 else None
