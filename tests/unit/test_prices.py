"""Published prices (data/seed/prices.csv) and the costs of renting or owning (core.catalogue.prices, core.plan.costs).

Every expected figure is computed here by hand from the seed CSV (read with
the csv module, not the app's reader) or from the formulas as the issue
states them.
"""

from __future__ import annotations

import csv
import datetime as dt
import statistics
from pathlib import Path

import polars as pl
import pytest

from core.catalogue.prices import PRICE_SCHEMA, PriceError, price_seed_frame, price_summary, price_used
from core.plan.costs import (
    Ownership,
    break_even_months,
    energy_usd_per_hour,
    owned_usd_per_gpu_hour,
    served_usd_per_gpu_hour,
    usd_per_million_tokens,
)
from core.store import SEED

HEADER = "gpu,kind,basis,usd,provider,offer,region,as_of,source_url,note"


def _seed_rows() -> list[dict[str, str]]:
    with (SEED / "prices.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_seed_prices_cover_20_rented_and_10_bought_accelerators_with_sources_and_dates():
    """Issue 16: at least 20 accelerators with a rent price and 10 with a buy price; every row has an http(s) source,
    a provider, and a date (YYYY-MM) or an empty date said to be old."""
    rows = _seed_rows()
    rented = {r["gpu"] for r in rows if r["kind"] == "rent"}
    bought = {r["gpu"] for r in rows if r["kind"] == "buy"}
    assert len(rented) >= 20, sorted(rented)
    assert len(bought) >= 10, sorted(bought)
    accelerators = {r["id"] for r in csv.DictReader((SEED / "accelerators.csv").open(encoding="utf-8"))}
    for r in rows:
        assert r["gpu"] in accelerators
        assert r["source_url"].startswith(("https://", "http://")) and r["provider"].strip()
        assert r["as_of"] == "" or (len(r["as_of"]) == 7 and r["as_of"][4] == "-")
        assert float(r["usd"]) > 0
        assert r["note"].strip(), f"{r['gpu']} {r['provider']}: every price says how it was read"


def _one_per_seller(rows: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    """Each seller's (the provider before any parenthesis) lowest price, by hand."""
    best: dict[str, dict[str, str]] = {}
    for r in rows:
        who = r["provider"].split(" (")[0].strip()
        if who not in best or float(r["usd"]) < float(best[who]["usd"]):
            best[who] = r
    return best


def test_the_median_of_the_sellers_on_demand_rates_is_used(cat):
    """H100 SXM: the price used is the median of its on-demand rent rows in the CSV, one per seller (Lambda's 8x rate,
    not also its 1x), and the label names how many and the dates."""
    rows = [r for r in _seed_rows() if r["gpu"] == "h100-sxm" and r["kind"] == "rent" and r["basis"] == "on-demand"]
    votes = _one_per_seller(rows)
    assert len(votes) == len(rows) - 1 and votes["Lambda"]["offer"] == "8x NVIDIA H100 SXM"
    expected = statistics.median(float(r["usd"]) for r in votes.values())
    used = cat.price("h100-sxm", "rent", today=dt.date(2026, 12, 1))
    assert used.usd == pytest.approx(expected)
    assert used.basis == f"median of {len(votes)} sellers' on-demand instance rates, each its lowest"
    dates = sorted(r["as_of"] for r in votes.values() if r["as_of"])
    assert (used.oldest, used.as_of) == (dates[0], dates[-1])
    assert f"${expected:,.2f} per GPU-hour" in used.label
    # the engine falls back to it where the scenario has no price of its own
    assert cat.hardware.rent_usd_per_hour[cat.gpu_index["h100-sxm"]] == pytest.approx(expected)


def test_your_price_overrides_and_a_missing_price_says_so(cat):
    """A typed price wins; an accelerator nobody prices has no price and says to enter one."""
    assert cat.price("h100-sxm", "rent", override=1.5).usd == 1.5
    assert cat.price("h100-sxm", "rent", override=1.5).basis == "your price"
    none = cat.price("mi355x", "rent")
    assert none.usd is None and "enter yours" in none.label


def _frame(*rows: tuple[str, str, float, str], basis: str = "on-demand") -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "gpu": g,
                "kind": k,
                "basis": basis if k == "rent" else "list",
                "usd": u,
                "provider": p,
                "offer": "x",
                "region": "",
                "as_of": d,
                "source_url": "https://x",
                "note": "",
            }
            for g, k, u, p, d in [(*r[:3], f"p{i}", r[3]) for i, r in enumerate(rows)]
        ],
        schema=PRICE_SCHEMA,
    )


def test_a_price_older_than_12_months_or_undated_is_marked_old():
    """13 months before today is old, 12 is not; a price without a date counts as old."""
    today = dt.date(2026, 12, 1)
    fresh = price_used(_frame(("x", "rent", 2.0, "2025-12")), "x", "rent", today=today)
    old = price_used(_frame(("x", "rent", 2.0, "2025-11")), "x", "rent", today=today)
    undated = price_used(_frame(("x", "rent", 2.0, "")), "x", "rent", today=today)
    assert (fresh.months_old, fresh.stale) == (12, False)
    assert (old.months_old, old.stale) == (13, True) and "older than 12 months" in old.label
    assert undated.stale and undated.as_of is None and "undated" in undated.label
    summary = price_summary(
        _frame(("x", "rent", 1.0, "2026-06"), ("x", "rent", 3.0, "2024-01"), ("x", "rent", 8.0, "2026-01")), today=today
    )
    row = summary.row(0, named=True)
    assert (row["prices"], row["median_usd"], row["lowest_usd"], row["highest_usd"]) == (3, 3.0, 1.0, 8.0)
    assert (row["oldest"], row["newest"], row["any_old"]) == ("2024-01", "2026-06", True)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("h100-sxm,lease,on-demand,2.0,AWS,p5,,2025-01,https://aws.amazon.com,n", "kind"),
        ("h100-sxm,rent,on-demand,-1,AWS,p5,,2025-01,https://aws.amazon.com,n", "usd"),
        ("h100-sxm,rent,on-demand,2.0,AWS,p5,,2025-13,https://aws.amazon.com,n", "as_of"),
        ("h100-sxm,rent,on-demand,2.0,AWS,p5,,2025-01,aws.amazon.com,n", "source_url"),
        ("h999,rent,on-demand,2.0,AWS,p5,,2025-01,https://aws.amazon.com,n", "unknown accelerator 'h999'"),
        ("h100-sxm,rent,list,2.0,AWS,p5,,2025-01,https://aws.amazon.com,n", "basis: Value error, basis 'list' is not a rent basis"),
        ("h100-sxm,buy,spot,2.0,AWS,p5,,2025-01,https://aws.amazon.com,n", "basis 'spot' is not a buy basis"),
        ("h100-sxm,rent,,2.0,AWS,p5,,2025-01,https://aws.amazon.com,n", "basis"),
    ],
)
def test_a_bad_price_row_is_refused_naming_its_row_and_field(tmp_path: Path, line: str, message: str):
    (tmp_path / "prices.csv").write_text(f"{HEADER}\n{line}\n", encoding="utf-8")
    with pytest.raises(PriceError, match="row 2") as err:
        price_seed_frame(tmp_path, {"h100-sxm"})
    assert message in str(err.value)


def test_owning_a_gpu_costs_its_price_over_the_years_plus_energy_over_the_utilisation():
    """$30,000, 700 W, 5 years, $0.10/kWh, PUE 1.5: 30,000 / 43,800 + 0.7 x 1.5 x 0.10 = 0.68493 + 0.105 = $0.78993 per hour;
    at 50% utilisation an hour of serving costs $1.57986, and 1,000 tokens/s on 2 GPUs cost 1.57986 x 2 / 3.6 = $0.87770 per million."""
    own = Ownership(mode="buy", years=5, usd_per_kwh=0.10, pue=1.5, utilization=0.5)
    assert energy_usd_per_hour(700, own) == pytest.approx(0.105)
    hourly = owned_usd_per_gpu_hour(30_000, 700, own)
    assert hourly == pytest.approx(30_000 / (5 * 8760) + 0.105)
    assert hourly == pytest.approx(0.789931, rel=1e-5)
    served = served_usd_per_gpu_hour(hourly, own)
    assert served == pytest.approx(1.579863, rel=1e-5)
    assert usd_per_million_tokens(served, 2, 1000.0) == pytest.approx(0.877702, rel=1e-5)
    # renting on demand: the hours are paid only while used, so utilisation does not divide
    assert served_usd_per_gpu_hour(2.5, Ownership(mode="rent", utilization=0.5)) == 2.5
    assert usd_per_million_tokens(2.5, 1, 0.0) is None


def test_buying_beats_renting_after_the_months_the_savings_take_to_repay_the_price():
    """$30,000 against $2.50/h rented at 50%: each month saves 730 x (0.5 x 2.50 - 0.105) = $835.85, so 35.89 months;
    a rent below the energy cost never repays."""
    own = Ownership(mode="buy", years=5, usd_per_kwh=0.10, pue=1.5, utilization=0.5)
    assert break_even_months(30_000, 2.5, 700, own) == pytest.approx(30_000 / (730 * 1.145))
    assert break_even_months(30_000, 2.5, 700, own) == pytest.approx(35.893, rel=1e-4)
    assert break_even_months(30_000, 0.2, 700, own) is None


def test_the_sweep_names_the_price_behind_each_accelerators_cost(cat):
    """The sweep's sentence: the TPU v6e's one published rent price (2024-12, so older than 12 months today), and 'none
    published' for an accelerator nobody rents out on demand."""
    from core.present.readings import prices_used

    rows = [r for r in _seed_rows() if r["gpu"] == "tpu-v6e" and r["kind"] == "rent"]
    assert len(rows) == 1 and rows[0]["as_of"] == "2024-12"
    text = prices_used(cat, ["tpu-v6e", "mi355x"])
    assert (
        f"$ {float(rows[0]['usd']):,.2f}".replace(" ", "") + " (the published on-demand instance rate, 2024-12, older than 12 months)"
        in text
    )
    assert "AMD Instinct MI355X: none published" in text


def test_the_rent_median_uses_on_demand_rates_unless_every_rent_price_is_asked_for(cat):
    """MI300X: two on-demand rates (DigitalOcean $1.99, Crusoe $3.45) and three second-hand reports of a research note
    ($6, $6, $1.85). The median is that of the two on-demand rates, $2.72, and says three prices are not used; with every
    rent price it is the median of the five sellers, $3.45."""
    rows = [r for r in _seed_rows() if r["gpu"] == "mi300x" and r["kind"] == "rent"]
    on_demand = sorted(float(r["usd"]) for r in rows if r["basis"] == "on-demand")
    assert on_demand == [1.99, 3.45] and sorted(r["basis"] for r in rows).count("reported") == 3
    used = cat.price("mi300x", "rent")
    assert used.usd == pytest.approx((1.99 + 3.45) / 2) == pytest.approx(2.72)
    assert used.basis == "median of 2 sellers' on-demand instance rates, each its lowest; 3 other rent prices not used"
    every = cat.price("mi300x", "rent", rates="any")
    assert every.usd == pytest.approx(statistics.median([1.99, 3.45, 6.0, 6.0, 1.85])) == pytest.approx(3.45)
    assert every.left_out == 0 and len(every.providers) == 5


def test_one_seller_counts_once_with_its_lowest_rate():
    """Lambda's 8x B200 rate $6.69 and 1x rate $6.99 are one vote at $6.69: the median of {6.69, 8.00} is 7.345, not the
    7.00 of all three rows."""
    frame = _frame(("b200", "rent", 6.69, "2026-09"), ("b200", "rent", 6.99, "2026-09"), ("b200", "rent", 8.0, "2026-09"))
    frame = frame.with_columns(pl.Series("provider", ["Lambda", "Lambda (1x)", "CoreWeave"]))
    used = price_used(frame, "b200", "rent")
    assert used.usd == pytest.approx((6.69 + 8.0) / 2)
    assert used.providers == ["Lambda", "CoreWeave"] or used.providers == ["CoreWeave", "Lambda"]


def test_an_accelerator_with_no_on_demand_rate_has_no_default_rent_price_and_says_what_there_is(cat):
    """The RTX 5090's one rent price is a marketplace floor (Akash, $0.67): no on-demand price is used unless every rent
    price is asked for; the message says what was published."""
    rows = [r for r in _seed_rows() if r["gpu"] == "rtx-5090" and r["kind"] == "rent"]
    assert [(r["basis"], float(r["usd"])) for r in rows] == [("marketplace", 0.67)]
    none = cat.price("rtx-5090", "rent")
    assert none.usd is None and "no on-demand instance rate published (1 marketplace floor price)" in none.label
    assert cat.price("rtx-5090", "rent", rates="any").usd == pytest.approx(0.67)
    assert cat.hardware.rent_usd_per_hour[cat.gpu_index["rtx-5090"]] != cat.hardware.rent_usd_per_hour[cat.gpu_index["rtx-5090"]]


@pytest.mark.parametrize(
    ("gpu", "expected", "basis"),
    [
        ("h100-sxm", 317_000 / 8, "the published quote; 1 other buy price not used"),  # Thinkmate's quote over HF's catalogue $30k
        ("dgx-spark", 3999.0, "the lowest of one seller's 2 list prices; 1 other buy price not used"),  # list over SolaFide's $4,700
        ("rtx-6000-ada", 7378.0, "the published street price; 1 other buy price not used"),  # retailers over pcpartdb's $6,799
        ("mi300x", 10_000.0, "the lowest of one seller's 2 estimates"),  # one analyst's range: one vote
    ],
)
def test_buy_prices_rank_list_and_quotes_above_street_prices_above_estimates(cat, gpu, expected, basis):
    rows = [r for r in _seed_rows() if r["gpu"] == gpu and r["kind"] == "buy"]
    assert rows, gpu
    used = cat.price(gpu, "buy")
    assert used.usd == pytest.approx(expected)
    assert used.basis == basis


def test_no_price_rests_on_a_mirror_or_a_syndicated_copy():
    """Issue 33: prices cite the page that printed them. A copy is named only in a note, beside the original it copies;
    the two rows whose originals could not be found (a syndicated H100 PCIe street price, a copy of Gizmodo's MacBook Pro
    price) are left out."""
    copies = ("siteproxy.", "trendingfeeds.", "newsflash.city", "rp.liu233w.com", "web.archive.org")
    cited = [r["source_url"] for r in _seed_rows()]
    assert [u for u in cited if any(c in u for c in copies)] == []
    assert not [r for r in _seed_rows() if r["gpu"] in ("h100-pcie", "m4-max") and r["kind"] == "buy"]


def test_the_engines_rent_prices_are_each_accelerators_price_used(cat):
    """median_rents (one pass, for the engine's cost columns) gives every accelerator the rent price_used gives it, for
    both rent rules; accelerators with none are absent."""
    from core.catalogue.prices import median_rents, price_used

    for rates in ("on-demand", "any"):
        fast = median_rents(cat.prices, rates)
        for gpu in cat.gpus["id"].to_list():
            slow = price_used(cat.prices, gpu, "rent", rates=rates).usd
            assert fast.get(gpu) == (pytest.approx(slow, rel=1e-12) if slow is not None else None), (rates, gpu)
        assert len(fast) >= 10
