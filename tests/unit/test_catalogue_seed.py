"""The reviewed seed catalogue: coverage, sources, units and the datasheet anchors."""

from __future__ import annotations

import polars as pl
import pytest

REQUIRED_GPUS = [
    "a100-40gb-sxm",
    "a100-80gb-sxm",
    "a100-80gb-pcie",
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200-sxm",
    "h200-nvl",
    "b200",
    "b300",
    "gb200",
    "gb300",
    "l40s",
    "l40",
    "l4",
    "a10",
    "a10g",
    "t4",
    "v100-sxm",
    "rtx-4090",
    "rtx-5090",
    "rtx-6000-ada",
    "rtx-pro-6000-blackwell",
    "dgx-spark",
    "jetson-agx-orin",
    "jetson-agx-thor",
    "mi250x",
    "mi300x",
    "mi325x",
    "mi355x",
    "gaudi2",
    "gaudi3",
    "tpu-v4",
    "tpu-v5e",
    "tpu-v5p",
    "tpu-v6e",
    "tpu-ironwood",
    "trainium2",
    "inferentia2",
    "m2-ultra",
    "m3-max",
    "m4-max",
]
REQUIRED_MODELS = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "llama-3.2-1b",
    "llama-3.2-3b",
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "mistral-7b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "qwen3-8b",
    "qwen3-32b",
    "phi-3-mini",
    "phi-4",
    "gemma-2-9b",
    "gemma-2-27b",
    "gemma-3-27b",
    "falcon-40b",
    "mixtral-8x7b",
    "mixtral-8x22b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "llama-4-scout",
    "llama-4-maverick",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "glm-4.5",
    "deepseek-v3",
    "kimi-k2",
]


def test_at_least_40_accelerators_including_every_one_the_issue_names(cat):
    """The catalogue covers the 42 accelerators asked for."""
    ids = set(cat.gpus["id"].to_list())
    assert len(ids) >= 40
    assert not set(REQUIRED_GPUS) - ids


def test_at_least_30_models_including_every_one_the_issue_names(cat):
    """The catalogue covers the dense, MoE and MLA models asked for."""
    assert len(cat.records) >= 30
    assert not set(REQUIRED_MODELS) - set(cat.records)


def test_every_accelerator_cites_a_source_url(cat):
    """Every row has at least one http(s) source for its figures."""
    bad = cat.gpus.filter(~pl.col("sources").str.contains(r"https?://"))["id"].to_list()
    assert bad == []


def test_every_model_cites_where_its_config_and_parameter_count_come_from(cat):
    """Every seeded model names the source of its config.json and of its published parameter count."""
    seeded = cat.models.filter(~pl.col("custom"))
    assert seeded.filter(pl.col("config_source").is_null() | (pl.col("config_source") == "")).height == 0
    assert seeded.filter(~pl.col("params_source").str.contains("http")).height == 0


def test_unsupported_precisions_are_null_never_zero(cat):
    """No peak column holds 0; fp8 on A100 and fp4 on H100 are null."""
    peaks = [c for c in cat.gpus.columns if c.startswith("peak_")]
    assert cat.gpus.select([(pl.col(c) == 0).sum() for c in peaks]).sum_horizontal().item() == 0
    assert cat.gpu("a100-80gb-sxm").peak_fp8 is None
    assert cat.gpu("h100-sxm").peak_fp4 is None
    assert cat.gpu("v100-sxm").peak_bf16 is None


@pytest.mark.parametrize(
    ("gpu", "field", "expected", "source"),
    [
        ("h100-sxm", "peak_bf16", 989.4e12, "NVIDIA H100 datasheet: 1,979 TFLOPS bf16 with sparsity, dense half"),
        ("h100-sxm", "bandwidth_bytes_per_s", 3.35e12, "NVIDIA H100 SXM datasheet: 3.35 TB/s"),
        ("h100-sxm", "peak_fp8", 1978.9e12, "NVIDIA H100 datasheet: 3,958 TFLOPS fp8 with sparsity"),
        ("h100-nvl", "bandwidth_bytes_per_s", 3.9e12, "seed 001: H100 NVL about 3.9 TB/s per GPU"),
        ("a100-80gb-sxm", "peak_bf16", 312e12, "NVIDIA A100 datasheet: 312 TFLOPS bf16 dense"),
        ("a100-80gb-sxm", "bandwidth_bytes_per_s", 2.039e12, "NVIDIA A100 80GB SXM datasheet: 2,039 GB/s"),
        ("b200", "peak_fp4", 9000e12, "NVIDIA HGX B200: 18 PFLOPS fp4 with sparsity, 9 dense"),
        ("l40s", "bandwidth_bytes_per_s", 864e9, "NVIDIA L40S datasheet: 864 GB/s"),
        ("l40s", "peak_bf16", 362.05e12, "NVIDIA L40S datasheet: 733 TFLOPS bf16 with sparsity"),
        ("mi300x", "peak_bf16", 1307.4e12, "AMD MI300X datasheet: 1307.4 TFLOPS bf16 dense"),
    ],
)
def test_datasheet_anchors_are_dense_and_decimal(cat, gpu, field, expected, source):
    """Anchor figures read as dense peaks in decimal units."""
    assert getattr(cat.gpu(gpu), field) == pytest.approx(expected, rel=1e-3), source


@pytest.mark.parametrize(
    ("gpu", "expected", "source"),
    [
        ("h100-sxm", 400e9 / 8, "NVIDIA HGX AI Factory RA: 400 Gb/s per GPU (DGX H100: 8x ConnectX-7 400 Gb/s, one per GPU)"),
        ("b300", 800e9 / 8, "NVIDIA HGX AI Factory RA for HGX B300: 800 Gb/s per GPU (ConnectX-8)"),
        ("gaudi3", 3 * 200e9 / 8, "Intel Gaudi network configuration: 3 scale-out ports x 200 Gbps = 75 GB/s each direction"),
        ("trainium2", 3200e9 / 16 / 8, "AWS Trn2 architecture: EFA 3,200 Gbps per trn2.48xlarge of 16 chips"),
    ],
)
def test_scaleout_anchors_are_per_device_per_direction_in_bytes(cat, gpu, expected, source):
    """The scale-out figure is the NIC line rate per device in bytes per second (bits / 8), one direction."""
    assert cat.gpu(gpu).scaleout_bytes_per_s == pytest.approx(expected, rel=1e-9), source


def test_scaleout_reaches_the_hardware_arrays_nan_where_no_source_prints_it(cat):
    """`cat.hardware.scaleout_bytes_per_s` holds every accelerator's figure in B/s, NaN where the seed cell is empty
    (PCIe cards, laptops: no reference system prints one)."""
    import numpy as np

    hw = cat.hardware
    at = cat.gpu_index
    assert hw.scaleout_bytes_per_s.shape == (len(hw.ids),)
    assert hw.scaleout_bytes_per_s[at["gb200"]] == pytest.approx(50e9)
    assert np.isnan(hw.scaleout_bytes_per_s[at["l40s"]])
    assert np.isnan(hw.scaleout_bytes_per_s[at["m4-max"]])
    filled = cat.gpus.filter(pl.col("scaleout_bytes_per_s").is_not_null())
    assert filled.height == int(np.sum(~np.isnan(hw.scaleout_bytes_per_s)))
    assert filled.filter(~pl.col("notes").str.contains("Scale-out", literal=True)).height == 0  # each says which system


def test_unknown_accelerator_suggests_the_closest_ids(cat):
    """An unknown id names itself and offers the closest known ids."""
    from core.catalogue.catalogue import UnknownIdError

    with pytest.raises(UnknownIdError, match="did you mean h100-sxm") as err:
        cat.gpu("h100-sxn")
    assert "h100-sxm" in err.value.suggestions


def test_each_accelerator_field_reaches_every_place_from_its_one_declaration(cat, tmp_path):
    """A field declared once (specs.Accelerator with its Column) is a seed CSV column, a column of both store
    tables, a column of the catalogue table, a key of the CLI record, a row of the format document and,
    unless it opts out, an input of the custom-accelerator form."""
    from core.catalogue.catalogue import add_custom_accelerator, load_catalogue
    from core.catalogue.seed import accelerator_from_row
    from core.catalogue.specs import accelerator_columns, accelerator_format_doc
    from core.present.tables import accelerator_table
    from core.store import SEED, Store

    columns = accelerator_columns()
    header = (SEED / "accelerators.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header == [c.seed or n for n, c in columns.items()]  # every column declared, in declaration order
    store = Store(tmp_path / "fields.duckdb")
    fresh = load_catalogue(store)
    row = {**fresh.gpu("h100-sxm").store_row(), "id": "h100-copy", "name": "H100 copy", "custom": True}
    add_custom_accelerator(store, accelerator_from_row(row))
    with store.connect() as con:
        for table in ("accelerators", "custom_accelerators"):
            stored = {r[0] for r in con.sql(f"DESCRIBE {table}").fetchall()}
            assert set(columns) <= stored, (table, set(columns) - stored)
    reread = load_catalogue(store)
    assert reread.gpu("h100-copy").store_row() == {**row, "custom": True}  # every field survives the custom table
    shown = accelerator_table(cat.gpus).columns
    record = cat.gpu("h100-sxm").record()
    doc = accelerator_format_doc()
    for name, col in columns.items():
        assert name in ("sources", "notes") or col.heading() in shown, name
        assert name.startswith("peak_") or name in record, name
        assert f"| {col.seed or name} | {col.unit} | {col.doc} |" in doc


def test_the_format_document_holds_the_generated_column_table():
    """data/seed/ACCELERATORS_FORMAT.md is in step with the declarations (python -m core.catalogue.specs rewrites it)."""
    from core.catalogue.specs import accelerator_format_doc
    from core.store import SEED

    assert accelerator_format_doc() in (SEED / "ACCELERATORS_FORMAT.md").read_text(encoding="utf-8")
