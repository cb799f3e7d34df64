"""The reviewed seed tables in data/seed/, read into the store's frames, every row validated.

Seed CSVs are written in reviewable decimal units (GB, TB/s, TFLOP/s); each
accelerator field's `Column` (core.catalogue.specs) says which CSV column
holds it and in what unit, so a cell is converted to SI once, here, and the
row is validated as an `Accelerator`: an implausible figure fails loudly with
its row and field named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from pydantic import ValidationError

from core.catalogue.messages import Words, explain
from core.catalogue.model_config import ConfigError, model_from_config, parse_config_text
from core.catalogue.specs import Accelerator, Column, accelerator_columns, value_type


class CatalogueError(ValueError):
    """A seed or custom row that fails validation; the message names the field (by its label, in its unit) or the row.

    `problems` lists every problem found, one sentence each (the message joins them).
    """

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]


def accelerator_seed_frame(seed_dir: Path) -> pl.DataFrame:
    """data/seed/accelerators.csv as the store's `accelerators` rows (SI units), every row validated."""
    path = seed_dir / "accelerators.csv"
    raw = pl.read_csv(path, infer_schema_length=0)
    columns = accelerator_columns()
    absent = [col.seed or name for name, col in columns.items() if (col.seed or name) not in raw.columns]
    if absent:
        raise CatalogueError(f"{path.name}: missing column(s) {', '.join(absent)} (see ACCELERATORS_FORMAT.md)")
    records = []
    for line, cells in enumerate(raw.iter_rows(named=True), start=2):
        values = {}
        for name, col in columns.items():
            try:
                values[name] = seed_value(cells[col.seed or name], name, col)
            except ValueError as exc:
                raise CatalogueError(f"{path.name} row {line} ({cells.get('id')}): {exc}") from None
        try:
            records.append(accelerator_from_row(values))
        except CatalogueError as exc:
            raise CatalogueError(f"{path.name} row {line} ({cells.get('id')}): {exc}") from exc
    ids = [r.id for r in records]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise CatalogueError(f"{path.name}: duplicated id(s) {dup}")
    return accelerator_frame(records)


def seed_value(text: str | None, name: str, col: Column) -> Any:
    """One seed cell in the field's type and SI unit (None when empty); ValueError naming the column otherwise."""
    kind = field_type(name)
    if text is None or not text.strip():
        return None
    if kind is float:
        try:
            return float(text.strip()) * col.scale
        except ValueError:
            raise ValueError(f"not a number in {col.seed or name}: {text!r}") from None
    if kind is int:
        try:
            return int(text.strip())
        except ValueError:
            raise ValueError(f"not a whole number in {col.seed or name}: {text!r}") from None
    return text


def accelerator_words(**overrides: Words) -> dict[str, Words]:
    """Each accelerator field's label and reading unit (from its Column), for error messages; `overrides` by field name."""
    words = {name: Words(col.label, col.unit, col.scale) for name, col in accelerator_columns().items()}
    words["id"] = Words("ID", allowed="lowercase letters, digits, '.' and '-', starting with a letter or digit (e.g. h100-sxm)")
    words["name"] = Words("Name", empty="give the accelerator a name")
    words["vendor"] = Words("Vendor", empty="name the vendor")
    words["year"] = Words("Year", grouped=False)
    words["memory_type"] = Words(
        "Memory type", allowed="use letters, digits, spaces, '+', '.' and '-', starting with a letter or digit (e.g. HBM3e)"
    )
    return {**words, **overrides}


#: The custom-accelerator form's words: the ID is made from the name there, and its errors say so.
FORM_WORDS = accelerator_words(id=Words("ID made from the name", allowed="shorten the name"))


def accelerator_from_row(row: dict[str, Any], words: dict[str, Words] | None = None) -> Accelerator:
    """Validate one row (SI units, store or form) as an `Accelerator`.

    CatalogueError otherwise, naming every field at fault by its label, with values and bounds in its reading unit
    (`words`, default accelerator_words()): "Bandwidth must be at most 50 TB/s (got 3,350 TB/s)".
    """
    try:
        return Accelerator.model_validate(row)
    except ValidationError as exc:
        problems = explain(exc, words or accelerator_words())
        raise CatalogueError("; ".join(problems), problems) from exc


def field_type(name: str) -> type:
    """The Python type of an accelerator field, optional or not (float, int, str, bool or list)."""
    return value_type(Accelerator.model_fields[name])


_DTYPES: dict[type, Any] = {float: pl.Float64, int: pl.Int32, str: pl.String, bool: pl.Boolean, list: pl.String}


def accelerator_store_schema() -> dict[str, Any]:
    """The columns of the store's accelerator tables, from the record's fields (sources as one text cell)."""
    return {name: _DTYPES[field_type(name)] for name in Accelerator.model_fields if name != "custom"}


def accelerator_frame(records: list[Accelerator]) -> pl.DataFrame:
    """Accelerator records as store rows."""
    schema = accelerator_store_schema()
    rows = [r.store_row() for r in records]
    return pl.DataFrame([{k: row[k] for k in schema} for row in rows], schema=schema)


def model_seed_frame(seed_dir: Path) -> pl.DataFrame:
    """data/seed/models.csv with each model's config.json text, every config parsed."""
    path = seed_dir / "models.csv"
    frame = pl.read_csv(path, infer_schema_length=0)
    texts = []
    for row in frame.iter_rows(named=True):
        cfg_path = seed_dir / row["config_file"]
        text = cfg_path.read_text(encoding="utf-8")
        try:
            model_from_config(parse_config_text(text, source=str(cfg_path)), model_id=row["id"], name=row["name"])
        except ConfigError as exc:
            raise CatalogueError(f"{path.name} model {row['id']!r} ({cfg_path.name}): {exc}") from exc
        texts.append(text)
    numeric = [
        "published_total_params",
        "total_rounding",
        "published_extra_params",
        "published_active_params",
        "active_rounding",
    ]
    return frame.drop("config_file").with_columns(pl.Series("config_json", texts), *[pl.col(c).cast(pl.Float64) for c in numeric])
