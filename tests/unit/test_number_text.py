"""Numbers as people write them: the significant-figure formatter, the plural helper, table formats, CSV precision.

Every expected value is written out by hand (how a person writes the number), not taken from the code.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from core.present.tables import CSV_DIGITS, csv_ready, number_format, prices_display, table_width
from core.present.text import DASH, plural, si, sig


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (116.6667, "117"),  # the "116.6667"
        (4.6429, "4.64"),  # the "4.6429 ms"
        (1530.0, "1,530"),  # the seed's ~1,530 tok/s, not "1530.0"
        (157.29999999999998, "157"),  # float noise never shows
        (0.00819, "0.00819"),
        (12346.7, "12,347"),  # no digit left of the point is rounded away in prose
        (1024, "1,024"),
        (-4.6429, "-4.64"),
        (0, "0"),
        (2.5, "2.50"),  # three figures, the trailing zero included
        (9.996, "10.0"),  # rounds up to two digits before the point: still three figures, not "10.00"
        (99.96, "100"),
    ],
)
def test_sig_writes_three_significant_figures_with_separators(value: float, written: str) -> None:
    assert sig(value) == written


def test_sig_other_digit_counts_and_missing_values() -> None:
    assert sig(116.6667, 4) == "116.7"
    assert sig(3.14159, 2) == "3.1"
    assert sig(None) == DASH == "—"
    assert sig(float("nan")) == "—"
    assert sig(math.inf) == "∞" and sig(-math.inf) == "-∞"


def test_si_picks_the_prefix_after_rounding() -> None:
    assert si(999.6e9, "FLOP/s") == "1.00 TFLOP/s"  # not "1,000 GFLOP/s"
    assert si(3.35e12, "B/s") == "3.35 TB/s"
    assert si(80e9, "B") == "80.0 GB"


@pytest.mark.parametrize(
    ("count", "noun", "form", "written"),
    [
        (1, "sequence", None, "1 sequence"),
        (2, "sequence", None, "2 sequences"),
        (1, "measurement", None, "1 measurement"),
        (0, "measurement", None, "0 measurements"),
        (1024, "GPU", None, "1,024 GPUs"),
        (1, "accelerator", None, "1 accelerator"),
        (3, "batch", "batches", "3 batches"),
        (1, "batch", "batches", "1 batch"),
    ],
)
def test_plural_agrees_with_its_count(count: int, noun: str, form: str | None, written: str) -> None:
    assert plural(count, noun, form) == written


def test_number_format_per_column() -> None:
    """Streamlit's sprintf ("%,.3g": toPrecision(3), then separators) gives 117, 4.64, 1,530; whole columns stay whole."""
    assert number_format(pl.Series([116.6667, 4.6429, 1530.0])) == "%,.3g"
    assert number_format(pl.Series([80.0, 1128.0, None, float("nan")])) == "%,.0f"  # 1,128 GB, not 1,130
    assert number_format(pl.Series([0.5, 2.0])) == "%,.3g"
    assert number_format(pl.Series([], dtype=pl.Float64)) == "%,.3g"
    assert number_format(pl.Series([1.5]), digits=4) == "%,.4g"


def test_csv_keeps_precision_without_float_noise() -> None:
    frame = pl.DataFrame(
        {
            "tokens/s": [157.29999999999998, 0.1 + 0.2, 1530.0, 123456.789012345, None, float("nan")],
            "name": ["=cmd", "a", "b", "c", "d", "e"],
            "batch": [1, 2, 3, 4, 5, 6],
        }
    )
    text = csv_ready(frame).write_csv()
    lines = text.splitlines()
    assert lines[0] == "tokens/s,name,batch"
    assert lines[1] == "157.3,'=cmd,1"  # 12 significant digits drop the noise; a formula is made inert
    assert lines[2] == "0.3,a,2"
    assert lines[3] == "1530.0,b,3"
    assert lines[4] == "123456.789012,c,4"  # full precision to 12 significant digits
    assert lines[5] == ",d,5" and lines[6] == ",e,6"  # missing and NaN: empty cells, never "nan"
    assert CSV_DIGITS == 12


def test_table_width_estimate_grows_with_columns_and_headers() -> None:
    one = pl.DataFrame({"accelerator": ["NVIDIA H100 SXM5 80GB"]})
    # 21 characters at 7.5 px + 16 px padding: about 174 px
    assert table_width(one) == round(21 * 7.5 + 16)
    wide = pl.DataFrame({f"time per output token {i} (ms)": [4.6429] for i in range(12)})
    assert table_width(wide) > 780  # wider than the main column at 1280 px: the page says it scrolls


def test_prices_without_a_region_show_a_dash() -> None:
    prices = pl.DataFrame(
        {
            "gpu": ["h100-sxm", "h100-sxm"],
            "kind": ["rent", "rent"],
            "basis": ["on-demand", "serverless"],
            "usd": [2.5, 3.4309],
            "provider": ["A", "B"],
            "offer": ["x", "y"],
            "region": ["", "us-east-1"],
            "as_of": ["2026-09", ""],
            "source_url": ["https://a", "https://b"],
            "note": ["", ""],
        }
    )
    shown = prices_display(prices, ["h100-sxm"], "rent", {"h100-sxm": "NVIDIA H100"})
    assert shown["as of"].to_list() == ["2026-09", "undated"]  # newest first
    assert shown["region"].to_list() == [None, "us-east-1"]  # the empty region is missing, drawn as a dash
    # what each is, and that the default median uses the on-demand rate alone
    assert shown["what it is"].to_list() == ["on-demand", "serverless"] and shown["in median"].to_list() == [True, False]
