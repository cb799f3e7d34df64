"""`python -m core.probe` (also `roofline probe`): measure this machine and write the probe document.

    python -m core.probe [--device auto|cuda|rocm|mps|cpu] [--quick] [--out FILE] [--json]

auto takes a GPU through PyTorch when PyTorch is installed and sees one, the
CPU through NumPy otherwise; cpu always uses NumPy. Progress goes to stderr;
--json prints the document on stdout, --out writes it to a file, and
without either a summary is printed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from core.probe.document import ProbeDocument
from core.probe.methods import Backend, run_probe
from core.probe.numpy_backend import NumpyBackend
from core.probe.torch_backend import TorchBackend, available, pick_device

DEVICES = ("auto", "cuda", "rocm", "mps", "cpu")
NO_TORCH = "PyTorch is not installed: pip install -r requirements-probe.txt (the CPU is measured with NumPy: --device cpu)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--device", choices=DEVICES, default="auto", help="what to measure (auto: a GPU through PyTorch if present, else the CPU)"
    )
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats (a few seconds on a CPU)")
    parser.add_argument("--out", type=Path, help="write the probe document (JSON) to this file")
    parser.add_argument("--json", action="store_true", help="print the probe document (JSON) on stdout")


def backend_for(device: str) -> Backend:
    """The backend that measures `device`; RuntimeError naming what is missing."""
    if device == "cpu":
        return NumpyBackend()
    if not available():
        if device == "auto":
            return NumpyBackend()
        raise RuntimeError(f"--device {device}: {NO_TORCH}")
    import torch

    kind = pick_device(device, torch)
    return NumpyBackend() if kind == "cpu" else TorchBackend(kind)


def summary_text(doc: ProbeDocument) -> str:
    """The two roofs in a few lines, with the spread of the runs behind them."""
    lines = [f"{doc.device.name} ({doc.device.kind}, {doc.device.backend})"]
    best = max(doc.bandwidth, key=lambda r: r.bytes_per_s)
    lines.append(
        f"  bandwidth  {doc.summary.bandwidth_bytes_per_s / 1e9:,.1f} GB/s  ({best.method} over {best.buffer_bytes / 1e6:,.0f} MB, "
        f"median {best.spread:+.1%} slower)"
    )
    for prec, flops in doc.summary.peak_flops.items():
        run = max((r for r in doc.matmul if r.precision == prec and r.shape == "square"), key=lambda r: r.flops_per_s)
        lines.append(f"  {prec:<5}      {flops / 1e12:,.3f} TFLOP/s  (square {run.m}, median {run.spread:+.1%} slower)")
    for s in doc.skipped:
        lines.append(f"  skipped: {s.what}: {s.why}")
    return "\n".join(lines)


def measure(args: argparse.Namespace, backend: Backend) -> ProbeDocument:
    """Run the probe on a backend and write or print its document as the options say."""
    doc = run_probe(backend, quick=args.quick, progress=lambda m: print(f"probe: {m}", file=sys.stderr, flush=True))
    if args.out:
        try:
            args.out.write_text(doc.to_json(), encoding="utf-8")
        except OSError as exc:
            raise RuntimeError(f"--out: cannot write {args.out}: {exc.strerror or exc}") from None
        print(f"probe: wrote {args.out}", file=sys.stderr)
    if args.json:
        print(doc.to_json())
    else:
        print(summary_text(doc), file=sys.stderr if args.out else sys.stdout)
    return doc


def out_problem(out: Path) -> str | None:
    """Before a run of minutes: what stops the document being written to `out`, its folder created if missing (None: nothing)."""
    if out.is_dir():
        return f"--out: {out} is a folder; give a file name, e.g. {out / 'probe.json'}"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"--out: cannot create the folder {out.parent}: {exc.strerror or exc}"
    if not os.access(out.parent, os.W_OK | os.X_OK):
        return f"--out: cannot write in {out.parent} (permission denied)"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.probe", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.out and (problem := out_problem(args.out)):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        measure(args, backend_for(args.device))
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
