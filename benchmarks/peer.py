"""Benchmark: one scenario through `ceiling()` against LLM-Viewer's `ModelAnalyzer.analyze()`, its plain-Python peer.

Both are timed in this process on the same scenario, alternated, best of --repeat samples of --calls calls each, in
CPU time (time.process_time): Llama 3.1 70B on an H100 at batch 32 and context 2,048, and Llama 3.1 8B on an A100 at
batch 1. Then `evaluate()` of 1, 10, 100 and 1,000 scenarios as a curve, per scenario, beside a loop of `ceiling()`
calls over the same scenarios (where the vectorised frame breaks even with the per-scenario loop).

LLM-Viewer (github.com/hahnyuan/LLM-Viewer) is read from a local copy: $ROOFLINE_LLM_VIEWER, else
benchmarks/peers/LLM-Viewer (git-ignored). Without one its rows are skipped, with the command that gets it:

    git clone https://github.com/hahnyuan/LLM-Viewer benchmarks/peers/LLM-Viewer

It reads models with transformers' AutoConfig from the network; here `transformers` is a stand-in module whose
AutoConfig reads the catalogue's own config.json (data/seed/models/<id>.json), so nothing is fetched.

    .venv/bin/python benchmarks/peer.py [--calls 200] [--repeat 5]

Target (issue 30): ceiling() at most 2x analyze()'s CPU time (the goal is parity).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.catalogue.catalogue import load_catalogue  # noqa: E402
from core.model.ceilings import ceiling, evaluate  # noqa: E402
from core.model.scenario import Scenario  # noqa: E402
from core.store import Store  # noqa: E402

#: (label, our scenario, LLM-Viewer's hardware key, the catalogue model whose config.json it reads, seqlen, batch)
CASES = (
    (
        "Llama 3.1 70B on H100, batch 32, context 2,048",
        Scenario(gpu="h100-sxm", model="llama-3.1-70b", batch=32, context=2048, prompt=2048),
        "nvidia_H100",
        "llama-3.1-70b",
        2048,
        32,
    ),
    (
        "Llama 3.1 8B on A100, batch 1, context 2,048",
        Scenario(gpu="a100-80gb-sxm", model="llama-3.1-8b", batch=1, context=2048, prompt=2048),
        "nvidia_A100_80G",
        "llama-3.1-8b",
        2048,
        1,
    ),
)
SIZES = (1, 10, 100, 1000)


def peer_dir() -> Path | None:
    """The local copy of LLM-Viewer, or None."""
    where = Path(os.environ.get("ROOFLINE_LLM_VIEWER", ROOT / "benchmarks" / "peers" / "LLM-Viewer"))
    return where if (where / "model_analyzer.py").is_file() else None


def load_peer(where: Path) -> Any:
    """LLM-Viewer's ModelAnalyzer class, with a `transformers` stand-in that reads local config.json files."""

    class AutoConfig:
        @staticmethod
        def from_pretrained(path: str, **_: Any) -> Any:
            return types.SimpleNamespace(**json.loads(Path(path).read_text(encoding="utf-8")))

    stand_in = types.ModuleType("transformers")
    stand_in.AutoConfig = AutoConfig  # type: ignore[attr-defined]
    stand_in.AutoTokenizer = stand_in.AutoModelForCausalLM = object  # type: ignore[attr-defined]
    sys.modules.setdefault("transformers", stand_in)
    sys.path.insert(0, str(where))
    cwd = os.getcwd()
    os.chdir(where)  # it imports its configs/ by a path relative to its folder
    try:
        from model_analyzer import ModelAnalyzer  # type: ignore[import-not-found]
    finally:
        os.chdir(cwd)
    return ModelAnalyzer


def config_folder(model: str) -> str:
    """The catalogue's config.json of `model` as LLM-Viewer's model id (a path whose name holds 'Llama', for its config)."""
    src = ROOT / "data" / "seed" / "models" / f"{model}.json"
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / "roofline-peer" / f"Llama-{model}"
    folder.mkdir(parents=True, exist_ok=True)
    data = json.loads(src.read_text(encoding="utf-8"))
    config = data.get("config", data)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder / "config.json")


def cpu_per_call(fn: Callable[[], Any], calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls


def alternated(a: Callable[[], Any], b: Callable[[], Any], calls: int, repeat: int) -> tuple[float, float]:
    """Best CPU time per call of each, their samples taken in turn (a, b, a, b ...)."""
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(cpu_per_call(a, calls))
        tb.append(cpu_per_call(b, calls))
    return min(ta), min(tb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per sample")
    parser.add_argument("--repeat", type=int, default=5, help="samples of each, alternated (the best is reported)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    store = Store(Path(os.environ.get("TMPDIR", "/tmp")) / "roofline-peer" / "peer.duckdb")
    cat = load_catalogue(store)
    where = peer_dir()
    analyzer = None
    if where is None:
        print("LLM-Viewer: no local copy; its rows are skipped. Get it with:")
        print("    git clone https://github.com/hahnyuan/LLM-Viewer benchmarks/peers/LLM-Viewer")
    else:
        analyzer = load_peer(where)
    for label, sc, hw, model, seqlen, batch in CASES:
        ours = lambda sc=sc: ceiling(cat, sc)  # noqa: E731
        ceiling(cat, sc)
        if analyzer is None:
            t = min(cpu_per_call(ours, args.calls) for _ in range(args.repeat))
            print(f"{label}: ceiling() {t * 1e3:.3f} ms CPU (LLM-Viewer skipped)")
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            peer = analyzer(config_folder(model), hw, config_file="configs/Llama.py")
        theirs = lambda peer=peer, seqlen=seqlen, batch=batch: peer.analyze(seqlen, batch, use_flashattention=True)  # noqa: E731
        theirs()
        t_ours, t_theirs = alternated(ours, theirs, args.calls, args.repeat)
        print(f"{label}: ceiling() {t_ours * 1e3:.3f} ms, LLM-Viewer analyze() {t_theirs * 1e3:.3f} ms CPU: {t_ours / t_theirs:.2f}x")
    print("evaluate() of n scenarios, CPU per scenario, against a loop of ceiling() over the same n (alternated, best of --repeat):")
    base = CASES[0][1]
    for n in SIZES:
        scenarios = [base.model_copy(update={"batch": 1 + i % 512, "context": 1024 + 64 * (i % 97)}) for i in range(n)]
        vec = lambda scenarios=scenarios: evaluate(cat, scenarios)  # noqa: E731
        loop = lambda scenarios=scenarios: [ceiling(cat, s) for s in scenarios]  # noqa: E731
        calls = max(1, args.calls // n)
        t_vec, t_loop = alternated(vec, loop, calls, args.repeat)
        print(
            f"  n = {n:>5,}: evaluate {t_vec / n * 1e6:9.1f} µs/scenario, loop {t_loop / n * 1e6:9.1f} µs/scenario: {t_loop / t_vec:.2f}x"
        )


if __name__ == "__main__":
    main()
