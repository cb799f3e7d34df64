"""Published GPU power and energy of LLM serving (data/seed/serving_power.csv): what a GPU draws while an engine serves,
as printed, with the configuration it was measured on (accelerator, GPUs, model, framework, batch).

Each row cites its source (ML.ENERGY Leaderboard v3's data files, SemiAnalysis InferenceX's power runs) with the
printed line as `quote`. `gpu_power_w` is one GPU's mean draw; `system_power_w` the sum over the row's GPUs (GPU only,
the note says); `joules_per_output_token` what the source computes from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from core.catalogue.deployments import frame_schema, read_seed_rows

CSV_COLUMNS = (
    "id",
    "source_url",
    "publisher",
    "gpu",
    "num_gpus",
    "model",
    "model_name",
    "framework",
    "phase",
    "batch",
    "request_rate_per_s",
    "metric",
    "value",
    "unit",
    "statistic",
    "source_date",
    "read_on",
    "quote",
    "note",
)
METRICS = ("gpu_power_w", "system_power_w", "joules_per_output_token", "joules_per_token", "tokens_per_joule")


class ServingPower(BaseModel):
    """One printed power or energy figure of LLM serving."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(pattern=r"^pwr-\d{3,}$")]
    source_url: Annotated[str, Field(pattern=r"^https?://\S+$")]
    publisher: str
    gpu: str
    num_gpus: Annotated[int, Field(ge=1, le=100_000)]
    model: str | None = None
    model_name: str | None = None
    framework: str | None = None
    phase: str | None = None
    batch: Annotated[int, Field(ge=1)] | None = None
    request_rate_per_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    metric: Annotated[str, Field(pattern="^(" + "|".join(METRICS) + ")$")]
    value: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    unit: str
    statistic: str | None = None
    source_date: str | None = None
    read_on: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    quote: Annotated[str, Field(min_length=1)]
    note: str | None = None


def power_seed_frame(seed_dir: Path, gpu_ids: set[str], model_ids: set[str]) -> pl.DataFrame:
    """data/seed/serving_power.csv as the store's `serving_power` rows, every row validated."""
    rows = read_seed_rows(seed_dir / "serving_power.csv", ServingPower, CSV_COLUMNS, gpu_ids, model_ids, "serving_power.csv")
    return pl.DataFrame(rows, schema=POWER_SCHEMA).select(list(CSV_COLUMNS))


POWER_SCHEMA: dict[str, Any] = frame_schema(ServingPower, CSV_COLUMNS)
