"""A probe's figures have the catalogue's physical bounds: refused on import, left out and named where already stored (issue 32)."""

from __future__ import annotations

import json

import pytest

from core.catalogue.catalogue import MEASURED_PRECISIONS, load_catalogue
from core.cli import main
from core.evidence.probes import ProbeFileError, import_probe
from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from core.store import Store
from core.store.paths import read_sql
from tests.probe_docs import probe_document


@pytest.mark.parametrize(
    ("bandwidth", "peaks", "message"),
    [
        (1e300, {"bf16": 5e14}, "summary.bandwidth_bytes_per_s 1e+300 B/s is outside 1e+09 to 5e+13 B/s"),
        (1e39, {"bf16": 5e14}, "summary.bandwidth_bytes_per_s 1e+39 B/s is outside"),
        (1e5, {"bf16": 5e14}, "summary.bandwidth_bytes_per_s 1e+05 B/s is outside"),
        (2e12, {"bf16": 1e20}, "summary.peak_flops.bf16 1e+20 FLOP/s is outside 1e+10 to 5e+16 FLOP/s"),
    ],
)
def test_a_probe_outside_the_physical_bounds_is_refused_and_nothing_is_stored(tmp_path, bandwidth, peaks, message):
    store = Store(tmp_path / "s.duckdb")
    doc = probe_document("NVIDIA H100 80GB HBM3", bandwidth, peaks)
    with pytest.raises(ProbeFileError, match="nothing was stored") as err:
        import_probe(store, doc.to_json().encode(), "p.json")
    assert message in str(err.value) and str(err.value).startswith("p.json: ")
    assert store.query("probe_profiles").is_empty()


def test_the_cli_names_the_probes_field_not_a_flag_it_lacks(tmp_path, capsys):
    """Without --gpu, a device the catalogue lacks becomes a custom accelerator; an impossible bandwidth is named by the
    probe's field, never by a --bandwidth-bytes-per-s flag import-probe does not have."""
    path = tmp_path / "p.json"
    path.write_text(probe_document("Some unknown device", 1e300, {"bf16": 5e14}).to_json())
    assert main(["import-probe", str(path), "--db", str(tmp_path / "s.duckdb")]) == 2
    err = capsys.readouterr().err
    assert "summary.bandwidth_bytes_per_s" in err and "--bandwidth-bytes-per-s" not in err


def test_a_stored_profile_outside_the_bounds_is_left_out_and_named_never_raised(tmp_path):
    """A profile stored by an older version with 1e39 B/s: the catalogue names it and leaves it out, so the measured
    roofs are the datasheet's (no ValidationError on any page); a valid older profile of the same accelerator is used."""
    store = Store(tmp_path / "s.duckdb")
    good = probe_document("NVIDIA H100 80GB HBM3", 1.675e12, {"bf16": 4e14})
    import_probe(store, good.to_json().encode(), "good.json")
    bad = probe_document("NVIDIA H100 80GB HBM3", 1e300, {"bf16": 4e14})
    values = {
        "accelerator_id": "h100-sxm",
        "device_name": "NVIDIA H100 80GB HBM3",
        "device_kind": "cuda",
        "backend": "torch",
        "probed_at": "2026-12-02",
        "file_name": "bad.json",
        "file_sha256": "0" * 64,
        "bandwidth_bytes_per_s": 1e39,
        **{f"peak_{p}": (4e14 if p == "bf16" else None) for p in MEASURED_PRECISIONS},
        "document_json": json.dumps(json.loads(bad.to_json())),
    }
    with store.transaction() as cur:
        cur.execute(read_sql("insert_probe_profile"), values)
    cat = load_catalogue(store)
    assert any("bad.json" in line and "bandwidth 1e+39 B/s is outside 1 GB/s to 50 TB/s" in line for line in cat.unreadable)
    measured = cat.measured()
    assert measured.gpu("h100-sxm").bandwidth_bytes_per_s == pytest.approx(1.675e12)  # the valid profile, not the stored 1e39
    result = ceiling(measured, Scenario(gpu="h100-sxm", model="llama-3.1-8b", batch=1))
    assert result.tokens_per_s_total is not None and result.tokens_per_s_total > 0
