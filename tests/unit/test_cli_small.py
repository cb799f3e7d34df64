"""The CLI's small things: --out into a folder not there yet, `datasets`, `delete-dataset`, the duplicate import's hint."""

from __future__ import annotations

import csv
import json
import os
import shlex
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

import core.evidence.importers as importers
from core.cli import main
from core.model.sweep import DEFAULT_CONTEXTS, DEFAULT_WEIGHTS
from tests.helpers import FIXTURES, ROOT, roofline

GENERIC_ROWS = 11  # data lines of tests/fixtures/generic.csv (12 lines less the header)
REFERENCE_TABLES = ("accelerators", "models", "prices", "reference_measurements", "custom_accelerators", "custom_models")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, object, str]:
    """Run the CLI in-process with --json: exit status, parsed stdout (None when empty), stderr."""
    ran = roofline(capsys, *args, "--json")
    return ran.returncode, (json.loads(ran.stdout) if ran.stdout.strip() else None), ran.stderr


def counts(db: Path) -> dict[str, int]:
    with duckdb.connect(str(db)) as con:
        tables = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in (*REFERENCE_TABLES, "datasets")}  # type: ignore[index]
        by_dataset = con.execute("SELECT dataset_id, count(*) FROM measurements GROUP BY dataset_id").fetchall()
    return {**tables, **{f"measurements of {i}": n for i, n in by_dataset}}


# -- --out into a folder that is not there -------------------------------------------------


def test_report_out_into_a_missing_folder_creates_it(tmp_path, capsys):
    """report --out a/b/r.html: the folders are made and the whole report written (the bytes the command counts)."""
    out = tmp_path / "a" / "b" / "r.html"
    rc, res, err = cli(
        capsys, "report", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--out", str(out), "--db", str(tmp_path / "s.duckdb")
    )
    assert rc == 0, err
    assert res == {"out": str(out), "bytes": out.stat().st_size}
    assert out.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    assert [p.name for p in out.parent.iterdir()] == ["r.html"]  # no temporary file left beside it


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_sweep_out_into_a_missing_folder_creates_it(tmp_path, capsys, suffix):
    """sweep --out new/x.csv|parquet: one accelerator, one model, batch 1 -> one row per default weight format and context."""
    out = tmp_path / "new" / f"x{suffix}"
    args = ("sweep", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--batch", "1", "--out", str(out), "--db", str(tmp_path / "s.duckdb"))
    rc, res, err = cli(capsys, *args)
    assert rc == 0, err
    expected = len(DEFAULT_WEIGHTS) * len(DEFAULT_CONTEXTS)
    if suffix == ".csv":
        with out.open(newline="") as f:
            rows = list(csv.DictReader(f))
    else:
        rows = pl.read_parquet(out).to_dicts()
    assert res == {"rows": expected, "out": str(out)} and len(rows) == expected
    assert {int(r["context"]) for r in rows} == set(DEFAULT_CONTEXTS)


def test_out_below_a_file_is_refused_in_one_line_before_the_work(tmp_path, capsys):
    """A folder in --out that is a file: one line naming it, exit 2, nothing written, for report, sweep and probe."""
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x")
    db = str(tmp_path / "s.duckdb")
    for folder, args in (
        (blocker, ("report", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--out", str(blocker / "r.html"), "--db", db)),
        (blocker / "sub", ("sweep", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--out", str(blocker / "sub" / "s.csv"), "--db", db)),
        (blocker, ("probe", "--device", "cpu", "--quick", "--out", str(blocker / "p.json"))),
    ):
        rc = main(list(args))
        out, err = capsys.readouterr()
        assert (rc, out) == (2, ""), args
        assert err == f"error: --out: cannot create the folder {folder}: {blocker} is a file\n"
    assert blocker.read_text() == "x"


def test_out_that_is_a_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / "results.csv"
    folder.mkdir()
    rc, _, err = cli(
        capsys, "sweep", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--out", str(folder), "--db", str(tmp_path / "s.duckdb")
    )
    assert rc == 2 and err == f"error: --out: {folder} is a folder; give a file name in it\n"


def test_probe_makes_the_out_folder_before_it_measures(tmp_path, capsys, monkeypatch):
    """The probe's --out folder exists when the measurement starts (a long run is not lost at the end)."""
    import core.probe.cli as probe_cli

    out = tmp_path / "probes" / "today" / "p.json"
    seen: list[bool] = []
    monkeypatch.setattr(probe_cli, "measure", lambda args, backend: seen.append(args.out.parent.is_dir()))
    assert main(["probe", "--device", "cpu", "--quick", "--out", str(out)]) == 0
    assert seen == [True]


# -- datasets and delete-dataset -------------------------------------------------------------


@pytest.fixture
def two(tmp_path, capsys) -> tuple[Path, dict, dict]:
    """A store with two imported datasets: vllm_serve.json (as 'vllm run') and generic.csv."""
    db = tmp_path / "d.duckdb"
    rc, a, err = cli(capsys, "import", str(FIXTURES / "vllm_serve.json"), "--gpu", "h100-sxm", "--name", "vllm run", "--db", str(db))
    assert rc == 0, err
    rc, b, err = cli(capsys, "import", str(FIXTURES / "generic.csv"), "--db", str(db))
    assert rc == 0, err
    return db, a, b  # type: ignore[return-value]


def test_datasets_lists_name_format_rows_and_time_newest_first(two, capsys):
    db, a, b = two
    rc, listed, err = cli(capsys, "datasets", "--db", str(db))
    assert rc == 0, err
    assert [(d["id"], d["name"], d["format"], d["rows"], d["file_name"]) for d in listed] == [  # type: ignore[union-attr]
        (b["dataset_id"], "generic.csv", "generic-csv", GENERIC_ROWS, "generic.csv"),
        (a["dataset_id"], "vllm run", "vllm-serve", 1, "vllm_serve.json"),
    ]
    for d in listed:  # type: ignore[union-attr]
        assert abs((datetime.now() - datetime.fromisoformat(d["imported_at"])).total_seconds()) < 3600 * 24


def test_datasets_on_an_empty_store_is_an_empty_list(tmp_path, capsys):
    assert cli(capsys, "datasets", "--db", str(tmp_path / "e.duckdb"))[:2] == (0, [])


def test_delete_dataset_by_name_removes_it_and_its_measurements_only(two, capsys):
    """Deleting 'vllm run': its dataset row and its measurement go; the other dataset and every reference table stay."""
    db, a, b = two
    before = counts(db)
    assert before[f"measurements of {a['dataset_id']}"] == 1 and before[f"measurements of {b['dataset_id']}"] == GENERIC_ROWS
    rc, res, err = cli(capsys, "delete-dataset", "vllm run", "--db", str(db))
    assert rc == 0, err
    assert res == {"deleted": {"id": a["dataset_id"], "name": "vllm run", "rows": 1}}
    after = counts(db)
    assert after == {k: v for k, v in before.items() if k != f"measurements of {a['dataset_id']}"} | {"datasets": before["datasets"] - 1}
    assert all(after[t] > 0 for t in ("accelerators", "models", "prices", "reference_measurements"))
    rc, res, err = cli(capsys, "delete-dataset", str(b["dataset_id"]), "--db", str(db))  # by id
    assert rc == 0 and res["deleted"]["name"] == "generic.csv"  # type: ignore[index]
    assert cli(capsys, "datasets", "--db", str(db))[1] == []


def test_delete_an_unknown_dataset_names_the_closest(two, capsys):
    db, a, _ = two
    before = counts(db)
    rc, _, err = cli(capsys, "delete-dataset", "vllm rn", "--db", str(db))
    assert rc == 2 and err == f"error: DATASET: 'vllm rn' is not stored; did you mean 'vllm run' (id {a['dataset_id']})?\n"
    rc, _, err = cli(capsys, "delete-dataset", "qqqqqqqq", "--db", str(db))
    assert rc == 2 and err == "error: DATASET: 'qqqqqqqq' is not stored; `roofline datasets` lists the stored ones\n"
    assert counts(db) == before


def test_delete_refuses_a_name_two_datasets_share(tmp_path, capsys):
    db = str(tmp_path / "n.duckdb")
    for f in ("generic.csv", "vllm_serve.json"):
        assert cli(capsys, "import", str(FIXTURES / f), "--gpu", "h100-sxm", "--name", "same", "--db", db)[0] == 0
    rc, _, err = cli(capsys, "delete-dataset", "same", "--db", db)
    assert rc == 2 and err == "error: DATASET: 'same' names 2 datasets (2, 1): give the id\n"


def test_delete_is_one_transaction(two, capsys, monkeypatch):
    """When the second statement fails, the first (the measurements) is rolled back: the dataset is whole."""
    db, a, _ = two
    before = counts(db)
    real = importers.read_sql
    monkeypatch.setattr(importers, "read_sql", lambda name: "DELETE FROM no_such_table" if name == "delete_dataset" else real(name))
    with pytest.raises(duckdb.CatalogException):
        main(["delete-dataset", "vllm run", "--db", str(db)])
    capsys.readouterr()
    assert counts(db) == before


def test_a_second_import_names_the_command_that_deletes_the_first(two, capsys):
    """The refusal's hint is a command that works: run as printed, it deletes the dataset and the file imports again."""
    db, a, _ = two
    rc, _, err = cli(capsys, "import", str(FIXTURES / "vllm_serve.json"), "--gpu", "h100-sxm", "--db", str(db))
    assert rc == 2 and err.count("\n") == 1
    assert err.startswith(f"error: vllm_serve.json: already imported as dataset {a['dataset_id']} ('vllm run', ")
    hint = err.split("`")[1]
    assert hint == f"roofline delete-dataset {a['dataset_id']} --db {shlex.quote(str(db))}"
    assert cli(capsys, *shlex.split(hint)[1:])[0] == 0
    rc, res, err = cli(capsys, "import", str(FIXTURES / "vllm_serve.json"), "--gpu", "h100-sxm", "--db", str(db))
    assert rc == 0 and res["rows"] == 1, err  # type: ignore[index]


def _modules_after(*argv: str) -> set[str]:
    """The modules a fresh process holds after `roofline ARGV` (its own output discarded)."""
    import subprocess
    import sys

    code = (
        "import contextlib, io, sys\n"
        "from core.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({list(argv)!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return set(out.split())


def test_help_needs_no_data_library_and_a_command_imports_only_what_it_uses(tmp_path):
    """`roofline --help` comes from the parser alone; `roofline ceiling` imports neither the importers, nor the purchase
    search, nor the pages' presentation code."""
    helped = _modules_after("--help")
    assert not {"polars", "numpy", "duckdb", "pydantic", "pyarrow"} & helped
    assert not any(m.startswith("core.") and m not in ("core.cli",) for m in helped), sorted(m for m in helped if m.startswith("core."))
    db = str(tmp_path / "c.duckdb")
    used = _modules_after("ceiling", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--db", db, "--json")
    assert "core.model.ceilings" in used
    assert not {m for m in used if m.startswith(("core.evidence.formats", "core.evidence.importers", "core.plan.purchase", "core.present"))}


@pytest.mark.slow
def test_every_command_line_the_readme_shows_runs(tmp_path, capsys):
    """Each `roofline ...` line of the README's examples runs as written from the repository root (on a store of its
    own, writing under a temporary `out/`), except the probe's (it measures this machine: tests/unit/test_probe.py) and
    the import of a file a benchmark run writes."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [ln.strip() for block in re.findall(r"```bash\n(.*?)```", readme, re.S) for ln in block.splitlines()]
    commands = [ln for ln in lines if ln.startswith("roofline ") and "rl+gpu=" not in ln]
    assert len(commands) >= 14
    db = str(tmp_path / "readme.duckdb")
    cwd = Path.cwd()
    try:
        os.chdir(ROOT)
        for line in commands:
            argv = [a.replace("out/", f"{tmp_path}/out/") for a in shlex.split(line, comments=True)[1:]]
            assert main([*argv, "--db", db]) == 0, (line, capsys.readouterr().err)
    finally:
        os.chdir(cwd)
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "out" / "sweep.parquet").is_file()
