"""Measured vs predicted at scale: one prediction per distinct scenario, flags per cause, one refit per dataset,
aggregated chart marks, the refit's quality rule, and a refit applied only to the accelerator it was fitted on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from core.cli import main
from core.evidence.compare import FLAG_CAUSES, compare, distinct_scenarios, summary
from core.evidence.importers import import_file, parse_file
from core.evidence.predictor import with_predictor
from core.evidence.refit import MIN_FIT_POINTS, MIN_FIT_R2, USER, expected, refit, refusal
from core.model.ceilings import evaluate
from core.model.scenario import Scenario
from core.plan.purchase import compare_accelerators
from core.present.figures import MAX_MARKS, measured_charts, measured_marks, measured_view
from core.store import Store
from tests.helpers import FIXTURES

H100_FIT = {"eff_bandwidth": 0.82, "eff_compute": 1.0, "overhead_s": 0.0004}  # what generic.csv was made with


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("scale") / "s.duckdb")


@pytest.fixture(scope="module")
def fixture_rows(store: Store) -> pl.DataFrame:
    """generic.csv: 11 decode rows on H100 and A100 (row 11 repeats row 1's scenario at 395 tokens/s, above its ceiling)."""
    return parse_file(store, (FIXTURES / "generic.csv").read_bytes(), "generic.csv").rows


def repeated(rows: pl.DataFrame, times: int, seed: int = 3) -> pl.DataFrame:
    """The rows `times` over, each copy's tokens/s moved by noise of 2% (the scenarios stay those of the fixture)."""
    rng = np.random.default_rng(seed)
    out = pl.concat([rows] * times).with_columns(pl.int_range(1, rows.height * times + 1).alias("row"))
    return out.with_columns(pl.col("tokens_per_s") * pl.Series(rng.lognormal(0.0, 0.02, out.height)))


def test_each_distinct_scenario_is_evaluated_once_and_joined_back(cat, fixture_rows, monkeypatch):
    """5,500 rows of 10 scenarios: the model sees 10 scenarios, and every row gets its own scenario's ceiling."""
    import core.evidence.compare as mod

    seen: list[int] = []
    real = mod.evaluate
    monkeypatch.setattr(mod, "evaluate", lambda c, frame, columns=None: seen.append(frame.height) or real(c, frame, columns=columns))
    rows = repeated(fixture_rows, 500)
    cmp = compare(cat, rows)
    assert seen == [10]
    assert cmp.height == 5500 and cmp["row"].to_list() == rows["row"].to_list()
    assert cmp["scenario_id"].n_unique() == 10
    # the ceiling of H100, Llama 3.1 8B bf16, batch 1, context 1024 + 128 / 2 is 1 / its step time, on every copy of rows 1 and 11
    step = evaluate(cat, pl.DataFrame({"gpu": ["h100-sxm"], "model": ["llama-3.1-8b"], "batch": [1], "context": [1088], "prompt": [1024]}))
    ceiling_b1 = 1.0 / step["step_time_s"][0]
    b1 = cmp.filter((pl.col("gpu") == "h100-sxm") & (pl.col("batch") == 1))
    assert b1.height == 1000 and b1["scenario_id"].n_unique() == 1
    assert b1["predicted_tokens_per_s"].to_numpy() == pytest.approx(np.full(1000, ceiling_b1), rel=1e-12)
    assert b1["ratio"].to_numpy() == pytest.approx(b1["tokens_per_s"].to_numpy() / ceiling_b1, rel=1e-12)


def test_distinct_scenarios_tells_apart_rows_that_differ_in_one_key_and_keeps_null_compute(fixture_rows):
    """Scenarios differing only in output length or in compute (null, the weights' default, is a key of its own) are distinct;
    equal ones (nulls included) are one."""
    base = fixture_rows.head(2)
    rows = pl.concat(
        [
            base,
            base.with_columns(pl.col("output_tokens") + 1),
            base.with_columns(pl.lit("fp8").alias("compute")),
            base.with_columns(pl.lit("bf16").alias("compute")),
            base,
        ]
    )
    assert base["compute"].null_count() == 2  # generic.csv gives no compute format: the weights' default
    distinct, sid = distinct_scenarios(rows)
    assert distinct.height == 8 and distinct["first"].to_list() == list(range(8))
    assert distinct["compute"].to_list() == [None, None, None, None, "fp8", "fp8", "bf16", "bf16"]
    assert sid.to_list() == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]


def test_flags_are_a_code_of_causes_with_their_text_built_per_code(cat, fixture_rows):
    """Row 11 (395 tokens/s, ratio 395 / 221 = 1.79 on a 16-bit ceiling) is above its ceiling and of the wrong precision,
    not of a wrong count (that needs more than 1.8); the nine other decode rows at 70-90% MBU are well tuned."""
    cmp = compare(cat, fixture_rows)
    bit = {key: 1 << i for i, (key, _) in enumerate(FLAG_CAUSES)}
    r11 = cmp.filter(pl.col("row") == 11).row(0, named=True)
    assert r11["ratio"] == pytest.approx(1.7875, abs=1e-4)
    assert r11["flag_code"] == bit["above_ceiling"] | bit["wrong_precision"]
    assert r11["flags"] == [dict(FLAG_CAUSES)["above_ceiling"], dict(FLAG_CAUSES)["wrong_precision"]]
    well = cmp.filter(pl.col("mbu").is_between(0.70, 0.90) & (pl.col("status") == "ok"))
    assert well.height == 9 and (well["flag_code"] == bit["well_tuned_decode"]).all()
    counts = summary(cmp)["flags"]
    assert counts == {key: {"above_ceiling": 1, "wrong_precision": 1, "well_tuned_decode": 9}.get(key, 0) for key, _ in FLAG_CAUSES}


@pytest.fixture(scope="module")
def pcat(cat):
    """The catalogue with the shipped predicted model."""
    return with_predictor(cat)


def test_summary_figures_of_a_dataset(pcat, fixture_rows):
    """Rows, distinct scenarios, above-ceiling count and the medians, checked against the comparison's own columns."""
    cmp = expected(pcat, compare(pcat, repeated(fixture_rows, 20)), "vLLM")
    s = summary(cmp)
    assert (s["rows"], s["distinct_scenarios"], s["above_ceiling"]) == (220, 10, 20)
    assert s["median_ratio"] == pytest.approx(float(np.median(cmp["ratio"].to_numpy())), rel=1e-12)
    assert s["median_mbu"] == pytest.approx(float(np.median(cmp["mbu"].to_numpy())), rel=1e-12)
    assert s["median_expected_ratio"] == pytest.approx(float(np.median(cmp["expected_ratio"].to_numpy())), rel=1e-12)
    assert s["by_phase"] == {"decode": {k: v for k, v in s.items() if k == "rows" or k.startswith("median_")}}


def test_the_refit_explains_the_rows_it_rests_on(pcat, fixture_rows):
    """generic.csv was made at 82% of H100's bandwidth with a 0.4 ms overhead and A100 at its own efficiencies: refitted,
    the rows under their ceiling (5 per accelerator, row 11 above its ceiling left out) are predicted closer than before."""
    rows = repeated(fixture_rows, 30)
    cmp = compare(pcat, rows)
    fit = refit(pcat, cmp, "vLLM")
    for cell in fit.cells:
        assert cell.accepted and cell.points == 30 * 5 and cell.r2 is not None and cell.r2 > 0.9
        assert cell.mape_after < cell.mape_before and cell.mape_after < 0.05
    assert set(fit.predictor.shifts[USER]) == {"h100-sxm | vLLM", "a100-80gb-sxm | vLLM"}


def test_the_quality_rule_refuses_few_points_and_a_low_r2():
    """Named constants: at least 4 points and R² 0.5; each refusal says why."""
    assert (MIN_FIT_POINTS, MIN_FIT_R2) == (4, 0.5)
    assert refusal(4, 0.5) is None
    assert "3 points under the ceiling, a refit needs at least 4" in str(refusal(3, 0.99))
    assert "R² -0.20 is below 0.5" in str(refusal(40, -0.2))
    assert "R² undefined" in str(refusal(40, float("nan")))


def test_a_refused_refit_is_not_offered_nor_applied(pcat, fixture_rows):
    """A100 rows scrambled (tokens/s shuffled across batches, / 40): its refit explains too little, so it is refused with
    the reason; only H100's shift is in the refitted predictor, and A100's rows are predicted as before."""
    a100 = fixture_rows.filter(pl.col("gpu") == "a100-80gb-sxm")
    scrambled = a100.with_columns(pl.Series("tokens_per_s", [6381.8, 105.6, 4236.1, 410.9, 1480.1]) / 40)
    rows = pl.concat([fixture_rows.filter(pl.col("gpu") == "h100-sxm"), scrambled])
    cmp = compare(pcat, rows)
    fit = refit(pcat, cmp, "vLLM")
    bad = next(c for c in fit.cells if c.gpu == "a100-80gb-sxm")
    assert not bad.accepted and bad.note.startswith("refused: R²") and bad.points == 4
    assert set(fit.predictor.shifts[USER]) == {"h100-sxm | vLLM"}
    before = expected(pcat, cmp, "vLLM")
    after = expected(pcat, cmp, "vLLM", fit.predictor)
    is_a100 = (cmp["gpu"] == "a100-80gb-sxm").to_numpy()
    assert after["expected_tokens_per_s"].to_numpy()[is_a100] == pytest.approx(
        before["expected_tokens_per_s"].to_numpy()[is_a100], rel=1e-12
    )
    assert not np.allclose(after["expected_tokens_per_s"].to_numpy()[~is_a100], before["expected_tokens_per_s"].to_numpy()[~is_a100])


def test_an_h100_refit_leaves_the_a100_of_a_comparison_unchanged(pcat, fixture_rows):
    """Compare accelerators with an H100 refit in the catalogue's predictor: A100's row is as before, H100's moves."""
    fit = refit(pcat, compare(pcat, fixture_rows.filter(pl.col("gpu") == "h100-sxm")), "vLLM")
    refitted = with_predictor(pcat, fit.predictor, tag="refit")
    sc = Scenario(model="llama-3.1-8b", batch=1)
    picked = ["a100-80gb-sxm", "h100-sxm"]
    plain, moved = compare_accelerators(pcat, picked, sc), compare_accelerators(refitted, picked, sc)

    def row(t: pl.DataFrame, g: str) -> dict[str, float]:
        return t.filter(pl.col("gpu") == g).row(0, named=True)

    assert row(moved, "a100-80gb-sxm") == row(plain, "a100-80gb-sxm")
    assert row(moved, "h100-sxm")["tokens_per_s_per_gpu"] != pytest.approx(row(plain, "h100-sxm")["tokens_per_s_per_gpu"], rel=1e-6)


def test_a_large_dataset_is_drawn_with_at_most_max_marks(cat, fixture_rows):
    """24,000 rows over 2,400 scenarios: each chart draws at most MAX_MARKS marks, the medians of each scenario, and says so;
    the marks still count every row, and the one above-ceiling scenario stays red."""
    rows = repeated(fixture_rows, 2000).with_columns(pl.col("input_tokens") + pl.col("row") % 240)
    view = measured_view(with_predictor(cat), rows, True)
    assert view.cmp.height == 22_000 and view.summary["rows"] == 22_000
    assert view.points is not None and view.rings is not None and view.batch_points is not None
    assert view.points.height + view.rings.height <= MAX_MARKS
    assert int(view.points["n"].sum()) == 22_000 and int(view.rings["n"].sum()) == 22_000
    above = view.cmp.filter(pl.col("status") == "above ceiling")
    assert int(view.points.filter(pl.col("status") == "above ceiling")["n"].sum()) == above.height
    assert "22,000 measurements drawn as" in view.note and "median of one scenario" in view.note
    roof, batch = measured_charts(cat, rows, view)
    for chart in (roof, batch):
        assert chart is not None
        spec = chart.to_dict(validate=False)
        assert sum(len(d) for d in spec["datasets"].values()) <= MAX_MARKS + 200  # the marks and the roofs' and curves' vertices
        assert spec["title"]["subtitle"] == view.note


def test_marks_are_merged_in_log_bins_when_scenarios_alone_are_too_many(cat, fixture_rows):
    """With a budget of 40 marks for 2,400 scenarios, nearby medians merge into bins; the measurements are all still counted."""
    rows = repeated(fixture_rows, 2000).with_columns(pl.col("input_tokens") + pl.col("row") % 240)
    cmp = compare(cat, rows)
    rings, points, note = measured_marks(cmp, budget=40)
    assert rings.height + points.height <= 40
    assert int(points["n"].sum()) == cmp.height and int(rings["n"].sum()) == cmp.height
    assert "log bins" in note


def test_cli_measured_prints_the_summary_and_the_refit(tmp_path, capsys):
    """`measured DATASET --refit --json` (by id and by name): the fixture's figures, the refit and its quality rule;
    an unknown dataset is one line on stderr, exit 2."""
    db = tmp_path / "m.duckdb"
    s = Store(db)
    ds = import_file(s, (FIXTURES / "generic.csv").read_bytes(), "generic.csv", name="fixture run").dataset_id
    s.close()
    for ref in (str(ds), "fixture run"):
        assert main(["measured", ref, "--refit", "--json", "--db", str(db)]) == 0
        out = json.loads(capsys.readouterr().out)
        assert (out["rows"], out["distinct_scenarios"], out["above_ceiling"]) == (11, 10, 1)
        assert out["dataset"]["name"] == "fixture run" and out["flags"]["wrong_precision"] == 1 and out["framework"] == "vLLM"
        assert (out["refit"]["min_points"], out["refit"]["min_r2"]) == (4, 0.5)
        h100 = next(f for f in out["refit"]["cells"] if f["gpu"] == "h100-sxm")
        assert h100["points"] == 5 and h100["accepted"] is True and h100["mape_after"] < h100["mape_before"]
    assert main(["measured", "no such run", "--json", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: DATASET: 'no such run' is not stored; datasets: 1 ('fixture run')") and err.count("\n") == 1
    assert "refit" not in json.loads(_run(db, str(ds)))


def _run(db: Path, ref: str) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["measured", ref, "--json", "--db", str(db)]) == 0
    return buf.getvalue()
