"""The compare page's request (core/plan/compare_request.py): one declaration for its controls, link keys, CLI options
and the view; its bounds and defaults are core's own."""

from __future__ import annotations

import argparse

import pytest
from pydantic import ValidationError

from core.model.scenario import bounds, default
from core.plan.compare_request import (
    FIELDS,
    PRICE_LINKS,
    CompareRequest,
    RequestError,
    add_request_arguments,
    from_cli,
    link_keys,
    link_price_items,
    read_link_prices,
    refused_prices_text,
    request_param,
    shown_labels,
)
from core.plan.costs import Ownership
from core.plan.purchase import Load


def test_the_ownership_fields_take_cores_bounds_and_defaults():
    """The page once allowed 1-15 years, $/kWh up to 2 and PUE up to 3 where core takes 0-20, 5 and 5."""
    for field in ("years", "usd_per_kwh", "pue", "utilization", "rent_prices"):
        assert default(field, CompareRequest) == default(field, Ownership)
    for field in ("years", "usd_per_kwh", "pue", "utilization"):
        assert bounds(field, CompareRequest) == bounds(field, Ownership)
    assert bounds("years", Ownership) == (0.0, False, 20.0, True) and bounds("pue", Ownership)[2] == 5.0
    assert bounds("output_tokens", CompareRequest) == bounds("output_tokens", Load)


def test_the_defaults_are_the_pages_first_view():
    r = CompareRequest()
    assert (r.mode, r.target, r.max_tpot_s, r.max_ttft_s, r.sort_by, r.basis, r.pay) == (
        "fixed batch",
        "custom",
        0.05,
        2.0,
        "usd_per_million_tokens",
        "predicted",
        "rent",
    )
    assert (r.requests_per_s, r.output_tokens) == (0.0, 256)
    assert r.ownership() == Ownership()
    assert r.load(2048) is None


def test_the_limits_are_the_presets_the_typed_ones_or_none():
    assert CompareRequest().limits() == (None, None)  # a fixed batch holds nothing
    typed = CompareRequest(mode="service target", max_tpot_s=0.03, max_ttft_s=1.0)
    assert typed.limits() == (0.03, 1.0) and typed.goal(8) == "TPOT ≤ 30 ms, TTFT ≤ 1 s"
    # MLPerf Inference's Llama-2-70B Interactive limits: TTFT 450 ms, TPOT 40 ms (inference_rules.adoc); typed values give way
    preset = CompareRequest(mode="service target", target="mlperf-llama2-70b-interactive", max_tpot_s=0.5, max_ttft_s=9.0)
    assert preset.limits() == (0.04, 0.45) and preset.preset is not None
    assert CompareRequest(target="mlperf-llama2-70b-interactive").goal(32) == "batch 32"  # a preset without the mode: no target
    assert CompareRequest(mode="service target", max_tpot_s=None, max_ttft_s=1.5).goal(1) == "TTFT ≤ 1.5 s"


def test_the_load_and_the_ownership_are_cores_types():
    r = CompareRequest(pay="buy", years=5, utilization=0.6, requests_per_s=20, output_tokens=512, rent_prices="any")
    assert r.ownership() == Ownership(mode="buy", years=5, utilization=0.6, rent_prices="any")
    assert r.load(1024) == Load(requests_per_s=20, input_tokens=1024, output_tokens=512)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"target": "nope"}, "target"),
        ({"sort_by": "price"}, "sort_by"),
        ({"years": 0}, "years"),
        ({"pue": 6}, "pue"),
        ({"max_tpot_s": 0}, "max_tpot_s"),
    ],
)
def test_a_value_out_of_its_declaration_is_refused_naming_the_field(changes, field):
    with pytest.raises(ValidationError) as raised:
        CompareRequest(**changes)
    assert raised.value.errors()[0]["loc"] == (field,)


def test_every_control_has_its_own_link_key_and_the_labelled_ones_their_labels():
    keys = link_keys()
    assert set(keys) == set(FIELDS) and len(set(keys.values())) == len(FIELDS)
    assert all(k.startswith("cmp_") for k in keys.values())
    assert keys["max_tpot_s"] == "cmp_tpot" and keys["utilization"] == "cmp_util"  # the keys older links carry
    labels = shown_labels()
    assert labels["cmp_basis"] == {"predicted": "expected", "ceiling": "ceiling"}
    assert labels["cmp_target"]["custom"] == "custom limits"
    assert all(request_param(n).help for n in FIELDS)


def test_the_link_parameters_list_every_control_for_the_compare_page():
    from pages.shared.params import BY_KEY

    for key in link_keys().values():
        assert BY_KEY[key].pages == ("compare",), key
    assert BY_KEY["cmp_sort"].shown == shown_labels()["cmp_sort"]


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_request_arguments(parser)
    return parser.parse_args(argv)


def test_the_cli_options_come_from_the_declaration():
    parser = argparse.ArgumentParser()
    add_request_arguments(parser)
    flags = {a.option_strings[0]: a for a in parser._actions if a.option_strings and a.dest != "help"}
    assert sorted(flags) == ["--sort", "--target", "--tpot-ms", "--ttft-s"]
    assert flags["--tpot-ms"].help.startswith("Time per output token each user sees")
    assert list(flags["--sort"].choices) == list(shown_labels()["cmp_sort"])
    own = Ownership()
    assert from_cli(_parse("--tpot-ms", "30"), own).limits() == (0.03, None)  # a limit not given is not held
    assert from_cli(_parse("--ttft-s", "1"), own).limits() == (None, 1.0)
    assert from_cli(_parse("--target", "mlperf-llama2-70b-interactive"), own).limits() == (0.04, 0.45)
    assert from_cli(_parse(), own).limits() == (None, None)
    assert from_cli(_parse("--sort", "num_gpus"), Ownership(mode="buy", years=3)).ownership() == Ownership(mode="buy", years=3)


def test_the_cli_names_its_own_option_in_an_error():
    with pytest.raises(RequestError, match="^--target: give a preset or --tpot-ms/--ttft-s, not both$"):
        from_cli(_parse("--target", "chat", "--tpot-ms", "5"), Ownership())
    with pytest.raises(RequestError, match=r"^--tpot-ms: Input should be greater than 0, got -5.0$"):
        from_cli(_parse("--tpot-ms", "-5"), Ownership())


def test_prices_in_a_link_are_read_within_cores_bounds_and_written_back_alike():
    known = {"h100-sxm", "mi300x"}
    given, refused = read_link_prices(["h100-sxm:2.5", "mi300x:5000", "nope:1", "h100"], known, "rent")
    assert given == {"h100-sxm": 2.5} and refused == ["mi300x:5000", "nope:1", "h100"]  # a rent above $1,000 per GPU-hour
    assert read_link_prices(["mi300x:15000"], known, "buy") == ({"mi300x": 15000.0}, [])
    assert link_price_items({"mi300x": 15000.0, "h100-sxm": 2.5}) == ["h100-sxm:2.5", "mi300x:15000"]
    text = refused_prices_text("rent", refused)
    assert text.startswith(f"Link parameter {PRICE_LINKS['rent']}: 3 values are not an accelerator id")
    assert "at most 1,000 US dollars" in text and text.endswith("; ignored.")
