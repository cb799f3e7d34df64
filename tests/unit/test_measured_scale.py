"""Measured vs predicted at scale: one prediction per distinct scenario, flags per cause, one calibration per dataset,
aggregated chart marks, the calibration's quality rule, and a fit applied only to the accelerator it was fitted on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from core.cli import main
from core.evidence.calibration import MIN_FIT_POINTS, MIN_FIT_R2, calibrate, calibration_fits, compare_calibrated, refusal
from core.evidence.compare import FLAG_CAUSES, compare, distinct_scenarios, summary
from core.evidence.importers import import_file, parse_file
from core.model.ceilings import ceiling, evaluate
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


def test_summary_figures_of_a_dataset(cat, fixture_rows):
    """Rows, distinct scenarios, above-ceiling count and the medians, checked against the comparison's own columns."""
    cmp, cal = compare_calibrated(cat, repeated(fixture_rows, 20), True)
    s = summary(cmp)
    assert (s["rows"], s["distinct_scenarios"], s["above_ceiling"]) == (220, 10, 20)
    assert s["median_ratio"] == pytest.approx(float(np.median(cmp["ratio"].to_numpy())), rel=1e-12)
    assert s["median_mbu"] == pytest.approx(float(np.median(cmp["mbu"].to_numpy())), rel=1e-12)
    assert s["by_phase"] == {"decode": {k: v for k, v in s.items() if k == "rows" or k.startswith("median_")}}
    assert s["median_calibrated_ratio"] == pytest.approx(1.0, abs=0.01)  # the fixture's own efficiencies, 2% noise


def _fit_per_row(cmp: pl.DataFrame, gpu: str) -> np.ndarray:
    """The fit done the direct way: one weighted least-squares row per measurement (decode: time = overhead + memory time / eff)."""
    g = cmp.filter((pl.col("gpu") == gpu) & (pl.col("status") == "ok"))
    y = (g["batch"] / g["tokens_per_s"]).to_numpy()
    x = np.column_stack([np.ones(g.height), g["memory_bound_time_s"].to_numpy(), g["compute_bound_time_s"].to_numpy()])
    if not (x[:, 2] > 0).any():
        x = x[:, :2]
    w = 1.0 / y
    coef, *_ = np.linalg.lstsq(x * w[:, None], (y - g["comm_time_s"].to_numpy()) * w, rcond=None)
    return coef


def test_calibration_fits_once_per_scenario_exactly_as_per_row(cat, fixture_rows, monkeypatch):
    """Compared once, fitted once: the fit from per-scenario sums equals the per-row least squares, and 1 / coefficient is the efficiency."""
    import core.evidence.calibration as cal_mod

    rows = repeated(fixture_rows, 300)
    calls: list[int] = []
    real = cal_mod.compare_scenarios
    monkeypatch.setattr(cal_mod, "compare_scenarios", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(cal_mod, "compare", lambda *a, **k: pytest.fail("compare_calibrated compared the rows twice"))
    cmp, cal = compare_calibrated(cat, rows, True)
    assert calls == [1] and cal is not None
    for gpu in ("h100-sxm", "a100-80gb-sxm"):
        coef = _fit_per_row(cmp, gpu)
        fit = cal.filter(pl.col("gpu") == gpu).row(0, named=True)
        assert fit["overhead_s"] == pytest.approx(coef[0], rel=1e-7)
        assert fit["eff_bandwidth"] == pytest.approx(min(1.0 / coef[1], 1.0), rel=1e-7)
        assert fit["points"] == 300 * 5  # 5 rows of each accelerator per copy: row 11's copies are above the ceiling
        assert fit["accepted"] is True
    assert cal.filter(pl.col("gpu") == "a100-80gb-sxm")["eff_compute"][0] == pytest.approx(0.70, abs=0.01)


def test_the_quality_rule_refuses_few_points_and_a_low_r2():
    """Named constants: at least 4 points and R² 0.5; each refusal says why."""
    assert (MIN_FIT_POINTS, MIN_FIT_R2) == (4, 0.5)
    assert refusal(4, 0.5) is None
    assert "3 points under the ceiling, a fit needs at least 4" in str(refusal(3, 0.99))
    assert "R² -0.20 is below 0.5" in str(refusal(40, -0.2))
    assert "R² undefined" in str(refusal(40, float("nan")))


def test_a_refused_fit_is_not_offered_nor_applied(cat, fixture_rows):
    """A100 rows scrambled (tokens/s shuffled across batches, / 40): its fit's R² is negative, so it is refused with the reason;
    calibration_fits offers only H100's, and A100's calibrated column stays empty while H100's is filled."""
    a100 = fixture_rows.filter(pl.col("gpu") == "a100-80gb-sxm")
    scrambled = a100.with_columns(pl.Series("tokens_per_s", [6381.8, 105.6, 4236.1, 410.9, 1480.1]) / 40)
    rows = pl.concat([fixture_rows.filter(pl.col("gpu") == "h100-sxm"), scrambled])
    cmp, cal = compare_calibrated(cat, rows, True)
    assert cal is not None
    bad = cal.filter(pl.col("gpu") == "a100-80gb-sxm").row(0, named=True)
    assert bad["accepted"] is False and bad["note"].startswith("refused: R² -0.11 is below 0.5")
    assert bad["points"] == 4 and bad["r2"] < 0  # batch 1 got batch 256's figure: above its ceiling, left out
    assert set(calibration_fits(cal)) == {"h100-sxm"}
    assert cmp.filter(pl.col("gpu") == "a100-80gb-sxm")["calibrated_tokens_per_s"].null_count() == 5
    h100 = cmp.filter((pl.col("gpu") == "h100-sxm") & (pl.col("row") == 1)).row(0, named=True)
    expected = ceiling(cat, Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=1, context=1088, prompt=1024, **_fit(cal, "h100-sxm")))
    assert h100["calibrated_tokens_per_s"] == pytest.approx(1.0 / expected.step_time_s, rel=1e-9)
    # a hand-made frame with points and R² but no `accepted` column is judged by the same rule
    assert calibration_fits(pl.DataFrame({"gpu": ["l4"], "points": [3.0], "r2": [0.99], "eff_bandwidth": [0.8]})) == {}


def _fit(cal: pl.DataFrame, gpu: str) -> dict[str, float]:
    return calibration_fits(cal)[gpu]


def test_an_h100_fit_leaves_the_a100_of_a_comparison_unchanged(cat):
    """Compare accelerators with an H100 fit: A100's row is its datasheet row; H100's is the calibrated ceiling.
    Before, the fit rode on the workload and derated every accelerator compared."""
    sc = Scenario(model="llama-3.1-8b", batch=1)
    picked = ["a100-80gb-sxm", "h100-sxm"]
    plain = compare_accelerators(cat, picked, sc)
    fitted = compare_accelerators(cat, picked, sc, calibration={"h100-sxm": H100_FIT})

    def row(t: pl.DataFrame, g: str) -> dict[str, float]:
        return t.filter(pl.col("gpu") == g).row(0, named=True)

    assert row(fitted, "a100-80gb-sxm") == row(plain, "a100-80gb-sxm")
    h100 = row(fitted, "h100-sxm")
    expected = ceiling(cat, sc.model_copy(update={"gpu": "h100-sxm", "num_gpus": h100["num_gpus"], **H100_FIT}))
    assert h100["tokens_per_s_per_gpu"] == pytest.approx(expected.tokens_per_s_total / h100["num_gpus"], rel=1e-9)
    assert h100["tokens_per_s_per_gpu"] < 0.82 * row(plain, "h100-sxm")["tokens_per_s_per_gpu"]
    # the old way (the H100 fit as the workload's own fields) changed the A100 too
    leaked = compare_accelerators(cat, picked, sc.model_copy(update=H100_FIT))
    assert row(leaked, "a100-80gb-sxm")["tokens_per_s_per_gpu"] < row(plain, "a100-80gb-sxm")["tokens_per_s_per_gpu"]


def test_a_large_dataset_is_drawn_with_at_most_max_marks(cat, fixture_rows):
    """24,000 rows over 2,400 scenarios: each chart draws at most MAX_MARKS marks, the medians of each scenario, and says so;
    the marks still count every row, and the one above-ceiling scenario stays red."""
    rows = repeated(fixture_rows, 2000).with_columns(pl.col("input_tokens") + pl.col("row") % 240)
    view = measured_view(cat, rows, True)
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


def test_cli_measured_prints_the_summary_and_the_fit(tmp_path, capsys):
    """`measured DATASET --calibrate --json` (by id and by name): the fixture's figures, the fit and its quality rule;
    an unknown dataset is one line on stderr, exit 2."""
    db = tmp_path / "m.duckdb"
    s = Store(db)
    ds = import_file(s, (FIXTURES / "generic.csv").read_bytes(), "generic.csv", name="fixture run").dataset_id
    s.close()
    for ref in (str(ds), "fixture run"):
        assert main(["measured", ref, "--calibrate", "--json", "--db", str(db)]) == 0
        out = json.loads(capsys.readouterr().out)
        assert (out["rows"], out["distinct_scenarios"], out["above_ceiling"]) == (11, 10, 1)
        assert out["dataset"]["name"] == "fixture run" and out["flags"]["wrong_precision"] == 1
        assert (out["calibration"]["min_points"], out["calibration"]["min_r2"]) == (4, 0.5)
        h100 = next(f for f in out["calibration"]["fits"] if f["gpu"] == "h100-sxm")
        assert h100["points"] == 5 and h100["accepted"] is True and h100["eff_bandwidth"] == pytest.approx(0.82, abs=0.002)
    assert main(["measured", "no such run", "--json", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: DATASET: 'no such run' is not stored; datasets: 1 ('fixture run')") and err.count("\n") == 1
    assert "calibration" not in json.loads(_run(db, str(ds)))


def _run(db: Path, ref: str) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["measured", ref, "--json", "--db", str(db)]) == 0
    return buf.getvalue()


def test_calibrate_keeps_its_signature_on_rows_alone(cat, fixture_rows):
    """calibrate(cat, rows) without a comparison still compares for itself (the reference scorecard calls it so)."""
    fit = calibrate(cat, fixture_rows)
    assert fit.columns == ["gpu", "points", "eff_bandwidth", "eff_compute", "overhead_s", "r2", "rel_rmse", "accepted", "note"]
    assert fit.filter(pl.col("gpu") == "h100-sxm")["eff_bandwidth"][0] == pytest.approx(0.82, abs=0.002)
