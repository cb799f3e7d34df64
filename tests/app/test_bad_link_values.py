"""Link values no control can take are named once and ignored, and the page opens (issue 32)."""

from __future__ import annotations

import pytest

from core.present.text import escape_markdown


def _warnings(at) -> str:  # type: ignore[no-untyped-def]
    return " ".join(w.value for w in at.warning)


@pytest.mark.parametrize("value", ["inf", "-inf", "1e309", "nan"])
@pytest.mark.parametrize("key", ["batch", "num_gpus", "context", "prompt"])
def test_a_non_finite_number_in_a_link_is_named_and_the_default_used(open_page, key, value):
    at = open_page("calculator", **{key: value})  # open_page asserts the page raised nothing
    assert escape_markdown(f"link parameter {key}='{value}' is not a finite number; ignored") in _warnings(at)
    assert at.number_input(key=key).value == {"batch": 1, "num_gpus": 1, "context": 4096, "prompt": 2048}[key]


def test_non_finite_numbers_of_the_pages_own_controls_are_ignored(open_page):
    at = open_page("calculator", spec_draft_len="inf")
    assert escape_markdown("spec_draft_len='inf' is not a finite number") in _warnings(at)
    at = open_page("compare", cmp_out="1e309")
    assert escape_markdown("cmp_out='1e309' is not a finite number") in _warnings(at)


def test_a_30_kb_id_is_cut_when_named(open_page):
    at = open_page("home", gpu="A" * 30_000)
    text = _warnings(at)
    assert escape_markdown("(30,000 characters) is not in the catalogue; ignored") in text and len(text) < 1_000
    assert at.selectbox(key="gpu").value == "h100-sxm"


def test_a_thousand_unknown_accelerators_are_one_message(open_page):
    at = open_page("compare", cmp_gpus=[f"x{i}" for i in range(900)] + ["mi300x"])
    lines = [w.value for w in at.warning if escape_markdown("cmp_gpus") in w.value]
    assert len(lines) == 1 and escape_markdown("900 values are not in the catalogue") in lines[0]


def test_a_rent_price_above_the_scenarios_bound_is_named_not_raised(open_page):
    """cmp_rent=h100-sxm:5000 is above the 1,000 $/GPU-hour a scenario takes: one warning, the published price used."""
    at = open_page("compare", cmp_gpus=["h100-sxm", "mi300x"], cmp_rent=["h100-sxm:5000", "mi300x:2.5"])
    assert "cmp_rent: 1 value is not an accelerator id and a price above 0 and at most 1,000 US dollars" in _warnings(at)


@pytest.mark.parametrize("value", ["nan,1,0.0004", "inf,1,0", "0.8,nan,inf"])
def test_an_older_links_calibration_with_non_finite_factors_is_named_and_ignored(open_page, value):
    """cal= (an earlier version's calibration) with NaN or infinite factors: named and ignored, never a ValidationError."""
    at = open_page("home", cal=value)
    assert any("is a calibration of an earlier version" in w.value for w in at.warning)
