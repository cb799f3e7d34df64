"""llama.cpp `llama-batched-bench` (text table, -jsonl), `llama-server` timing lines and ollama --verbose."""

from __future__ import annotations

from core.evidence.formats import Format

#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = ()
