"""Keep freed memory in the process, so the engine's large arrays are not faulted in afresh at every step.

A catalogue sweep builds and drops hundreds of arrays of a few MB each.
glibc serves such blocks from the heap once it has seen one freed, but
hands the top of the heap back to the kernel whenever more than twice that
is free; the next array then faults its pages in again. On a virtual
machine those faults took about a third of a full-catalogue sweep
(benchmarks/sweep.py prints the sweep both ways). `keep_freed_memory` sets
the two thresholds so that blocks up to 32 MB come from the heap and a free
heap is not trimmed below 1 GB: the process's resident memory stays at its
high-water mark instead of shrinking between sweeps.

The app's server (serve.py), the CLI and the benchmarks call it once at
start. Elsewhere than Linux with glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap (glibc's largest allowed mmap threshold on 64-bit).
MMAP_THRESHOLD = 32 * 1024 * 1024
#: Free heap above this is returned to the kernel.
TRIM_THRESHOLD = 1 << 30


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds (see the module docstring); True if both were set."""
    if platform.system() != "Linux":
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
