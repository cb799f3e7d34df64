"""The catalogue: accelerators and models, from the seed files and the store.

Seed CSVs are written in reviewable decimal units (GB, TB/s, TFLOP/s); they
are converted to SI base units (bytes, byte/s, FLOP/s) once, here, and each
row is validated with the pydantic `Accelerator` record, so an implausible
figure fails loudly with its row named.
"""

from __future__ import annotations

import difflib
import json
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import ValidationError

from core.model_config import ConfigError, model_from_config, parse_config_text
from core.model_costs import kv_elements_per_token, operations_frame, parameter_counts
from core.perfmodel import with_effective_peak
from core.precisions import FALLBACK_CHAIN, PEAK_PRECISIONS
from core.specs import Accelerator, ModelRecord

#: Seed CSV column -> (store column, multiplier to SI).
SEED_UNITS: dict[str, tuple[str, float]] = {
    "memory_gb": ("memory_bytes", 1e9),
    "bandwidth_tb_s": ("bandwidth_bytes_per_s", 1e12),
    "power_w": ("power_w", 1.0),
    "scaleup_gb_s": ("scaleup_bytes_per_s", 1e9),
    "list_price_usd": ("list_price_usd", 1.0),
    **{f"{p}_{'tops' if p.startswith('int') else 'tflops'}": (f"peak_{p}", 1e12) for p in PEAK_PRECISIONS},
}


class CatalogueError(ValueError):
    """A seed or custom row that fails validation; the message names the row."""


class UnknownIdError(KeyError):
    """An id not in the catalogue; the message suggests the closest known ids."""

    def __init__(self, kind: str, value: str, known: list[str]) -> None:
        close = difflib.get_close_matches(value.lower(), known, n=3, cutoff=0.3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        super().__init__(f"unknown {kind} {value!r}{hint}")
        self.message = f"unknown {kind} {value!r}{hint}"
        self.suggestions = close

    def __str__(self) -> str:
        return self.message


def accelerator_seed_frame(seed_dir: Path) -> pl.DataFrame:
    """data/seed/accelerators.csv in SI units, every row validated."""
    path = seed_dir / "accelerators.csv"
    raw = pl.read_csv(path, infer_schema_length=0)
    exprs = [pl.col(c) for c in ("id", "name", "vendor", "form_factor")]
    exprs.append(pl.col("year").cast(pl.Int32, strict=False))
    for src, (dst, mult) in SEED_UNITS.items():
        exprs.append((pl.col(src).str.strip_chars().cast(pl.Float64, strict=False) * mult).alias(dst))
    exprs.append(pl.col("source_urls").alias("sources"))
    exprs.append(pl.col("notes").fill_null(""))
    frame = raw.select(exprs)
    bad_numbers = raw.select(
        [
            (pl.col(src).is_not_null() & pl.col(src).str.strip_chars().cast(pl.Float64, strict=False).is_null()).alias(src)
            for src in SEED_UNITS
        ]
    )
    for i, row in enumerate(bad_numbers.iter_rows(named=True)):
        cols = [c for c, bad in row.items() if bad]
        if cols:
            raise CatalogueError(f"{path.name} row {i + 2} ({raw['id'][i]}): not a number in {', '.join(cols)}")
    if frame["id"].is_duplicated().any():
        dup = frame.filter(pl.col("id").is_duplicated())["id"].unique().to_list()
        raise CatalogueError(f"{path.name}: duplicated id(s) {dup}")
    for i, row in enumerate(frame.iter_rows(named=True)):
        try:
            accelerator_from_row(row)
        except CatalogueError as exc:
            raise CatalogueError(f"{path.name} row {i + 2}: {exc}") from exc
    return frame


def accelerator_from_row(row: dict[str, Any]) -> Accelerator:
    """Validate one store row (SI units) as an `Accelerator`."""
    try:
        return Accelerator(
            id=row["id"],
            name=row["name"],
            vendor=row["vendor"],
            form_factor=row.get("form_factor") or "",
            year=row.get("year"),
            memory_bytes=row["memory_bytes"],
            bandwidth_bytes_per_s=row["bandwidth_bytes_per_s"],
            peak_flops={p: row.get(f"peak_{p}") for p in PEAK_PRECISIONS},
            power_w=row.get("power_w"),
            scaleup_bytes_per_s=row.get("scaleup_bytes_per_s"),
            list_price_usd=row.get("list_price_usd"),
            sources=[s.strip() for s in (row.get("sources") or "").split(";") if s.strip()],
            notes=row.get("notes") or "",
            custom=bool(row.get("custom", False)),
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise CatalogueError(f"{row.get('id')!r}: {field}: {err['msg']}") from exc


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


# -- the loaded catalogue ------------------------------------------------------


@dataclass(frozen=True)
class Catalogue:
    """Accelerators and models as frames, with the models' records and operations."""

    gpus: pl.DataFrame  # one row per accelerator, SI units, `peak_<precision>` columns
    models: pl.DataFrame  # one row per model: shape summary, params, kv, sources
    records: dict[str, ModelRecord]
    ops: pl.DataFrame  # the operation tables of every model (core.model_costs)

    def gpu(self, gpu_id: str) -> dict[str, Any]:
        """One accelerator row as a dict; UnknownIdError with suggestions otherwise."""
        hit = self.gpus.filter(pl.col("id") == gpu_id)
        if not hit.height:
            raise UnknownIdError("accelerator", gpu_id, self.gpus["id"].to_list())
        return hit.row(0, named=True)

    def model(self, model_id: str) -> ModelRecord:
        """One model record; UnknownIdError with suggestions otherwise."""
        if model_id not in self.records:
            raise UnknownIdError("model", model_id, list(self.records))
        return self.records[model_id]

    def check_gpu(self, gpu_id: str) -> str:
        self.gpu(gpu_id)
        return gpu_id

    # -- frames the evaluation joins, prepared once per catalogue (each eager
    #    Polars operation is a query of its own, so per-call copies add up) --
    @cached_property
    def attn_ops(self) -> pl.DataFrame:
        """Operation rows of kind attn."""
        return self.ops.filter(pl.col("kind") == "attn")

    @cached_property
    def other_ops(self) -> pl.DataFrame:
        """Operation rows of every other kind."""
        return self.ops.filter(pl.col("kind") != "attn")

    @cached_property
    def compute_pairs(self) -> pl.DataFrame:
        """Every (gpu_id, requested compute format): the peak that applies and its flag (core.perfmodel.with_effective_peak)."""
        formats = sorted(FALLBACK_CHAIN)  # the compute formats a scenario may request
        pairs = self.peaks.join(pl.DataFrame({"compute": formats}), how="cross")
        return (
            with_effective_peak(pairs.lazy())
            .select("gpu_id", "compute", "compute_used", "peak_flops", "act_bytes", "compute_flag")
            .collect()
        )

    @cached_property
    def hardware(self) -> pl.DataFrame:
        """gpu_id, bandwidth and scale-up link of each accelerator."""
        return self.gpus.select(pl.col("id").alias("gpu_id"), "bandwidth_bytes_per_s", "scaleup_bytes_per_s")

    @cached_property
    def peaks(self) -> pl.DataFrame:
        """gpu_id and the dense peak of each precision."""
        return self.gpus.select(pl.col("id").alias("gpu_id"), *[f"peak_{p}" for p in PEAK_PRECISIONS])

    @cached_property
    def shapes(self) -> pl.DataFrame:
        """model_id, layers and hidden size (for communication)."""
        return pl.DataFrame(
            {
                "model_id": list(self.records),
                "num_layers": [r.num_layers for r in self.records.values()],
                "hidden_size": [r.hidden_size for r in self.records.values()],
            }
        )

    @cached_property
    def gpu_ids(self) -> frozenset[str]:
        return frozenset(self.gpus["id"].to_list())


def build_catalogue(gpu_rows: pl.DataFrame, model_rows: pl.DataFrame) -> Catalogue:
    """A Catalogue from the store's accelerator and model frames."""
    records: dict[str, ModelRecord] = {}
    for row in model_rows.iter_rows(named=True):
        cfg = json.loads(row["config_json"])
        rec = model_from_config(cfg, model_id=row["id"], name=row["name"])
        records[row["id"]] = rec.model_copy(update={"custom": bool(row["custom"])})
    ops = operations_frame(list(records.values()))
    counts = parameter_counts(ops)
    kv = kv_elements_per_token(ops)
    shapes = pl.DataFrame(
        [
            {
                "id": r.id,
                "architecture": r.architecture,
                "layers": r.num_layers,
                "hidden_size": r.hidden_size,
                "num_heads": r.num_heads,
                "num_kv_heads": r.num_kv_heads,
                "head_dim": r.head_dim,
                "experts": r.num_experts,
                "experts_per_token": r.experts_per_token,
                "attention": "MLA" if r.is_mla else ("MHA" if r.num_kv_heads == r.num_heads else ("MQA" if r.num_kv_heads == 1 else "GQA")),
                "window": r.window or None,
                "window_layers": r.num_window_layers,
                "native_weights": r.native_weights,
                "max_context": r.max_context or None,
            }
            for r in records.values()
        ]
    )
    models = (
        model_rows.drop("config_json")
        .join(shapes, on="id", how="left")
        .join(counts.rename({"model_id": "id"}), on="id", how="left")
        .join(kv.rename({"model_id": "id"}), on="id", how="left")
        .with_columns((pl.col("kv_elems_per_token") * 2.0).alias("kv_bytes_per_token_bf16"))
    )
    return Catalogue(gpus=gpu_rows, models=models, records=records, ops=ops)


_CACHE: dict[tuple[str, int], Catalogue] = {}
_CACHE_LOCK = threading.Lock()


def load_catalogue(store: Any) -> Catalogue:
    """The catalogue in a store, cached until the store is written to."""
    key = (str(store.path), store.generation)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE.clear()
            _CACHE[key] = build_catalogue(store.query("accelerators"), store.query("models"))
        return _CACHE[key]


def add_custom_accelerator(store: Any, acc: Accelerator) -> None:
    """Store a validated custom accelerator; refuses an id the catalogue already has."""
    cat = load_catalogue(store)
    if acc.id in cat.gpus["id"].to_list():
        raise CatalogueError(f"id: an accelerator called {acc.id!r} already exists")
    params: dict[str, Any] = {
        "id": acc.id,
        "name": acc.name,
        "vendor": acc.vendor,
        "form_factor": acc.form_factor,
        "year": acc.year,
        "memory_bytes": acc.memory_bytes,
        "bandwidth_bytes_per_s": acc.bandwidth_bytes_per_s,
        "power_w": acc.power_w,
        "scaleup_bytes_per_s": acc.scaleup_bytes_per_s,
        "list_price_usd": acc.list_price_usd,
        "sources": " ; ".join(acc.sources) or "user-entered",
        "notes": acc.notes,
        **{f"peak_{p}": acc.peak_flops.get(p) for p in PEAK_PRECISIONS},
    }
    store.execute("insert_custom_accelerator", **params)


def add_custom_model(store: Any, config_text: str, *, model_id: str, name: str, notes: str = "") -> ModelRecord:
    """Parse and store a custom model from config.json text; ConfigError names the field."""
    cfg = parse_config_text(config_text)
    record = model_from_config(cfg, model_id=model_id, name=name)
    if model_id in load_catalogue(store).records:
        raise CatalogueError(f"id: a model called {model_id!r} already exists")
    store.execute("insert_custom_model", id=model_id, name=name, config_json=json.dumps(cfg), notes=notes)
    return record


def delete_custom(store: Any, kind: str, entry_id: str) -> None:
    """Delete a custom accelerator or model by id (reference rows cannot be deleted)."""
    store.execute("delete_custom_accelerator" if kind == "accelerator" else "delete_custom_model", id=entry_id)


# -- display tables (units in the column names) --------------------------------


def accelerator_table(gpus: pl.DataFrame) -> pl.DataFrame:
    """Accelerators in reading units: GB, TB/s, dense TFLOP/s per precision, W, GB/s."""
    return gpus.select(
        pl.col("id"),
        pl.col("name"),
        pl.col("vendor"),
        pl.col("form_factor").alias("form factor"),
        pl.col("year"),
        (pl.col("memory_bytes") / 1e9).alias("memory (GB)"),
        (pl.col("bandwidth_bytes_per_s") / 1e12).alias("bandwidth (TB/s)"),
        *[(pl.col(f"peak_{p}") / 1e12).alias(f"{p} ({'TOPS' if p.startswith('int') else 'TFLOP/s'})") for p in reversed(PEAK_PRECISIONS)],
        (pl.col("peak_bf16") / pl.col("bandwidth_bytes_per_s")).alias("bf16 ridge (FLOP/B)"),
        pl.col("power_w").alias("power (W)"),
        (pl.col("scaleup_bytes_per_s") / 1e9).alias("scale-up (GB/s)"),
        pl.col("list_price_usd").alias("list price (USD)"),
        pl.col("sources").str.split(" ; ").list.first().str.strip_chars().alias("source"),
        pl.col("sources").alias("all sources"),
        pl.col("notes"),
        pl.col("custom"),
    )


def model_table(models: pl.DataFrame) -> pl.DataFrame:
    """Models in reading units: parameters in billions, KV cache in KiB per token (bf16)."""
    return models.select(
        "id",
        "name",
        pl.col("architecture"),
        pl.col("attention"),
        (pl.col("total_params") / 1e9).alias("total params (B)"),
        (pl.col("active_params") / 1e9).alias("active params (B)"),
        (pl.col("published_total_params") / 1e9).alias("published total (B)"),
        pl.col("layers"),
        pl.col("hidden_size").alias("hidden"),
        pl.col("num_heads").alias("heads"),
        pl.col("num_kv_heads").alias("KV heads"),
        pl.col("head_dim").alias("head dim"),
        pl.col("experts"),
        pl.col("experts_per_token").alias("experts / token"),
        (pl.col("kv_bytes_per_token_bf16") / 1e3).alias("KV per token, bf16 (kB)"),
        pl.col("window").alias("sliding window (tokens)"),
        pl.col("window_layers").alias("window layers"),
        pl.col("native_weights").alias("native weights"),
        pl.col("max_context").alias("max context (tokens)"),
        pl.col("hf_repo").alias("Hugging Face repo"),
        pl.col("params_source").str.split(" ; ").list.first().str.strip_chars().alias("params source"),
        pl.col("config_source").alias("config source"),
        pl.col("notes"),
        pl.col("custom"),
    )


def filter_table(frame: pl.DataFrame, text: str, **equals: list[str]) -> pl.DataFrame:
    """Rows whose id or name contains `text` (case-insensitive) and whose columns are in `equals`."""
    out = frame
    if text.strip():
        needle = text.strip().lower()
        out = out.filter(
            pl.col("id").str.to_lowercase().str.contains(needle, literal=True)
            | pl.col("name").str.to_lowercase().str.contains(needle, literal=True)
        )
    for column, values in equals.items():
        if values:
            out = out.filter(pl.col(column).cast(pl.String).is_in([str(v) for v in values]))
    return out
