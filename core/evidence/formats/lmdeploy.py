"""LMDeploy `profile_throughput` / `profile_restful_api` CSV (old and new column sets)."""

from __future__ import annotations

from core.evidence.formats import Format

#: This module's formats, in detection order (core.evidence.formats.registry puts them before the older ones).
FORMATS: tuple[Format, ...] = ()
