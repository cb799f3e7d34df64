"""What the pages draw: the roofline's axes, the batch ladder, one result read two ways, large measured datasets."""

from __future__ import annotations

import math

import polars as pl
import pytest

from core.model.ceilings import ceiling, ceilings_by_batch, evaluate
from core.model.result import FIGURES, RESULT_SCHEMA, ceiling_of_row
from core.model.roofline import SWEEP_BATCHES, operating_points, roof_lines
from core.model.scenario import FIELDS, Scenario
from core.present.charts import roofline_chart


@pytest.mark.parametrize(
    ("gpus", "precisions", "eff", "with_paths"),
    [
        (["h100-sxm"], ["bf16"], 1.0, True),
        (["h100-sxm", "b200", "l4"], ["bf16", "fp8"], 0.8, True),
        (["a100-80gb-sxm"], ["fp16"], 1.0, False),
    ],
)
def test_roofline_axes_end_on_whole_decades_holding_every_roof_and_point(cat, gpus, precisions, eff, with_paths):
    """The log axes start and end on a labelled power of ten and hold every roof and operating point."""
    sc = Scenario(gpu=gpus[0], model="llama-3.1-70b", num_gpus=2, batch=64, context=8192)
    paths = operating_points(cat, sc, SWEEP_BATCHES)
    points = paths.filter(pl.col("batch") == 64)
    roofs = roof_lines(cat.gpus.filter(pl.col("id").is_in(gpus)), precisions, eff_bandwidth=eff)
    spec = roofline_chart(roofs, points, paths if with_paths else None, title="t").to_dict(validate=False)
    for channel, values in (("y", pl.concat([roofs["attainable_flops"], paths["attainable_flops"]])), ("x", paths["intensity"])):
        domain = spec["layer"][0]["encoding"][channel]["scale"]["domain"]
        assert all(math.isclose(math.log10(v), round(math.log10(v)), abs_tol=1e-9) for v in domain), domain
        assert domain[0] <= values.min() and domain[1] >= values.max()


def test_ceilings_by_batch_equal_single_ceilings(cat):
    """One evaluation of the batch ladder gives, batch by batch, what ceiling() gives alone."""
    sc = Scenario(gpu="h100-sxm", model="mixtral-8x7b", num_gpus=2, batch=5, context=4096, weights="fp8")
    ladder = ceilings_by_batch(cat, sc, [1, 8, 64])
    assert sorted(ladder) == [1, 8, 64]
    for b, row in ladder.items():
        alone = ceiling(cat, sc.model_copy(update={"batch": b}))
        assert row.scenario.batch == b
        assert row.fits is alone.fits is True
        for key in ("step_time_s", "ttft_s", "tokens_per_s_total", "memory_required_bytes", "max_batch"):
            assert alone[key] is not None, key
            assert row[key] == pytest.approx(alone[key], rel=1e-12), key


@pytest.mark.parametrize(
    "sc",
    [
        Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=32, context=1024, usd_per_gpu_hour=2.5),
        Scenario(gpu="l4", model="llama-3.1-405b"),  # does not fit: no throughput
        Scenario(gpu="tpu-v4", model="llama-3.2-1b", weights="fp32"),  # no peak: no TTFT
        Scenario(gpu="h100-sxm", model="llama-3.1-8b", spec_draft_len=4, spec_draft_model="llama-3.2-1b", context=0),
    ],
)
def test_one_result_schema_read_as_a_frame_and_as_a_record(cat, sc):
    """evaluate() has exactly the declared columns and types; its row, as a Ceiling, is what ceiling() returns."""
    frame = evaluate(cat, [sc])
    assert dict(frame.schema) == RESULT_SCHEMA
    assert list(RESULT_SCHEMA) == ["scenario_id", *FIELDS, *FIGURES]
    assert ceiling_of_row(frame.row(0, named=True)) == ceiling(cat, sc)
    many = evaluate(cat, [sc] * 70)  # the frame built from columns (more than a few rows) is the same
    assert dict(many.schema) == RESULT_SCHEMA
    assert many.drop("scenario_id").unique().height == 1
    assert ceiling_of_row(many.row(69, named=True)).record() == ceiling(cat, sc).record()


def test_measured_charts_draw_a_dataset_of_more_than_5000_points(tmp_path):
    """Altair's 5,000-row notebook guard must not stop a measured chart from becoming a spec off Streamlit (PNG/SVG export, report)."""
    from core.catalogue.catalogue import load_catalogue
    from core.evidence.importers import dataset_rows, import_file, list_datasets
    from core.present.figures import measured_charts, measured_view
    from core.store import Store

    store = Store(tmp_path / "big.duckdb")
    cat = load_catalogue(store)
    header = "gpu,num_gpus,model,weights,kv,phase,batch,input_tokens,output_tokens,tokens_per_s,tpot_ms\n"
    lines = [
        f"NVIDIA H100 80GB HBM3,1,meta-llama/Llama-3.1-8B-Instruct,bf16,bf16,decode,{1 + i % 64},1024,128,{100.0 + i},\n"
        for i in range(6000)
    ]
    import_file(store, (header + "".join(lines)).encode(), "big.csv", name="big")
    ds = list_datasets(store).row(0, named=True)
    assert ds["row_count"] == 6000
    rows = dataset_rows(store, ds["id"])
    view = measured_view(cat, rows, True)
    roof_chart, _ = measured_charts(cat, rows, view)
    spec = roof_chart.to_dict(validate=False)  # as the PNG/SVG export does
    points = max(len(rows) for rows in spec["datasets"].values())
    assert points >= 6000
    assert view.cmp.height == 6000


def test_log_ticks_label_the_whole_range_1_2_5_then_coarser_or_finer():
    from core.present.charts import log_ticks

    assert log_ticks(30, 2500) == [50, 100, 200, 500, 1000, 2000]  # the calculator's 40-215 tokens/s: 50, 100, 200
    assert log_ticks(40, 60) == [40, 50, 60]  # inside one decade: 1-1.5-2-3...-9
    assert log_ticks(0.01, 1e6) == [0.01, 0.1, 1, 10, 100, 1000, 1e4, 1e5, 1e6]  # 1-2-5 and 1-3 make too many
    assert log_ticks(1, 1000) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]  # ten: still 1-2-5
    assert log_ticks(350, 4900) == [500, 1000, 2000, 3000]  # 1-2-5 stops at 2,000 of 4,900: 3 fills the end
    assert log_ticks(5, 5) == [] and log_ticks(-1, 10) == []
