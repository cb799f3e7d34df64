"""Benchmark: the compare page's deployment search (core.present.deploy.deploy_view) against its one-group comparison.

The issue's case: 8 accelerators (H100, H200, B200, GB200, B300, MI300X, MI325X, MI355X) and one MoE model
(DeepSeek-V3, fp8, SGLang), expert parallel up to 64 GPUs an instance, disaggregated pools up to 16 GPUs an
instance, at 10 requests/s of 2,000 + 500 tokens with p90 targets of 2 s and 50 ms: every layout's step tables, the
closed-form sizing, the simulation of each kept plan (4,000 requests), each plan's goodput and the frontier over nine
TPOT targets. The same-run peer is the page's other view, `compare_view` of the same accelerators under the same
target (tensor parallel within one domain, every batch). Each is timed on a fresh catalogue (no warm caches of the
layouts' tables), alternated, best of --repeat, wall time.

    .venv/bin/python benchmarks/deploy_search.py [--repeat 5]

Target (issue 28): the deployment search under 2 s on this machine; the ratio to the one-group comparison is the
figure to compare across machines, the load average says how busy this one was.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.catalogue.catalogue import load_catalogue  # noqa: E402
from core.evidence.predictor import with_predictor  # noqa: E402
from core.model.scenario import Scenario  # noqa: E402
from core.plan.compare_request import CompareRequest  # noqa: E402
from core.plan.deploy import Workload  # noqa: E402
from core.present.deploy import deploy_view  # noqa: E402
from core.present.figures import compare_view  # noqa: E402
from core.store import Store  # noqa: E402

GPUS = ["h100-sxm", "h200-sxm", "b200", "gb200", "b300", "mi300x", "mi325x", "mi355x"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    store = Store(Path(tempfile.mkdtemp()) / "bench.duckdb")
    base = Scenario(gpu="h200-sxm", model="deepseek-v3", weights="fp8", kv="fp8", framework="SGLang", prompt=2000, context=2250)
    workload = Workload(rate_per_s=10, prompt=2000, output=500, max_ttft_p90_s=2.0, max_tpot_p90_s=0.05)
    deploy_s: list[float] = []
    group_s: list[float] = []
    plans = 0
    for _ in range(args.repeat):
        cat = with_predictor(load_catalogue(store))
        t = time.perf_counter()
        view = deploy_view(cat, base, workload, GPUS, max_gpus=64, max_pool_gpus=16)
        deploy_s.append(time.perf_counter() - t)
        plans = len(view.plans)
        cat = with_predictor(load_catalogue(store))
        t = time.perf_counter()
        compare_view(cat, GPUS, base, CompareRequest(mode="service target"))
        group_s.append(time.perf_counter() - t)
    d, g = min(deploy_s), min(group_s)
    print(f"deployment search, 8 accelerators x DeepSeek-V3 ({plans} plans kept): {d:.2f} s (best of {args.repeat})")
    print(f"one-group comparison of the same accelerators: {g:.2f} s")
    print(f"ratio: {d / g:.2f}x the one-group comparison; target: under 2 s")
    print(f"load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
