"""The DuckDB store: migrations, seeding, reseeding that keeps user tables, transactions."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import polars as pl
import pytest

from core.catalogue import CatalogueError, accelerator_from_row, add_custom_accelerator, add_custom_model, load_catalogue
from core.store import SEED, Store, StoreError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def seed_copy(tmp_path: Path) -> Path:
    """A private copy of data/seed that a test may edit."""
    dst = tmp_path / "seed"
    shutil.copytree(SEED, dst)
    return dst


def _custom_gpu() -> dict:
    return {
        "id": "my-chip",
        "name": "My chip",
        "vendor": "Me",
        "form_factor": "custom",
        "memory_bytes": 64e9,
        "bandwidth_bytes_per_s": 2e12,
        "peak_bf16": 500e12,
        "sources": "https://example.com/sheet",
    }


def test_first_open_creates_the_file_records_migrations_and_loads_the_seed(tmp_path):
    """A new store file gets every numbered migration recorded and the seed's rows."""
    store = Store(tmp_path / "new.duckdb")
    assert (tmp_path / "new.duckdb").exists()
    migrations = store.query("schema_migrations")
    assert migrations["version"].to_list() == sorted(int(p.name.split("_")[0]) for p in (ROOT / "queries/migrations").glob("*.sql"))
    seed_rows = pl.read_csv(SEED / "accelerators.csv", infer_schema_length=0).height
    assert store.query("accelerators").height == seed_rows
    assert store.query("models").height == pl.read_csv(SEED / "models.csv").height


def test_reopening_applies_no_migration_twice(tmp_path):
    """Opening an existing store applies nothing again and does not rebuild an unchanged seed."""
    Store(tmp_path / "s.duckdb").close()
    store = Store(tmp_path / "s.duckdb")
    assert store.migrate() == []
    assert store.refresh_reference() is False


def test_a_changed_seed_refreshes_reference_tables_and_keeps_custom_entries(tmp_path, seed_copy):
    """Editing the seed rebuilds accelerators/models; custom accelerators and models survive."""
    db = tmp_path / "s.duckdb"
    store = Store(db, seed_dir=seed_copy)
    add_custom_accelerator(store, accelerator_from_row(_custom_gpu()))
    cfg = (seed_copy / "models/llama-3.2-1b.json").read_text()
    add_custom_model(store, cfg, model_id="my-model", name="My model")
    store.close()

    csv = seed_copy / "accelerators.csv"
    rows = csv.read_text().splitlines()
    csv.write_text("\n".join([rows[0], *[r for r in rows[1:] if not r.startswith("t4,")]]) + "\n")
    store = Store(db, seed_dir=seed_copy)
    ids = store.query("accelerators")["id"].to_list()
    assert "t4" not in ids
    assert "my-chip" in ids
    assert "my-model" in store.query("models")["id"].to_list()


def test_an_implausible_seed_figure_fails_loudly_naming_the_row(tmp_path, seed_copy):
    """A bandwidth typed in GB/s instead of TB/s (3350 TB/s) is refused with the row named."""
    csv = seed_copy / "accelerators.csv"
    text = csv.read_text().replace(
        "h100-sxm,NVIDIA H100 SXM5 80GB,NVIDIA,SXM,2022,80,3.35,", "h100-sxm,NVIDIA H100 SXM5 80GB,NVIDIA,SXM,2022,80,3350,"
    )
    assert text != csv.read_text(), "the test's edit must hit the H100 SXM row"
    csv.write_text(text)
    with pytest.raises(CatalogueError, match=r"h100-sxm.*bandwidth_bytes_per_s"):
        Store(tmp_path / "s.duckdb", seed_dir=seed_copy)


def test_a_zero_peak_is_refused_because_unsupported_means_empty(tmp_path, seed_copy):
    """0 is not 'unsupported': the seed must leave the cell empty."""
    csv = seed_copy / "accelerators.csv"
    lines = csv.read_text().splitlines()
    header = lines[0].split(",")
    col = header.index("fp8_tflops")
    row = lines[1].split(",")
    row[col] = "0"
    csv.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    with pytest.raises(CatalogueError, match="fp8 peak must be empty"):
        Store(tmp_path / "s.duckdb", seed_dir=seed_copy)


def test_a_failed_write_changes_nothing(tmp_path):
    """A transaction that fails half-way rolls back every statement."""
    store = Store(tmp_path / "s.duckdb")
    before = store.query("accelerators").height
    with pytest.raises(RuntimeError), store.transaction() as cur:
        cur.execute("DELETE FROM accelerators")
        raise RuntimeError("boom")
    assert store.query("accelerators").height == before


def test_a_duplicate_custom_id_is_refused_and_nothing_is_written(tmp_path):
    """Adding an accelerator whose id exists raises and leaves the custom table as it was."""
    store = Store(tmp_path / "s.duckdb")
    row = {**_custom_gpu(), "id": "h100-sxm"}
    with pytest.raises(CatalogueError, match="already exists"):
        add_custom_accelerator(store, accelerator_from_row(row))
    assert load_catalogue(store).gpus.filter(pl.col("custom")).height == 0


def test_queries_from_many_threads_at_once(tmp_path):
    """Each query runs on its own cursor, so concurrent callers never collide."""
    store = Store(tmp_path / "s.duckdb")
    errors: list[BaseException] = []
    counts: list[int] = []

    def work() -> None:
        try:
            for _ in range(20):
                counts.append(store.query("accelerators").height)
        except BaseException as exc:  # pragma: no cover - the assertion reports it
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert set(counts) == {store.query("accelerators").height}


def test_unknown_query_name_is_an_error():
    """A query name without a .sql file is refused (names never come from users)."""
    from core.store import read_sql

    with pytest.raises(StoreError, match="no query named"):
        read_sql("drop_everything")


def test_user_strings_are_stored_literally(tmp_path):
    """A name that looks like SQL is a value, bound as a parameter, stored as typed."""
    store = Store(tmp_path / "s.duckdb")
    nasty = "x'); DROP TABLE accelerators; --"
    add_custom_accelerator(store, accelerator_from_row({**_custom_gpu(), "name": nasty}))
    gpus = store.query("accelerators")
    assert nasty in gpus["name"].to_list()
    assert gpus.height > 40
