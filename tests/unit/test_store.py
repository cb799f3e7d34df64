"""The DuckDB store: migrations, seeding, reseeding that keeps user tables, transactions, read-only mode's session stores."""

from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path

import polars as pl
import pytest

from core.catalogue.catalogue import add_custom_accelerator, add_custom_model, load_catalogue
from core.catalogue.seed import CatalogueError, accelerator_from_row
from core.evidence.importers import ImportContext, ImportFileError, dataset_rows, delete_dataset, import_file, list_datasets, rename_dataset
from core.store import SEED, ReadOnlyError, SessionStore, Store, StoreError, is_session_dataset
from core.store.schema import migrate, refresh_reference
from tests.helpers import FIXTURES, ROOT, custom_gpu_row


@pytest.fixture
def seed_copy(tmp_path: Path) -> Path:
    """A private copy of data/seed that a test may edit."""
    dst = tmp_path / "seed"
    shutil.copytree(SEED, dst)
    return dst


def _custom_gpu() -> dict:
    return custom_gpu_row()


def test_first_open_creates_the_file_records_migrations_and_loads_the_seed(tmp_path):
    """A new store file gets every numbered migration recorded and the seed's rows."""
    store = Store(tmp_path / "new.duckdb")
    assert (tmp_path / "new.duckdb").exists()
    migrations = store.query("schema_migrations")
    assert migrations["version"].to_list() == sorted(int(p.name.split("_")[0]) for p in (ROOT / "queries/migrations").glob("*.sql"))
    seed_rows = pl.read_csv(SEED / "accelerators.csv", infer_schema_length=0).height
    assert store.query("accelerators").height == seed_rows
    assert store.query("models").height == pl.read_csv(SEED / "models.csv").height


def test_a_new_store_s_catalogue_is_loaded_once_not_again_when_the_file_is_next_closed(tmp_path):
    """Building a store writes the seed into DuckDB's write-ahead log; were it checkpointed only when the file is
    next closed (ROOFLINE_HOLD_S after the first reads), the file would change under the catalogue just loaded from it, the
    generation would move and the page's next run would build the catalogue again (a cold start's first page did)."""
    store = Store(tmp_path / "new.duckdb")
    cat = load_catalogue(store)
    generation = store.generation
    store.file.close()  # what the idle timer does ROOFLINE_HOLD_S after the last read
    assert store.generation == generation
    assert load_catalogue(store) is cat


def test_reopening_applies_no_migration_twice(tmp_path):
    """Opening an existing store applies nothing again and does not rebuild an unchanged seed."""
    Store(tmp_path / "s.duckdb").close()
    store = Store(tmp_path / "s.duckdb")
    assert migrate(store) == []
    assert refresh_reference(store) is False


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
    prices = seed_copy / "prices.csv"  # a price of an accelerator the seed no longer has would fail the seed load
    lines = prices.read_text().splitlines()
    prices.write_text("\n".join([lines[0], *[r for r in lines[1:] if not r.startswith("t4,")]]) + "\n")
    store = Store(db, seed_dir=seed_copy)
    ids = store.query("accelerators")["id"].to_list()
    assert "t4" not in ids
    assert "my-chip" in ids
    assert "my-model" in store.query("models")["id"].to_list()


def test_an_implausible_seed_figure_fails_loudly_naming_the_row(tmp_path, seed_copy):
    """A bandwidth typed in GB/s instead of TB/s (3350 TB/s) is refused with the row named."""
    csv = seed_copy / "accelerators.csv"
    lines = csv.read_text().splitlines()
    col = lines[0].split(",").index("bandwidth_tb_s")
    (i,) = [i for i, line in enumerate(lines) if line.startswith("h100-sxm,")]
    row = lines[i].split(",")  # the cells before the notes hold no commas
    assert row[col] == "3.35", "the test's edit must hit the H100 SXM bandwidth"
    row[col] = "3350"
    lines[i] = ",".join(row)
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(CatalogueError, match=r"row \d+ \(h100-sxm\): Bandwidth must be at most 50 TB/s \(got 3,350 TB/s\)"):
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
    with pytest.raises(CatalogueError, match="fp8 dense must be empty where unsupported"):
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


def test_a_duplicate_custom_name_is_refused(tmp_path):
    """Names tell entries apart in pickers and links: a second accelerator or model under a taken name is refused, nothing written."""
    store = Store(tmp_path / "s.duckdb")
    with pytest.raises(CatalogueError, match="Name: an accelerator named 'NVIDIA H100 SXM5 80GB' already exists; choose another name"):
        add_custom_accelerator(store, accelerator_from_row({**_custom_gpu(), "name": "NVIDIA H100 SXM5 80GB"}))
    with pytest.raises(CatalogueError, match="Name: a model named 'Llama 3.2 1B' already exists; choose another name"):
        add_custom_model(store, (SEED / "models/llama-3.2-1b.json").read_text(), model_id="my-copy", name="Llama 3.2 1B")
    cat = load_catalogue(store)
    assert cat.gpus.filter(pl.col("custom")).height == 0 and not any(r.custom for r in cat.records.values())


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


# -- read-only mode: one session's datasets in memory, the file untouched -----------------------


def _files(folder: Path) -> dict[str, str]:
    """Every file in a folder with the sha256 of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def read_only_file(tmp_path: Path) -> Path:
    """A store file holding one dataset and one custom accelerator, closed (opened read-only by the tests)."""
    db = tmp_path / "demo" / "s.duckdb"
    rw = Store(db)
    add_custom_accelerator(rw, accelerator_from_row(_custom_gpu()))
    import_file(
        rw, (FIXTURES / "vllm_serve.json").read_bytes(), "vllm_serve.json", context=ImportContext(gpu="h100-sxm", model="llama-3.1-8b")
    )
    rw.close()
    return db


def test_a_session_store_imports_into_memory_and_leaves_the_file_byte_identical(read_only_file, tmp_path):
    """generic.csv into a SessionStore: its rows read back equal to the file's (and to a stored import), the store file unchanged."""
    before = _files(read_only_file.parent)
    base = Store(read_only_file, read_only=True)
    session = SessionStore(base)
    data = (FIXTURES / "generic.csv").read_bytes()
    res = import_file(session, data, "generic.csv", name="my run")
    assert is_session_dataset(res.dataset_id) and res.rows == 11

    listed = list_datasets(session)
    assert listed.select("name", "format", "row_count").rows() == [("my run", "generic-csv", 11), ("vllm_serve.json", "vllm-serve", 1)]
    rows = dataset_rows(session, res.dataset_id)
    csv = pl.read_csv(FIXTURES / "generic.csv")
    assert rows["row"].to_list() == list(range(1, 12))
    assert rows["tokens_per_s"].to_list() == csv["tokens_per_s"].to_list()
    assert rows["batch"].to_list() == csv["batch"].to_list()
    assert rows["input_tokens"].to_list() == csv["input_tokens"].to_list()
    assert rows["tpot_s"].to_list() == pytest.approx([v / 1e3 for v in csv["tpot_ms"].to_list()], rel=1e-12)
    assert set(rows["gpu"]) == {"h100-sxm", "a100-80gb-sxm"}
    stored = Store(tmp_path / "rw.duckdb")  # the same file imported into a writable store reads back the same rows
    assert rows.equals(dataset_rows(stored, import_file(stored, data, "generic.csv").dataset_id))
    # the stored dataset is still read from the file
    assert dataset_rows(session, int(listed["id"][1]))["tokens_per_s"].to_list() == [1060.5]

    session.close()
    base.close()
    assert _files(read_only_file.parent) == before
    assert list_datasets(Store(read_only_file, read_only=True))["name"].to_list() == ["vllm_serve.json"]


def test_two_session_stores_are_independent(read_only_file):
    """What one session imports, renames or deletes, the other never sees; both see the stored dataset."""
    base = Store(read_only_file, read_only=True)
    a, b = SessionStore(base), SessionStore(base)
    data = (FIXTURES / "generic.csv").read_bytes()
    ra = import_file(a, data, "generic.csv", name="A's")
    assert list_datasets(b)["name"].to_list() == ["vllm_serve.json"]
    assert dataset_rows(b, ra.dataset_id).is_empty()
    rb = import_file(b, data, "generic.csv", name="B's")  # the same file is new to B
    assert ra.dataset_id == rb.dataset_id == -1  # ids of separate sessions may coincide: they never meet
    rename_dataset(a, ra.dataset_id, "renamed by A")
    assert list_datasets(a)["name"].to_list() == ["renamed by A", "vllm_serve.json"]
    assert list_datasets(b)["name"].to_list() == ["B's", "vllm_serve.json"]
    delete_dataset(b, rb.dataset_id)
    assert list_datasets(b)["name"].to_list() == ["vllm_serve.json"]
    assert dataset_rows(a, ra.dataset_id).height == 11


def test_a_session_store_reads_the_catalogue_from_the_file_and_refuses_other_writes(read_only_file):
    """The file's custom accelerator is in the session's catalogue; catalogue writes and the file's datasets stay read-only."""
    base = Store(read_only_file, read_only=True)
    session = SessionStore(base)
    assert "my-chip" in load_catalogue(session).gpus["id"].to_list()
    assert load_catalogue(session) is load_catalogue(base)
    mine = b"gpu,model,batch,input_tokens,output_tokens,tokens_per_s\nmy-chip,llama-3.1-8b,1,1024,128,120.0\n"
    assert dataset_rows(session, import_file(session, mine, "mine.csv").dataset_id)["gpu"].to_list() == ["my-chip"]
    with pytest.raises(ReadOnlyError, match="read-only"):
        add_custom_accelerator(session, accelerator_from_row({**_custom_gpu(), "id": "other-chip", "name": "Other chip"}))
    with pytest.raises(ReadOnlyError, match="read-only"):
        add_custom_model(session, (SEED / "models/llama-3.2-1b.json").read_text(), model_id="m", name="M")
    stored_id = int(list_datasets(session).filter(pl.col("id") > 0)["id"][0])
    with pytest.raises(ReadOnlyError, match=f"dataset {stored_id} is in the read-only store"):
        rename_dataset(session, stored_id, "x")
    with pytest.raises(ReadOnlyError, match=f"dataset {stored_id} is in the read-only store"):
        delete_dataset(session, stored_id)
    with pytest.raises(ImportFileError, match="already imported as dataset .*it is in the read-only store"):
        import_file(session, (FIXTURES / "vllm_serve.json").read_bytes(), "again.json", context=ImportContext(gpu="h100-sxm"))
    assert session.query("accelerators")["id"].to_list() == base.query("accelerators")["id"].to_list()


def test_a_session_import_is_one_transaction_and_bad_input_writes_nothing(read_only_file, monkeypatch):
    """A bad file gets its one-line message; a write failing half-way leaves no dataset; names are bound values."""
    import core.evidence.importers as imp

    session = SessionStore(Store(read_only_file, read_only=True))
    bad = b"gpu,model,batch,input_tokens,output_tokens,tokens_per_s\nh100-sxm,llama-3.1-8b,1,1024,128,fast\n"
    with pytest.raises(ImportFileError, match=r"^bad.csv: row 1, column tokens_per_s: not a number: 'fast'"):
        import_file(session, bad, "bad.csv")
    real = imp.read_sql
    monkeypatch.setattr(imp, "read_sql", lambda n: "SELECT * FROM no_such_table" if n == "insert_measurements" else real(n))
    with pytest.raises(Exception, match="no_such_table"):
        import_file(session, (FIXTURES / "generic.csv").read_bytes(), "generic.csv")
    monkeypatch.undo()
    assert list_datasets(session)["name"].to_list() == ["vllm_serve.json"]
    with session.transaction() as cur:
        assert cur.execute("SELECT count(*) FROM measurements").fetchone() == (0,)
    nasty = "x'); DROP TABLE datasets; --"
    res = import_file(session, (FIXTURES / "generic.csv").read_bytes(), "generic.csv", name=nasty)
    assert list_datasets(session)["name"].to_list() == [nasty, "vllm_serve.json"]
    assert dataset_rows(session, res.dataset_id).height == 11
