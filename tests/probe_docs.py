"""Probe documents with figures a test chooses (one run per figure), for the import, page and browser tests, and the
probe itself on small buffers (SmallNumpyBackend)."""

from __future__ import annotations

from core.probe.document import BandwidthRun, Device, Host, MatmulRun, ProbeDocument, summarise
from core.probe.methods import product_cost
from core.probe.numpy_backend import NumpyBackend

N = 8192  # the square product each peak comes from


def probe_document(
    name: str, bandwidth: float, peaks: dict[str, float], *, kind: str = "cuda", memory_bytes: float = 80e9
) -> ProbeDocument:
    """A document whose best copy reached `bandwidth` (bytes/s) and whose square products reached `peaks` (FLOP/s)."""
    moved = 8e8
    runs = [
        BandwidthRun(
            method="copy",
            buffer_bytes=moved / 2,
            bytes_moved=moved,
            bytes_per_s=bandwidth,
            repeats=1,
            best_s=moved / bandwidth,
            median_s=moved / bandwidth,
            times_s=[moved / bandwidth],
        )
    ]
    products = []
    for precision, reached in peaks.items():
        flops, nbytes = product_cost(precision, N, N, N)
        products.append(
            MatmulRun(
                precision=precision,
                shape="square",
                m=N,
                n=N,
                k=N,
                flops=flops,
                bytes=nbytes,
                flops_per_s=reached,
                repeats=1,  # type: ignore[arg-type]
                best_s=flops / reached,
                median_s=flops / reached,
                times_s=[flops / reached],
            )
        )
    return ProbeDocument(
        created_at="2026-12-01T12:00:00+00:00",
        device=Device(name=name, kind=kind, backend="torch", memory_bytes=memory_bytes),  # type: ignore[arg-type]
        host=Host(platform="test", python="3.11"),
        bandwidth=runs,
        matmul=products,
        summary=summarise(runs, products),
    )


#: The last-level cache the tests' probe says its CPU has. The probe sizes its buffers from the cache (8 x it, or a
#: twelfth of the memory): on this machine's 480 MiB L3 a quick probe streams two 2 GB buffers, about a minute of
#: copying; at 1 MiB it streams 8 MiB ones in well under a second. How well the figures agree with NumPy timed alone
#: is benchmarks/probe.py's question, not the tests'.
SMALL_CACHE_BYTES = float(2**20)


class SmallNumpyBackend(NumpyBackend):
    """The CPU measured through NumPy as the probe measures it, on a device that reports a 1 MiB last-level cache."""

    def device(self) -> Device:
        return super().device().model_copy(update={"last_level_cache_bytes": SMALL_CACHE_BYTES})
