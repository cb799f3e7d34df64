"""The roofline page's fast paths give exactly what the plain ones give."""

from __future__ import annotations

import polars as pl
import pytest

from core import memo
from core.ceilings import ceiling, ceilings_by_batch
from core.charts import roofline_chart, roofline_spec
from core.roofline import SWEEP_BATCHES, operating_points, roof_lines
from core.specs import Scenario


@pytest.mark.parametrize(
    ("gpus", "precisions", "eff", "with_paths", "size"),
    [
        (["h100-sxm"], ["bf16"], 1.0, True, (760, 440)),
        (["h100-sxm", "b200", "l4"], ["bf16", "fp8"], 0.8, True, (1080, 620)),
        (["a100-80gb-sxm"], ["fp16"], 1.0, False, (760, 440)),
    ],
)
def test_roofline_spec_is_the_altair_chart_as_a_dict(cat, gpus, precisions, eff, with_paths, size):
    """The cached layer template with domains, title and data filled in equals the chart Altair builds."""
    sc = Scenario(gpu=gpus[0], model="llama-3.1-70b", num_gpus=2, batch=64, context=8192)
    paths = operating_points(cat, sc, SWEEP_BATCHES)
    points = paths.filter(pl.col("batch") == 64)
    roofs = roof_lines(cat.gpus.filter(pl.col("id").is_in(gpus)), precisions, eff_bandwidth=eff)
    kw = {"title": f"{gpus} {precisions}", "width": size[0], "height": size[1]}
    expected = roofline_chart(roofs, points, paths if with_paths else None, **kw).to_dict(validate=False)
    for _ in range(2):  # the second call reuses the cached template: it must not carry the first call's data
        assert roofline_spec(roofs, points, paths if with_paths else None, **kw) == expected
    # axes end on whole decades that hold every roof and point
    y = expected["layer"][0]["encoding"]["y"]["scale"]["domain"]
    assert all(float(v).is_integer() and str(int(v)).rstrip("0") == "1" for v in y)
    assert y[0] <= roofs["attainable_flops"].min() and y[1] >= roofs["attainable_flops"].max()


def test_ceilings_by_batch_equal_single_ceilings(cat):
    """One evaluation of the batch ladder gives, batch by batch, what ceiling() gives alone."""
    sc = Scenario(gpu="h100-sxm", model="mixtral-8x7b", num_gpus=2, batch=5, context=4096, weights="fp8")
    ladder = ceilings_by_batch(cat, sc, [1, 8, 64])
    assert sorted(ladder) == [1, 8, 64]
    for b, row in ladder.items():
        alone = ceiling(cat, sc.model_copy(update={"batch": b}))
        assert row["batch"] == b
        assert row["fits"] is alone["fits"] is True
        for key in ("step_time_s", "ttft_s", "tokens_per_s_total", "memory_required_bytes", "max_batch"):
            assert alone[key] is not None, key
            assert row[key] == pytest.approx(alone[key], rel=1e-12), key


def test_memo_computes_once_per_distinct_arguments_and_catalogue(cat):
    memo.clear()
    calls: list[tuple[object, int]] = []

    def work(c: object, sc: Scenario, n: int) -> dict[str, int]:
        calls.append((c, n))
        return {"batch": sc.batch * n}

    a = Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=4)
    assert memo.memo(work, cat, a, 2) == {"batch": 8}
    assert memo.memo(work, cat, a.model_copy(), 2) == {"batch": 8}  # equal record, same entry
    assert len(calls) == 1
    assert memo.memo(work, cat, a, 3) == {"batch": 12}
    assert memo.memo(work, cat, a.model_copy(update={"batch": 5}), 2) == {"batch": 10}
    other_catalogue = object()  # a new store generation gives a new catalogue object
    memo.memo(work, other_catalogue, a, 2)
    assert len(calls) == 4
    # a caller that edits its result does not edit the shared one
    got = memo.memo(work, cat, a, 2)
    got["batch"] = -1
    assert memo.memo(work, cat, a, 2) == {"batch": 8}
    with pytest.raises(TypeError):
        memo.memo(work, cat, {1, 2}, 2)  # unhashable arguments are refused, not silently keyed
    memo.clear()


def test_measured_figures_draw_a_dataset_of_more_than_5000_points(tmp_path):
    """Altair's 5,000-row notebook guard must not stop a measured chart from becoming a spec off Streamlit (PNG/SVG export, report)."""
    from core.catalogue import load_catalogue
    from core.importers import import_file, list_datasets
    from core.store import Store
    from pages.measured.figures import measured_figures

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
    figures = measured_figures(cat, store, ds["id"], ds["imported_at"], True)
    spec = figures["roof_chart"].to_dict(validate=False)  # as the PNG/SVG export does
    points = max(len(rows) for rows in spec["datasets"].values())
    assert points >= 6000
    assert figures["cmp"].height == 6000
