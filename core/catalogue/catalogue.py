"""The catalogue: accelerators and models from the store, as frames, records and arrays.

`load_catalogue(store)` reads the store's accelerators and models (the seed's
reviewed rows and the user's custom ones) and parses every model's
config.json into its operation table; the result is cached until the store
is written to. The engine (core.model.engine) reads the catalogue as arrays
(`hardware`, `ops_matrix`), prepared once per catalogue.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
import threading
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import polars as pl

from core.catalogue.deployments import DEPLOYMENT_SCHEMA
from core.catalogue.model_config import ConfigError, model_from_config, parse_config_text
from core.catalogue.operations import OpMatrix, kv_elements_per_token, operations_frame, parameter_counts
from core.catalogue.precisions import COMPUTE_FORMATS, FALLBACK_CHAIN, PEAK_PRECISIONS
from core.catalogue.prices import PRICE_SCHEMA, PriceUsed, median_rents, price_used
from core.catalogue.reference import REFERENCE_SCHEMA
from core.catalogue.seed import CatalogueError, accelerator_frame
from core.catalogue.serving_power import POWER_SCHEMA
from core.catalogue.specs import Accelerator, ModelRecord, outside_bounds


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


class Source(Protocol):
    """What the catalogue needs of a store (core.store.Store): named queries, an insert, a generation."""

    @property
    def path(self) -> Any: ...
    @property
    def generation(self) -> int: ...
    def query(self, name: str, /, **params: Any) -> pl.DataFrame: ...
    def insert(self, name: str, rows: pl.DataFrame) -> None: ...
    def execute(self, name: str, /, **params: Any) -> None: ...


Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Hardware:
    """Every accelerator's figures as arrays, row g = the catalogue's g-th accelerator (NaN where absent)."""

    ids: list[str]
    names: list[str]
    vendors: list[str]
    #: the accelerator family a prediction borrows from: its architecture, else its vendor
    families: list[str]
    bandwidth_bytes_per_s: Array
    scaleup_bytes_per_s: Array
    memory_bytes: Array
    power_w: Array
    #: devices one tensor-parallel group can span (NaN: no source says)
    scaleup_domain: Array
    #: seconds of one small all-reduce over the scale-up domain, as published (NaN: none published)
    allreduce_latency_s: Array
    #: network bytes/s per device, per direction, to devices outside its scale-up domain (NaN: no source prints it)
    scaleout_bytes_per_s: Array
    #: the published on-demand $ per GPU-hour a scenario without its own price uses (median; NaN: none published)
    rent_usd_per_hour: Array
    #: dense peak FLOP/s, column p = PEAK_PRECISIONS[p]
    peaks: Array
    #: the peak a requested compute format runs at: column c = COMPUTE_FORMATS[c], value an index
    #: into PEAK_PRECISIONS (the format itself or the nearest wider one listed), -1 when none is
    compute_used: npt.NDArray[np.intp]


#: The precisions a probe measures (core.probe.document.PRECISIONS), as profile columns peak_<p>.
MEASURED_PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")
PROFILE_SCHEMA = {
    "id": pl.Int32,
    "accelerator_id": pl.String,
    "device_name": pl.String,
    "device_kind": pl.String,
    "backend": pl.String,
    "probed_at": pl.String,
    "bandwidth_bytes_per_s": pl.Float64,
    **{f"peak_{p}": pl.Float64 for p in MEASURED_PRECISIONS},
    "document_json": pl.String,  # the whole probe document (core.probe.document)
}
PRODUCT_SCHEMA = {
    "precision": pl.String,
    "shape": pl.String,
    "m": pl.Int64,
    "n": pl.Int64,
    "k": pl.Int64,
    "intensity": pl.Float64,
    "flops_per_s": pl.Float64,
}


@dataclass(frozen=True)
class Catalogue:
    """Accelerators and models as frames, with the models' records and operations."""

    gpus: pl.DataFrame  # one row per accelerator, SI units, `peak_<precision>` columns
    models: pl.DataFrame  # one row per model: shape summary, params, kv, sources
    records: dict[str, ModelRecord]
    ops: pl.DataFrame  # the operation tables of every model (core.catalogue.operations)
    key: str = ""  # which store and generation it was read from (caches key on it)
    #: each accelerator's newest measured profile (core.evidence.probes): accelerator_id, bandwidth, peak_<p>
    profiles: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=PROFILE_SCHEMA))
    #: every published price (core.catalogue.prices): gpu, kind (rent, buy), usd, provider, offer, region, as_of, source_url, note
    prices: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=PRICE_SCHEMA))
    #: custom models the store holds that this version refuses (a shape past its bound): "name (id): why"; left out, not deleted
    unreadable: tuple[str, ...] = ()
    #: every published reference measurement (core.catalogue.reference; read-only, rebuilt with the seed)
    reference: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=REFERENCE_SCHEMA))
    #: every published deployment measurement (core.catalogue.deployments; read-only, rebuilt with the seed)
    deployments: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=DEPLOYMENT_SCHEMA))
    #: every published GPU power figure of LLM serving (core.catalogue.serving_power; read-only, rebuilt with the seed)
    serving_power: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=POWER_SCHEMA))
    #: the fitted predicted model every evaluation predicts with (a core.model.predicted.Predictor; None: ceilings only).
    #: core.evidence.predictor.with_predictor sets it: the shipped fit, or a user's refit on top of it.
    predictor: Any = None

    def price(
        self, gpu_id: str, kind: str = "rent", *, override: float | None = None, today: dt.date | None = None, rates: str = "on-demand"
    ) -> PriceUsed:
        """The price a figure uses for an accelerator: `override` when > 0, else the median of the like published ones
        (core.catalogue.prices; `rates`: which rent prices)."""
        return price_used(self.prices, gpu_id, kind, override=override, today=today, rates=rates)

    def profile(self, gpu_id: str) -> dict[str, Any] | None:
        """The newest measured profile of an accelerator, or None."""
        rows = self.profiles.filter(pl.col("accelerator_id") == gpu_id)
        return rows.row(0, named=True) if rows.height else None

    def probe_products(self, gpu_id: str) -> pl.DataFrame:
        """The matmul runs of an accelerator's newest probe: precision, shape (square, decode, prefill), m, n, k, the
        product's intensity (FLOPs over operand bytes) and the FLOP/s it reached (empty without a profile)."""
        prof = self.profile(gpu_id)
        runs = json.loads(prof["document_json"]).get("matmul", []) if prof and prof.get("document_json") else []
        rows = [
            {
                "precision": r["precision"],
                "shape": r["shape"],
                "m": r["m"],
                "n": r["n"],
                "k": r["k"],
                "intensity": r["flops"] / r["bytes"],
                "flops_per_s": r["flops_per_s"],
            }
            for r in runs
        ]
        return pl.DataFrame(rows, schema=PRODUCT_SCHEMA)

    def measured(self) -> Catalogue:
        """This catalogue with each profiled accelerator's measured bandwidth and peaks in place of its datasheet's.

        A precision the probe did not measure keeps its datasheet peak; an
        accelerator without a profile is unchanged. Without profiles: itself.
        """
        if self.profiles.is_empty():
            return self
        figures = ["bandwidth_bytes_per_s", *(f"peak_{p}" for p in MEASURED_PRECISIONS)]
        prof = self.profiles.select(pl.col("accelerator_id").alias("id"), *(pl.col(c).alias(f"_m_{c}") for c in figures))
        gpus = (
            self.gpus.join(prof, on="id", how="left")
            .with_columns(pl.coalesce(f"_m_{c}", c).alias(c) for c in figures)
            .drop(f"_m_{c}" for c in figures)
        )
        return replace(self, gpus=gpus, key=f"{self.key}#measured")

    def gpu(self, gpu_id: str) -> Accelerator:
        """One accelerator; UnknownIdError with suggestions otherwise."""
        if gpu_id not in self.accelerators:
            raise UnknownIdError("accelerator", gpu_id, list(self.accelerators))
        return self.accelerators[gpu_id]

    def model(self, model_id: str) -> ModelRecord:
        """One model record; UnknownIdError with suggestions otherwise."""
        if model_id not in self.records:
            raise UnknownIdError("model", model_id, list(self.records))
        return self.records[model_id]

    @cached_property
    def accelerators(self) -> dict[str, Accelerator]:
        """Every accelerator as a validated record, by id (the frame's order)."""
        return {row["id"]: Accelerator.model_validate(row) for row in self.gpus.iter_rows(named=True)}

    @cached_property
    def gpu_index(self) -> dict[str, int]:
        """Accelerator id -> its row in `hardware`."""
        return {g: i for i, g in enumerate(self.gpus["id"].to_list())}

    @cached_property
    def model_index(self) -> dict[str, int]:
        """Model id -> its row in `ops_matrix` and `model_arrays`."""
        return {m: i for i, m in enumerate(self.records)}

    @cached_property
    def hardware(self) -> Hardware:
        """The accelerators' figures as arrays (prepared once per catalogue)."""
        g = self.gpus
        peaks = g.select([pl.col(f"peak_{p}") for p in PEAK_PRECISIONS]).to_numpy().astype(np.float64)
        supported = ~np.isnan(peaks)
        used = np.full((g.height, len(COMPUTE_FORMATS)), -1, dtype=np.intp)
        for c, fmt in enumerate(COMPUTE_FORMATS):
            for candidate in reversed(FALLBACK_CHAIN[fmt]):  # the narrowest supported one wins
                p = PEAK_PRECISIONS.index(candidate)
                used[supported[:, p], c] = p

        def column(name: str) -> Array:
            return g[name].cast(pl.Float64).to_numpy().astype(np.float64)

        rent_of = median_rents(self.prices)  # what self.price(id, "rent").usd gives, for every accelerator at once

        return Hardware(
            ids=g["id"].to_list(),
            names=g["name"].to_list(),
            vendors=g["vendor"].to_list(),
            families=[a or v for a, v in zip(g["architecture"].to_list(), g["vendor"].to_list(), strict=True)],
            bandwidth_bytes_per_s=column("bandwidth_bytes_per_s"),
            scaleup_bytes_per_s=column("scaleup_bytes_per_s"),
            memory_bytes=column("memory_bytes"),
            power_w=column("power_w"),
            scaleup_domain=column("scaleup_domain"),
            allreduce_latency_s=column("allreduce_latency_s"),
            scaleout_bytes_per_s=column("scaleout_bytes_per_s"),
            rent_usd_per_hour=np.array([rent_of.get(i) or np.nan for i in g["id"].to_list()], dtype=np.float64),
            peaks=peaks,
            compute_used=used,
        )

    @cached_property
    def ops_matrix(self) -> OpMatrix:
        """Every model's operations as arrays, row m = the m-th model of `records`."""
        return OpMatrix.of(self.ops, list(self.records))

    @cached_property
    def attention_matrix(self) -> OpMatrix:
        """Only the attention operations (the ones that hold a KV cache), row m = the m-th model."""
        return OpMatrix.of(self.ops.filter(pl.col("kind") == "attn"), list(self.records))

    @cached_property
    def model_arrays(self) -> dict[str, Array]:
        """Per model (row m): num_layers, hidden_size, total_params, and of its KV cache:
        kv_replicated (1 when tensor parallelism cannot shard it: MLA's latent),
        kv_heads (how many ways it can be sharded), the elements per token of its
        full-attention layers and how many of its attention rows have a window."""
        params = dict(zip(self.models["id"], self.models["total_params"], strict=True))
        attn = self.attention_matrix
        real = attn.kind >= 0
        return {
            "num_layers": np.array([r.num_layers for r in self.records.values()], dtype=np.float64),
            "hidden_size": np.array([r.hidden_size for r in self.records.values()], dtype=np.float64),
            "total_params": np.array([params[m] for m in self.records], dtype=np.float64),
            "kv_replicated": np.where(real, attn.kv_replicated, 0.0).max(axis=1, initial=0.0),
            "kv_heads": np.where(real, attn.kv_heads, np.inf).min(axis=1, initial=np.inf),
            # KV elements per cached token of the layers without a window, and whether any layer has one
            "kv_elems_full_attention": np.where(attn.window == 0, attn.layers * attn.kv_elems, 0.0).sum(axis=1),
            "windowed": (attn.window > 0).sum(axis=1).astype(np.float64),
        }


def _profiles_out_of_bounds(rows: pl.DataFrame) -> dict[int, str]:
    """Stored profiles whose figures lie outside the accelerators' physical bounds (core.catalogue.specs), by id, with why."""
    out: dict[int, str] = {}
    if rows.is_empty():
        return out
    for row in rows.iter_rows(named=True):
        peaks = {p: row.get(f"peak_{p}") for p in MEASURED_PRECISIONS}
        problems = outside_bounds(row["bandwidth_bytes_per_s"], peaks, bandwidth_label="bandwidth", peak_label="{} peak", exact=False)
        if problems:
            out[row["id"]] = "; ".join(problems) + " (left out; delete it on the Catalogue page's Measured roofs tab)"
    return out


def newest_profiles(rows: pl.DataFrame) -> pl.DataFrame:
    """The newest profile of each accelerator, from the store's profiles (newest first)."""
    if rows.is_empty():
        return pl.DataFrame(schema=PROFILE_SCHEMA)
    return rows.select(list(PROFILE_SCHEMA)).cast(PROFILE_SCHEMA).unique("accelerator_id", keep="first", maintain_order=True)  # type: ignore[arg-type]


def build_catalogue(
    gpu_rows: pl.DataFrame,
    model_rows: pl.DataFrame,
    *,
    key: str = "",
    profiles: pl.DataFrame | None = None,
    prices: pl.DataFrame | None = None,
    reference: pl.DataFrame | None = None,
    deployments: pl.DataFrame | None = None,
    serving_power: pl.DataFrame | None = None,
) -> Catalogue:
    """A Catalogue from the store's accelerator and model frames (and measured profiles, newest first, and published prices)."""
    records: dict[str, ModelRecord] = {}
    unreadable: list[str] = []
    for row in model_rows.iter_rows(named=True):
        cfg = json.loads(row["config_json"])
        try:
            rec = model_from_config(cfg, model_id=row["id"], name=row["name"])
        except ConfigError as exc:
            if not row["custom"]:
                raise  # the reviewed seed is validated when it loads: never here
            # a custom model stored by an older version, before its shape fields were bounded: left out, named, the store untouched
            unreadable.append(f"{row['name']} ({row['id']}): {exc}")
            continue
        records[row["id"]] = rec.model_copy(update={"custom": bool(row["custom"])})
    model_rows = model_rows.filter(pl.col("id").is_in(list(records)))
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
    stored = profiles if profiles is not None else pl.DataFrame(schema=PROFILE_SCHEMA)
    bad = _profiles_out_of_bounds(stored)
    for row in stored.filter(pl.col("id").is_in(list(bad))).iter_rows(named=True):
        # stored by an older version before probes were bounded: left out, named, the store untouched
        unreadable.append(f"measured profile {row['id']} of {row['accelerator_id']} ({row.get('file_name') or 'probe'}): {bad[row['id']]}")
    prof = newest_profiles(stored.filter(~pl.col("id").is_in(list(bad))))
    price_rows = pl.DataFrame(schema=PRICE_SCHEMA) if prices is None else prices.select(list(PRICE_SCHEMA)).cast(PRICE_SCHEMA)  # type: ignore[arg-type]
    ref_rows = (
        pl.DataFrame(schema=REFERENCE_SCHEMA) if reference is None else reference.select(list(REFERENCE_SCHEMA)).cast(REFERENCE_SCHEMA)  # type: ignore[arg-type]
    )
    return Catalogue(
        gpus=gpu_rows,
        models=models,
        records=records,
        ops=ops,
        key=key,
        profiles=prof,
        prices=price_rows,
        reference=ref_rows,
        deployments=pl.DataFrame(schema=DEPLOYMENT_SCHEMA)
        if deployments is None
        else deployments.select(list(DEPLOYMENT_SCHEMA)).cast(DEPLOYMENT_SCHEMA),  # type: ignore[arg-type]
        serving_power=pl.DataFrame(schema=POWER_SCHEMA)
        if serving_power is None
        else serving_power.select(list(POWER_SCHEMA)).cast(POWER_SCHEMA),  # type: ignore[arg-type]
        unreadable=tuple(unreadable),
    )


_CACHE: dict[tuple[str, int], Catalogue] = {}
_CACHE_LOCK = threading.Lock()


def load_catalogue(store: Source) -> Catalogue:
    """The catalogue in a store, cached until the store is written to."""
    key = (str(store.path), store.generation)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE.clear()
            _CACHE[key] = build_catalogue(
                store.query("accelerators"),
                store.query("models"),
                key=f"{key[0]}#{key[1]}",
                profiles=store.query("probe_profiles"),
                prices=store.query("prices"),
                reference=store.query("reference_measurements"),
                deployments=store.query("deployment_measurements"),
                serving_power=store.query("serving_power"),
            )
        return _CACHE[key]


def add_custom_accelerator(store: Source, acc: Accelerator) -> None:
    """Store a validated custom accelerator; refuses an id or a name the catalogue already has, in the form's words."""
    for url in acc.sources:  # a note ("user-entered") is kept as text; an address of another scheme (javascript:, data:) is refused
        scheme = re.match(r"\s*([A-Za-z][A-Za-z0-9+.-]*):", url)
        if scheme and scheme.group(1).lower() not in ("http", "https"):
            raise CatalogueError(f"Source URL: {url[:80]!r} is not a web address; give the datasheet's http:// or https:// URL")
    known = load_catalogue(store).accelerators
    if acc.id in known:
        raise CatalogueError(f"Name: the ID {acc.id!r} made from this name already exists ({known[acc.id].name}); choose another name")
    if acc.name in {a.name for a in known.values()}:
        raise CatalogueError(
            f"Name: an accelerator named {acc.name!r} already exists; choose another name "
            "(names tell accelerators apart on screen and in links)"
        )
    store.insert("insert_custom_accelerator", accelerator_frame([acc]))


def add_custom_model(
    store: Source, config_text: str, *, model_id: str, name: str, notes: str = "", source: str = "config.json"
) -> ModelRecord:
    """Parse and store a custom model from config.json text.

    ConfigError names `source` (the uploaded file's name, or config.json for pasted text) and the key at fault;
    CatalogueError an id or name the catalogue already has.
    """
    cfg = parse_config_text(config_text, source=source)
    try:
        record = model_from_config(cfg, model_id=model_id, name=name)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    known = load_catalogue(store).records
    if model_id in known:
        raise CatalogueError(f"Name: the ID {model_id!r} made from this name already exists ({known[model_id].name}); choose another name")
    if name in {r.name for r in known.values()}:
        raise CatalogueError(
            f"Name: a model named {name!r} already exists; choose another name (names tell models apart on screen and in links)"
        )
    store.execute("insert_custom_model", id=model_id, name=name, config_json=json.dumps(cfg), notes=notes)
    return record


def config_source(file_id: str | None, file_name: str, pasted: str, last: dict[str, Any]) -> tuple[str | None, str]:
    """Which config.json the custom-model form uses: "file", "text" or None (refused), and a note saying why.

    Only one given: that one. Both: the one changed since the last press (`last`: the file id, the text and what was
    used then), the note naming the other as not used; both changed at once: refused, asking to remove one; neither
    changed: what was used last time. A file removed from the uploader is no file, so never used.
    """
    has_file, has_text = file_id is not None, bool(pasted.strip())
    if not has_file and not has_text:
        return None, "no config.json: upload the file or paste its text"
    if has_file != has_text:
        return ("file" if has_file else "text"), ""
    file_new, text_new = file_id != last.get("file"), pasted != last.get("text")
    if file_new and not text_new:
        return "file", f"Used the uploaded {file_name}; the pasted text, unchanged since your last try, was not used."
    if text_new and not file_new:
        return "text", f"Used the pasted text; the uploaded {file_name}, from an earlier try, was not used (remove it with ×)."
    if not file_new and not text_new and last.get("used") in ("file", "text"):
        kept = f"the uploaded {file_name}" if last["used"] == "file" else "the pasted text"
        return last["used"], f"Used {kept} again, as on your last try; the other was not used."
    return None, f"both an uploaded file ({file_name}) and pasted text: remove the file (×) or clear the text, then press Add model"


def delete_custom(store: Source, kind: str, entry_id: str) -> None:
    """Delete a custom accelerator or model by id (reference rows cannot be deleted)."""
    store.execute("delete_custom_accelerator" if kind == "accelerator" else "delete_custom_model", id=entry_id)


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
