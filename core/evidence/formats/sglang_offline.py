"""SGLang `bench_offline_throughput` and `bench_one_batch_server` results."""

from __future__ import annotations

from core.evidence.formats import Format

#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = ()
