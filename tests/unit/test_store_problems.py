"""A store that cannot be used says so in one line naming the file and what to do (issue 32)."""

from __future__ import annotations

import errno
from pathlib import Path

import duckdb
import pytest

from core.catalogue.catalogue import load_catalogue
from core.cli import main
from core.store import Store, StoreError
from core.store.store import storage_problem


def _built(path: Path) -> Path:
    Store(path).file.close()
    return path


def test_a_truncated_store_is_one_line_in_the_cli(tmp_path, capsys):
    db = _built(tmp_path / "s.duckdb")
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size // 2)
    assert main(["gpus", "--db", str(db), "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: the store file {db} is truncated")
    assert "move it aside" in err[0] and "Could not read enough bytes" in err[0]  # the original error kept


def test_a_corrupt_block_is_named_as_such(tmp_path):
    db = _built(tmp_path / "c.duckdb")
    data = bytearray(db.read_bytes())
    # 10 KB flipped at four places of the 4 MB file: where DuckDB put each table differs from build to build (one place
    # hit the accelerators on one build and nothing read on another), so every catalogue table is read
    for start in (300_000, 1_200_000, 2_400_000, 3_600_000):
        for i in range(start, min(start + 10_000, len(data))):
            data[i] ^= 0xFF
    db.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=rf"the store file {db} is corrupt; restore it from a backup") as err:
        load_catalogue(Store(db))
    assert "checksum" in str(err.value)


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (duckdb.IOException('IO Error: Could not write file "x": No space left on device'), "the disk holding it is full; free space"),
        (OSError(errno.ENOSPC, "No space left on device"), "the disk holding it is full"),
        (duckdb.IOException('IO Error: Cannot open file "/ro/s.duckdb": Permission denied'), "cannot be written here; set ROOFLINE_DB"),
        (OSError(errno.EROFS, "Read-only file system"), "cannot be written here"),
    ],
)
def test_a_full_disk_and_an_unwritable_folder_are_named(exc, said):
    problem = storage_problem(exc, Path("/data/s.duckdb"))
    assert problem is not None and said in str(problem) and "/data/s.duckdb" in str(problem)


def test_an_error_of_a_query_is_not_taken_for_a_storage_problem():
    assert storage_problem(duckdb.CatalogException("Catalog Error: Table with name nope does not exist!"), Path("s")) is None


def test_a_failed_commit_shows_its_own_error_not_the_rollbacks(tmp_path):
    """When the transaction has already ended (as a failed COMMIT leaves it), ROLLBACK raises 'no transaction is active':
    the error raised is the one that happened."""
    store = Store(tmp_path / "s.duckdb")

    class Real(Exception):
        pass

    with pytest.raises(Real), store.transaction() as cur:
        cur.execute("ROLLBACK")  # the transaction ends here, as a failed commit ends it
        raise Real("the error that matters")
