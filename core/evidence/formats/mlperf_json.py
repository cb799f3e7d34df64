"""MLPerf Inference v5.x `summary_results.json`."""

from __future__ import annotations

from core.evidence.formats import Format

#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = ()
