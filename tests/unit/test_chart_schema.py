"""Every chart the pages draw is a valid Vega-Lite spec, whole, against the schema Altair ships.

The builders make their specs with `to_dict(validate=False)` (core/present/charts.py, figures.py): Altair checks
some chart objects as they are made, never the spec as the browser receives it. These tests check each page's
whole spec (the named datasets still as rows), so a builder that makes an invalid chart fails here, not as a
blank chart on a reviewer's screen.
"""

from __future__ import annotations

from typing import Any

import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema
from jsonschema import ValidationError

from core.evidence.importers import parse_file
from core.model.scenario import Scenario
from core.model.sweep import scenario_grid, sweep
from core.plan.compare_request import CompareRequest
from core.present.figures import (
    calculator_view,
    compare_view,
    measured_charts,
    measured_view,
    ridge_view,
    roofline_at,
    roofline_view,
    sweep_frontier,
)
from core.store import Store
from tests.helpers import FIXTURES

SCHEMA = load_schema()
SC = Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=32, context=1024, usd_per_gpu_hour=2.5)


def valid(spec: dict[str, Any] | None) -> None:
    assert spec is not None
    assert "vega-lite" in spec["$schema"]
    validate_jsonschema(spec, SCHEMA)  # raises with the offending path


def test_the_checker_refuses_an_invalid_chart():
    """The check is the real one: a mark Vega-Lite does not have, or a misspelt encoding type, fails it."""
    with pytest.raises(ValidationError, match="pointy"):
        validate_jsonschema({"data": {"values": []}, "mark": "pointy"}, SCHEMA)
    with pytest.raises(ValidationError, match="quantitive"):
        validate_jsonschema({"data": {"values": []}, "mark": "point", "encoding": {"x": {"field": "a", "type": "quantitive"}}}, SCHEMA)


@pytest.mark.parametrize(
    ("overlay", "precisions", "big"),
    [((), (), False), (("b200", "mi300x"), ("bf16", "fp8"), False), (("l4",), ("fp8",), True)],
)
def test_roofline_charts_are_valid(cat, overlay, precisions, big):
    valid(roofline_at(cat, roofline_view(cat, SC, overlay, precisions), SC, big=big, operations=False).chart)


def test_ridge_charts_are_valid(cat):
    view = ridge_view(cat, "bf16", [], [], (2016, 2026), 64, "bf16", False, "h100-sxm")
    valid(view.chart)
    valid(view.groups)


def test_calculator_charts_are_valid(cat):
    view = calculator_view(cat, SC)
    for spec in (view.breakdown, view.memory, view.frontier):
        valid(spec)


def test_compare_and_sweep_charts_are_valid(cat):
    view = compare_view(cat, ["h100-sxm", "h200-sxm", "mi300x", "l40s"], SC, CompareRequest(mode="service target"))
    for spec in (view.chart, view.frontier, view.frontier_cost):
        valid(spec)
    rows = sweep(cat, scenario_grid(["h100-sxm", "b200"], ["llama-3.1-70b"], weights=["bf16", "fp8"], batches=[1, 8, 64], num_gpus=[2]))
    valid(sweep_frontier(rows, max_tpot_s=0.05, title="Llama 3.1 70B on H100 SXM and B200"))


def test_measured_charts_are_valid(cat, tmp_path):
    rows = parse_file(Store(tmp_path / "m.duckdb"), (FIXTURES / "generic.csv").read_bytes(), "generic.csv").rows
    roof, batch = measured_charts(cat, rows, measured_view(cat, rows, True))
    valid(roof.to_dict(validate=False))
    assert batch is not None
    valid(batch.to_dict(validate=False))
