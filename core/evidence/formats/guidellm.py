"""guidellm (the vLLM project's load tool): benchmarks.json / .yaml / .csv of every version."""

from __future__ import annotations

from core.evidence.formats import Format

#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = ()
