"""`pip install .`: a wheel whose `roofline` command works from any folder, with the queries and seed inside it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ROOT


def test_every_core_package_is_in_the_wheel():
    """pyproject.toml lists the packages by hand (two of them are mapped folders): none may be missing."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "core").rglob("__init__.py")}
    assert on_disk <= listed, on_disk - listed


@pytest.mark.slow
def test_the_installed_command_runs_from_any_folder(tmp_path):
    """Build the wheel offline, install it alone into a fresh environment (its dependencies seen through a
    path file, not the checkout), and run `roofline` from an empty folder: same figures as the checkout,
    a store created in the user's data folder."""
    py = sys.executable
    src, dist = tmp_path / "src", tmp_path / "dist"
    skip = shutil.ignore_patterns("__pycache__", "*.duckdb*")
    for part in ("pyproject.toml", "requirements.txt", "core", "queries", "data/seed"):  # built in a copy: nothing lands in the checkout
        (src / part).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / part).is_dir():
            shutil.copytree(ROOT / part, src / part, ignore=skip)
        else:
            shutil.copy(ROOT / part, src / part)
    build = subprocess.run(
        [py, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = dist.glob("roofline_explorer-*.whl")
    env_dir = tmp_path / "env"
    subprocess.run([py, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    env_py = env_dir / "bin" / "python"
    site = subprocess.run([env_py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True)
    (Path(site.stdout.strip()) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [py, "-m", "pip", "--python", str(env_py), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROOFLINE_DB", "XDG_DATA_HOME")}
    env["HOME"] = str(tmp_path / "home")

    def roofline(*args: str) -> object:
        proc = subprocess.run(
            [env_dir / "bin" / "roofline", *args, "--json"], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    where = subprocess.run([env_py, "-c", "import core; print(core.__file__)"], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert where.stdout.startswith(str(env_dir)), where.stdout  # the wheel's copy, not the checkout
    ridge = roofline("ridge", "--gpu", "h100-sxm")
    assert ridge["ridge"] == pytest.approx(989.4e12 / 3.35e12)  # H100 SXM: 989.4 TFLOP/s dense bf16 over 3.35 TB/s
    out = roofline("ceiling", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--num-gpus", "2", "--batch", "32", "--context", "1024")
    from core.catalogue.catalogue import load_catalogue
    from core.model.ceilings import ceiling
    from core.model.scenario import Scenario
    from core.store import Store

    here = ceiling(
        load_catalogue(Store(tmp_path / "here.duckdb")), Scenario(gpu="h100-sxm", model="llama-3.1-70b", num_gpus=2, batch=32, context=1024)
    )
    assert out["step_time_s"] == pytest.approx(here.step_time_s, rel=1e-12)
    assert out["ttft_s"] == pytest.approx(here.ttft_s, rel=1e-12)
    assert (tmp_path / "home" / ".local" / "share" / "roofline-explorer" / "roofline.duckdb").is_file()
    assert not list(elsewhere.iterdir())  # nothing written where it ran
    report = tmp_path / "r.html"  # the report's template travels in the wheel
    roofline("report", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--out", str(report))
    assert "<h2>Headline figures</h2>" in report.read_text(encoding="utf-8")
