"""Published measurements of deployments past one tensor-parallel group (data/seed/deployments.csv): disaggregated
prefill and decode pools and wide expert parallel, each figure as printed with the layout its source prints.

Sources and what each row rests on: data/seed/DEPLOYMENTS_SOURCES.md. A column is empty where the source prints
nothing; nothing is estimated. `prefill_pool_gpus` and `decode_pool_gpus` are the pools' GPUs where a table prints
them ("32 GPU, EP=32"), `gpus_per_node` the node a per-node figure is of, `cause` why a figure sits above its ceiling.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Annotated, Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

#: The figures a row may print, by what they count.
METRICS = (
    "output_tokens_per_s_per_gpu",
    "output_tokens_per_s_per_node",
    "output_tokens_per_s_total",
    "output_tokens_per_s_per_user",
    "input_tokens_per_s_per_gpu",
    "input_tokens_per_s_per_node",
    "input_tokens_per_s_total",
    "total_tokens_per_s_per_gpu",
    "tpot",
    "itl",
    "ttft",
)
#: The CSV's columns in order (the store's table has them too).
CSV_COLUMNS = (
    "id",
    "source_url",
    "publisher",
    "campaign",
    "framework",
    "gpu",
    "model",
    "model_name",
    "weights",
    "kv",
    "mode",
    "total_gpus",
    "prefill_instances",
    "prefill_gpus_per_instance",
    "prefill_tp",
    "prefill_dp_attention",
    "prefill_ep",
    "decode_instances",
    "decode_gpus_per_instance",
    "decode_tp",
    "decode_dp_attention",
    "decode_ep",
    "pp",
    "prefill_pool_gpus",
    "decode_pool_gpus",
    "gpus_per_node",
    "input_tokens",
    "output_tokens",
    "concurrency",
    "batch_per_gpu",
    "mtp",
    "metric",
    "value",
    "unit",
    "statistic",
    "source_date",
    "read_on",
    "quote",
    "note",
    "cause",
)


class DeploymentError(ValueError):
    """A deployments.csv row that cannot be read (the message names the row and the field)."""


class Deployment(BaseModel):
    """One printed figure of a deployment."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(pattern=r"^dep-\d{3,}$")]
    source_url: Annotated[str, Field(pattern=r"^https?://\S+$")]
    publisher: str
    campaign: str
    framework: str
    gpu: str | None = None
    model: str | None = None
    model_name: str | None = None
    weights: str | None = None
    kv: str | None = None
    mode: Annotated[str, Field(pattern=r"^(aggregated|disaggregated)$")]
    prefill_dp_attention: str | None = None
    decode_dp_attention: str | None = None
    mtp: str | None = None
    metric: str
    value: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    unit: str
    statistic: str | None = None
    source_date: str | None = None
    read_on: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    quote: Annotated[str, Field(min_length=1)]
    note: str | None = None
    cause: str | None = None
    total_gpus: Annotated[int, Field(ge=1)] | None = None
    prefill_instances: Annotated[int, Field(ge=1)] | None = None
    prefill_gpus_per_instance: Annotated[int, Field(ge=1)] | None = None
    prefill_tp: Annotated[int, Field(ge=1)] | None = None
    prefill_ep: Annotated[int, Field(ge=1)] | None = None
    decode_instances: Annotated[int, Field(ge=1)] | None = None
    decode_gpus_per_instance: Annotated[int, Field(ge=1)] | None = None
    decode_tp: Annotated[int, Field(ge=1)] | None = None
    decode_ep: Annotated[int, Field(ge=1)] | None = None
    pp: Annotated[int, Field(ge=1)] | None = None
    prefill_pool_gpus: Annotated[int, Field(ge=1)] | None = None
    decode_pool_gpus: Annotated[int, Field(ge=1)] | None = None
    gpus_per_node: Annotated[int, Field(ge=1)] | None = None
    input_tokens: Annotated[int, Field(ge=1)] | None = None
    output_tokens: Annotated[int, Field(ge=1)] | None = None
    concurrency: Annotated[int, Field(ge=1)] | None = None
    batch_per_gpu: Annotated[int, Field(ge=1)] | None = None

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        if value not in METRICS:
            raise ValueError(f"unknown metric {value!r}; known: {', '.join(METRICS)}")
        return value


def frame_schema(record: type[BaseModel], columns: tuple[str, ...]) -> dict[str, Any]:
    """The Polars schema of a seed table's `columns` from its record's field types: whole numbers Int64, numbers
    Float64, the rest String."""

    def kinds(annotation: Any) -> set[Any]:
        args = typing.get_args(annotation)
        return {annotation} if not args else set().union(*(kinds(a) for a in args))

    schema: dict[str, Any] = {}
    for column in columns:
        found = kinds(record.model_fields[column].annotation)
        schema[column] = pl.Int64 if int in found else pl.Float64 if float in found else pl.String
    return schema


def deployment_seed_frame(seed_dir: Path, gpu_ids: set[str], model_ids: set[str]) -> pl.DataFrame:
    """data/seed/deployments.csv as the store's `deployment_measurements` rows, every row validated (an accelerator or
    model named must be in the catalogue; either may be empty where the source's is not)."""
    rows = read_seed_rows(seed_dir / "deployments.csv", Deployment, CSV_COLUMNS, gpu_ids, model_ids, "DEPLOYMENTS_SOURCES.md")
    return pl.DataFrame(rows, schema=DEPLOYMENT_SCHEMA).select(list(CSV_COLUMNS))


def read_seed_rows(
    path: Path, record: type[BaseModel], columns: tuple[str, ...], gpu_ids: set[str], model_ids: set[str], doc: str
) -> list[dict[str, Any]]:
    """A published seed table's rows, each validated by `record` (its `id`, `gpu` and `model` fields checked against
    the catalogue where given), in file order; a missing file is no rows. A bad row raises DeploymentError naming the
    file, the row and the field."""
    if not path.exists():
        return []
    raw = pl.read_csv(path, infer_schema_length=0)
    missing = [c for c in columns if c not in raw.columns]
    extra = [c for c in raw.columns if c not in columns]
    if missing or extra:
        said = [f"missing column(s) {', '.join(missing)}"] if missing else []
        said += [f"unknown column(s) {', '.join(extra)}"] if extra else []
        raise DeploymentError(f"{path.name}: {'; '.join(said)} (see data/seed/{doc})")
    rows, seen = [], set()
    for line, cells in enumerate(raw.iter_rows(named=True), start=2):
        values = {k: v.strip() for k, v in cells.items() if isinstance(v, str) and v.strip()}
        try:
            rec = record.model_validate(values).model_dump()
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "row"
            raise DeploymentError(f"{path.name} row {line} ({cells.get('id')}): {where}: {err['msg']}") from None
        if rec["id"] in seen:
            raise DeploymentError(f"{path.name} row {line}: id {rec['id']!r} is used twice")
        seen.add(rec["id"])
        if rec.get("gpu") is not None and rec["gpu"] not in gpu_ids:
            raise DeploymentError(f"{path.name} row {line} ({rec['id']}): unknown accelerator {rec['gpu']!r} (not in accelerators.csv)")
        if rec.get("model") is not None and rec["model"] not in model_ids:
            raise DeploymentError(f"{path.name} row {line} ({rec['id']}): unknown model {rec['model']!r} (not in models.csv)")
        rows.append(rec)
    return rows


DEPLOYMENT_SCHEMA: dict[str, Any] = frame_schema(Deployment, CSV_COLUMNS)
