"""Processes sharing one store file: waiting for the lock, giving up clearly, caches that see other processes' writes, read-only mode."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from filelock import FileLock, Timeout

from core.catalogue.catalogue import load_catalogue
from core.evidence.importers import import_file, list_datasets
from core.store import ReadOnlyError, Store, StoreError
from tests.helpers import FIXTURES, ROOT

# holds the file read-write until a line arrives on stdin, saying "held" once it has it
HOLDER = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); sys.stdin.readline(); c.close()"
# keeps working on the store (like the app under load) until a line arrives on stdin
WORKER = (
    "import sys, threading; from core.store import Store; s = Store(sys.argv[1]); stop = threading.Event(); n = [0]\n"
    "def work():\n"
    "    while not stop.is_set():\n"
    "        s.query('datasets'); s.query('accelerators'); n[0] += 1\n"
    "t = threading.Thread(target=work); t.start(); print('working', flush=True); sys.stdin.readline(); stop.set(); t.join(); print(n[0], flush=True)"
)


def _spawn(code: str, db: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(db)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ}
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # blocks until the child holds the file (or works on it)
    return proc


def _finish(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate("stop\n", timeout=30)
    return out


def _cli(*args: str, db: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core.cli", *args, "--db", str(db), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


@pytest.mark.slow  # starts processes
def test_a_store_releases_the_file_when_idle(tmp_path):
    """After its operations end the store closes the file, so another process can open it read-write."""
    db = tmp_path / "s.duckdb"
    store = Store(db, busy_timeout=0.1)
    assert store.query("accelerators").height > 40
    store.close()
    holder = _spawn(HOLDER, db)  # would fail with a lock conflict if the file were still held
    try:
        with pytest.raises(StoreError, match=r"store busy: .*try again"):
            store.query("accelerators")
    finally:
        _finish(holder)
    assert store.query("accelerators").height > 40  # and it opens again once the other process is done


@pytest.mark.slow  # starts processes
def test_a_busy_store_waits_for_the_other_process(tmp_path):
    """A query while another process holds the file retries until it is free, then succeeds."""
    db = tmp_path / "s.duckdb"
    Store(db).close()
    holder = _spawn(HOLDER, db)
    started = time.monotonic()
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(Store(db, busy_timeout=20).query("accelerators").height))
    t.start()
    _finish(holder)
    t.join(30)
    assert result and result[0] > 40
    assert time.monotonic() - started < 20


# an app process that holds the store inside one long transaction until a line arrives on stdin
APP_HOLDER = (
    "import sys; from core.store import Store; s = Store(sys.argv[1])\n"
    "with s.transaction() as cur:\n"
    "    cur.execute('SELECT 1'); print('held', flush=True); sys.stdin.readline()\n"
    "s.close()"
)


@pytest.mark.slow  # starts processes
def test_two_app_processes_take_turns_by_the_lock_beside_the_file(tmp_path):
    """While an app process holds the store, another waits for its turn on `<db>.lock` (its marker beside the file
    saying so) rather than retrying DuckDB, and gets it once the first lets go; no marker is left behind."""
    db = tmp_path / "s.duckdb"
    Store(db).close()
    FileLock(tmp_path / "s.duckdb.lock").acquire(blocking=False).lock.release()  # free once a store has closed
    holder = _spawn(APP_HOLDER, db)
    with pytest.raises(Timeout):
        FileLock(tmp_path / "s.duckdb.lock").acquire(blocking=False)  # the other process has its turn
    result: list[int] = []
    waiter = threading.Thread(target=lambda: result.append(Store(db, busy_timeout=20).query("accelerators").height))
    waiter.start()
    deadline = time.monotonic() + 10
    while not list(tmp_path.glob("s.duckdb.wait-*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [m.name for m in tmp_path.glob("s.duckdb.wait-*")] == [f"s.duckdb.wait-{os.getpid()}"]
    assert not result  # still waiting: the other process has the file
    _finish(holder)
    waiter.join(30)
    assert result and result[0] > 40
    assert not list(tmp_path.glob("s.duckdb.wait-*"))


@pytest.mark.slow  # starts processes
def test_a_cli_import_succeeds_while_another_process_keeps_querying(tmp_path):
    """The app's pattern (queries in a loop) and a CLI import on the same file: the import goes in whole."""
    db = tmp_path / "s.duckdb"
    Store(db).close()
    worker = _spawn(WORKER, db)
    try:
        res = _cli("import", str(FIXTURES / "generic.csv"), "--name", "while busy", db=db)
    finally:
        queries_done = int(_finish(worker).strip())
    assert res.returncode == 0, res.stderr
    assert queries_done > 0
    datasets = list_datasets(Store(db))
    assert datasets["name"].to_list() == ["while busy"]
    assert datasets["row_count"][0] == Store(db).query("dataset_measurements", dataset_id=datasets["id"][0]).height


@pytest.mark.slow  # starts processes
def test_the_catalogue_cache_sees_another_process_write(tmp_path):
    """A custom accelerator added by another process appears in this process's cached catalogue."""
    db = tmp_path / "s.duckdb"
    store = Store(db)
    before = load_catalogue(store).gpus.height
    code = (
        "import sys; from core.store import Store; from core.catalogue.catalogue import add_custom_accelerator\n"
        "from core.catalogue.seed import accelerator_from_row\n"
        "add_custom_accelerator(Store(sys.argv[1]), accelerator_from_row({'id': 'other-proc', 'name': 'Other', 'vendor': 'Me', "
        "'form_factor': 'custom', 'memory_bytes': 64e9, 'bandwidth_bytes_per_s': 2e12, 'peak_bf16': 5e14, 'sources': 'x'}))"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], cwd=ROOT, check=True, timeout=60)
    cat = load_catalogue(store)
    assert cat.gpus.height == before + 1
    assert "other-proc" in cat.gpus["id"].to_list()


def test_read_only_mode_reads_an_existing_store_and_refuses_writes(tmp_path):
    """ROOFLINE_READ_ONLY: the datasets are there; the store itself refuses an import (the app keeps uploads in a SessionStore) and the file is unchanged."""
    db = tmp_path / "s.duckdb"
    rw = Store(db)
    import_file(rw, (FIXTURES / "generic.csv").read_bytes(), "generic.csv", name="kept")
    rw.close()
    size, mtime = db.stat().st_size, db.stat().st_mtime_ns
    ro = Store(db, read_only=True)
    assert list_datasets(ro)["name"].to_list() == ["kept"]
    with pytest.raises(ReadOnlyError, match="read-only"):
        import_file(ro, (FIXTURES / "generic.csv").read_bytes().replace(b"657.7", b"657.8"), "again.csv")
    ro.close()
    assert (db.stat().st_size, db.stat().st_mtime_ns) == (size, mtime)


def test_read_only_mode_without_a_file_builds_the_seed_in_memory(tmp_path):
    """No store file yet: the seed is loaded into memory and no file is created."""
    db = tmp_path / "absent.duckdb"
    ro = Store(db, read_only=True)
    seed_rows = pl.read_csv(ROOT / "data/seed/accelerators.csv", infer_schema_length=0).height
    assert ro.in_memory
    assert ro.query("accelerators").height == seed_rows
    with pytest.raises(ReadOnlyError):
        ro.execute("rename_dataset", id=1, name="x")
    assert not db.exists()


@pytest.mark.slow  # starts processes
def test_cli_import_in_read_only_mode_is_refused_with_a_message(tmp_path):
    """The CLI names the reason and exits 2; nothing is stored."""
    db = tmp_path / "s.duckdb"
    Store(db).close()
    res = _cli("import", str(FIXTURES / "generic.csv"), db=db, ROOFLINE_READ_ONLY="1")
    assert res.returncode == 2
    assert "read-only (ROOFLINE_READ_ONLY=1)" in res.stderr
    assert list_datasets(Store(db)).height == 0
