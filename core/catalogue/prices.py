"""Published prices of accelerators, each with its seller, date and source, and the one a figure uses.

data/seed/prices.csv (format: data/seed/PRICES_FORMAT.md) holds one row per
published price: `rent` is US$ per GPU-hour, `buy` US$ per GPU (a server's
price divided by its GPUs, said so in the row's note), and its `basis` says
what the price is (`BASES`). A figure uses the median of like prices and
says which (`price_used`):

- rent: on-demand instance rates only, unless the user asks for every rent
  price (`RATES`); serverless, managed-endpoint, marketplace-floor and
  second-hand figures are shown but left out of the default median;
- buy: list prices and quotes where there are any, else street prices, else
  estimates and aggregators' listings (`BUY_TIERS`);
- one seller, one vote: a seller's lowest price of those counts once.

A price the user types overrides it. A price whose date (`as_of`, the month
the source shows) is more than `STALE_MONTHS` before today, or whose source
shows no date, is marked as old wherever it is used.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.catalogue.specs import SLUG

KINDS = ("rent", "buy")
#: What a price is, by kind (the `basis` column; data/seed/PRICES_FORMAT.md says what each means).
BASES: dict[str, tuple[str, ...]] = {
    "rent": ("on-demand", "reserved", "spot", "serverless", "endpoint", "marketplace", "reported"),
    "buy": ("list", "quote", "street", "estimate", "aggregator"),
}
#: How each basis is named in a sentence (plural).
BASIS_WORDS = {
    "on-demand": "on-demand instance rates",
    "reserved": "reserved rates",
    "spot": "spot rates",
    "serverless": "serverless rates",
    "endpoint": "managed-endpoint rates",
    "marketplace": "marketplace floor prices",
    "reported": "second-hand rate reports",
    "list": "list prices",
    "quote": "quotes",
    "street": "street prices",
    "estimate": "estimates",
    "aggregator": "aggregators' listings",
}
#: Which rent prices a median uses: "on-demand" (instance rates only, the default) or "any" (every published rent price).
RATES = ("on-demand", "any")
#: How each choice of RATES is labelled on a page (and in a link).
RATE_LABELS = {"on-demand": "on-demand instance rates", "any": "every rent price"}
#: Buy prices a median rests on, best first: the first tier with any price of the accelerator is used.
BUY_TIERS: tuple[tuple[str, ...], ...] = (("list", "quote"), ("street",), ("estimate", "aggregator"))
#: A price dated more than this many months before today is marked as old.
STALE_MONTHS = 12
#: What each kind of price is per.
UNITS = {"rent": "$ per GPU-hour", "buy": "$ per GPU"}

PRICE_SCHEMA = {
    "gpu": pl.String,
    "kind": pl.String,
    "basis": pl.String,
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
    #: what the price is: one of BASES[kind]
    basis: str
    usd: Annotated[float, Field(gt=0, le=5_000_000)]
    provider: Annotated[str, Field(min_length=1)]
    offer: Annotated[str, Field(min_length=1)]
    region: str = ""
    #: the month the source shows for the price (YYYY-MM); empty when it shows none (then the price counts as old)
    as_of: Annotated[str, Field(pattern=r"^((19|20)\d\d-(0[1-9]|1[0-2]))?$")] = ""
    source_url: Annotated[str, Field(pattern=r"^https?://\S+$")]
    note: str = ""

    @model_validator(mode="after")
    def _basis_of_kind(self) -> Price:
        if self.basis not in BASES[self.kind]:
            raise ValueError(f"basis {self.basis!r} is not a {self.kind} basis: one of {', '.join(BASES[self.kind])}")
        return self


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
            where = ".".join(str(x) for x in err["loc"]) or "basis"
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
    providers: list[str] = field(default_factory=list)  # the sellers whose prices it rests on
    bases: tuple[str, ...] = ()  # what those prices are (BASES)
    left_out: int = 0  # published prices of the kind that are not of those bases

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


def seller(provider: pl.Expr) -> pl.Expr:
    """Who sells: the provider's name before any parenthesis ("NVIDIA (reported by PC Gamer)" -> "NVIDIA"), so that one seller
    quoted by two pages, or with two instance sizes, is one seller."""
    return provider.str.split(" (").list.first().str.strip_chars()


def _words(bases: Sequence[str], n: int) -> str:
    names = [BASIS_WORDS[b] if n != 1 else BASIS_WORDS[b].replace("prices", "price").replace("rates", "rate").rstrip("s") for b in bases]
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def chosen_prices(prices: pl.DataFrame, gpu: str, kind: str, rates: str = "on-demand") -> tuple[pl.DataFrame, tuple[str, ...]]:
    """The published prices of one accelerator and kind a median uses, and their bases: rent, the on-demand instance rates
    (`rates` "any": every rent price); buy, the first of BUY_TIERS with any price. Then one row per seller: its lowest."""
    rows = prices.filter((pl.col("gpu") == gpu) & (pl.col("kind") == kind))
    if kind == "rent":
        bases: tuple[str, ...] = ("on-demand",) if rates == "on-demand" else BASES["rent"]
    else:
        present = set(rows["basis"].to_list())
        bases = next((t for t in BUY_TIERS if present & set(t)), BUY_TIERS[0])
    rows = rows.filter(pl.col("basis").is_in(list(bases)))
    used = rows.with_columns(seller(pl.col("provider")).alias("seller"))
    used = used.sort("usd", "as_of").group_by("seller", maintain_order=True).first().drop("seller")
    present_bases = tuple(b for b in bases if b in set(used["basis"].to_list()))
    return used.sort("as_of"), present_bases


def median_rents(prices: pl.DataFrame, rates: str = "on-demand") -> dict[str, float]:
    """Every accelerator's rent price as `price_used` gives it (the median over sellers of each seller's lowest like
    price), in one pass over the table: what the engine's cost columns read. Accelerators with no such price are absent."""
    bases = ("on-demand",) if rates == "on-demand" else BASES["rent"]
    rows = prices.filter((pl.col("kind") == "rent") & pl.col("basis").is_in(list(bases)))
    per_seller = rows.group_by("gpu", seller(pl.col("provider")).alias("seller")).agg(pl.col("usd").min())
    medians = per_seller.group_by("gpu").agg(pl.col("usd").median())
    return {str(g): float(u) for g, u in medians.iter_rows()}


def price_used(
    prices: pl.DataFrame,
    gpu: str,
    kind: str,
    *,
    override: float | None = None,
    today: dt.date | None = None,
    rates: str = "on-demand",
) -> PriceUsed:
    """The price for one accelerator and kind: `override` when > 0, else the median of the like published ones
    (`chosen_prices`: one vote per seller), else none."""
    if override is not None and override > 0:
        return PriceUsed(gpu, kind, float(override), "your price")
    every = prices.filter((pl.col("gpu") == gpu) & (pl.col("kind") == kind))
    if every.is_empty():
        return PriceUsed(gpu, kind, None, f"no published {kind} price in the catalogue: enter yours")
    rows, bases = chosen_prices(prices, gpu, kind, rates)
    if rows.is_empty():
        kinds = every.group_by("basis").len().sort("basis")
        others = ", ".join(f"{n} {_words([b], n)}" for b, n in kinds.iter_rows())
        return PriceUsed(
            gpu, kind, None, f"no on-demand instance rate published ({others}): use every rent price, or enter yours", left_out=every.height
        )
    usd = float(statistics.median(rows["usd"].to_list()))
    n = rows.height
    if n == 1:
        same = every.filter(pl.col("basis").is_in(list(bases))).height
        basis = f"the published {_words(bases, 1)}" if same == 1 else f"the lowest of one seller's {same} {_words(bases, same)}"
    else:
        basis = f"median of {n} sellers' {_words(bases, n)}, each its lowest"
    left = every.height - every.filter(pl.col("basis").is_in(list(bases))).height
    if left:
        basis += f"; {left} other {kind} {'price' if left == 1 else 'prices'} not used"
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
        providers=list(dict.fromkeys(rows.select(seller(pl.col("provider")))["provider"].to_list())),
        bases=bases,
        left_out=left,
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
