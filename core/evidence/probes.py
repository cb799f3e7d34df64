"""Probe documents (core.probe) into the store: a measured profile of a catalogue accelerator.

`import_probe` reads a probe's JSON, attaches it to an accelerator (the one
named, else the catalogue's accelerator whose name the device's matches,
else a custom accelerator made from the measured figures, named
"<device> (probed)") and stores the profile beside the datasheet figures,
in one transaction. A file imported twice is refused; a malformed one is
refused with the field that is wrong, and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import polars as pl
from pydantic import ValidationError

from core.catalogue import bounded_json
from core.catalogue.catalogue import MEASURED_PRECISIONS, Catalogue, load_catalogue
from core.catalogue.seed import accelerator_frame
from core.catalogue.specs import Accelerator, outside_bounds
from core.evidence.matching import NoMatchError, match_accelerator
from core.probe.document import SCHEMA, ProbeDocument
from core.store.paths import read_sql


class ProbeFileError(ValueError):
    """A probe file that cannot be imported; the message names the file and what is wrong."""


@dataclass(frozen=True)
class ProbeImport:
    """A profile written to the store."""

    profile_id: int
    accelerator_id: str
    created: bool  # a custom accelerator was made for it
    document: ProbeDocument


#: A probe document is a few kilobytes; a file past this is not one.
MAX_PROBE_BYTES = 10_000_000


def parse_probe(data: bytes, file_name: str = "probe.json") -> ProbeDocument:
    """A probe document from a file's bytes; ProbeFileError naming the field otherwise."""
    try:
        raw = bounded_json.loads(data.decode("utf-8-sig"), max_bytes=MAX_PROBE_BYTES, allow_nan=False, source=file_name)
    except bounded_json.JSONLimitError as exc:
        raise ProbeFileError(str(exc)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProbeFileError(f"{file_name}: not JSON ({exc})") from None
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        raise ProbeFileError(f"{file_name}: not a probe document (schema {found!r}, expected {SCHEMA!r}; made by python -m core.probe)")
    if raw.get("version") != 1:
        raise ProbeFileError(f"{file_name}: probe document version {raw.get('version')!r}; this version reads version 1")
    try:
        return ProbeDocument.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(document)"
        raise ProbeFileError(f"{file_name}: field {where}: {first['msg']}") from None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:50] or "device"


def accelerator_from_probe(doc: ProbeDocument, cat: Catalogue) -> Accelerator:
    """A custom accelerator whose figures are the probe's (for a device the catalogue lacks, e.g. this machine's CPU)."""
    name = f"{doc.device.name} (probed)"
    base = f"{_slug(doc.device.name)}-probed"
    taken, n, gpu_id = set(cat.accelerators), 2, base
    while gpu_id in taken:
        gpu_id, n = f"{base}-{n}", n + 1
    vendor = next((v for v in ("NVIDIA", "AMD", "Intel", "Apple", "Google", "Qualcomm", "Ampere") if v.lower() in name.lower()), "unknown")
    peaks = {f"peak_{p}": v for p, v in doc.summary.peak_flops.items()}
    if not doc.device.memory_bytes:
        raise ProbeFileError("device.memory_bytes: the probe did not record the device's memory; name a catalogue accelerator instead")
    return Accelerator(
        id=gpu_id,
        name=name,
        vendor=vendor,
        form_factor={"cpu": "CPU", "mps": "SoC"}.get(doc.device.kind, ""),
        memory_bytes=doc.device.memory_bytes,
        bandwidth_bytes_per_s=doc.summary.bandwidth_bytes_per_s,
        **peaks,
        notes=f"{PROBED_NOTE} {doc.created_at} ({doc.device.backend}): every figure is measured, none is a datasheet's",
        custom=True,
    )


PROBED_NOTE = "made from a probe of"


def made_from_probe(acc: Accelerator) -> bool:
    """Whether an accelerator is one import_probe made (its figures are a probe's, not a datasheet's)."""
    return acc.custom and acc.notes.startswith(PROBED_NOTE)


def target(doc: ProbeDocument, cat: Catalogue, gpu: str | None) -> str | None:
    """The catalogue accelerator a probe belongs to: the one named (id or name), else a name match; None: none matches."""
    if gpu:
        for g, acc in cat.accelerators.items():
            if gpu in (g, acc.name):
                return g
        return match_accelerator(gpu, cat)  # NoMatchError with suggestions
    exact = [g for g, acc in cat.accelerators.items() if acc.name in (doc.device.name, f"{doc.device.name} (probed)")]
    if exact:
        return exact[0]
    if doc.device.kind == "cpu":  # CPU names ("AMD EPYC") would match a GPU of the same vendor by token
        return None
    try:
        return match_accelerator(doc.device.name, cat)
    except NoMatchError:
        return None


def import_probe(store: Any, data: bytes, file_name: str = "probe.json", *, gpu: str | None = None) -> ProbeImport:
    """Store a probe file as a measured profile (one transaction); ProbeFileError, NoMatchError otherwise."""
    doc = parse_probe(data, file_name)
    for problem in outside_bounds(doc.summary.bandwidth_bytes_per_s, {str(p): v for p, v in doc.summary.peak_flops.items()}):
        raise ProbeFileError(f"{file_name}: summary.{problem}; nothing was stored")
    sha = hashlib.sha256(data).hexdigest()
    dup = store.query("probe_profile_by_hash", file_sha256=sha)
    if dup.height:
        d = dup.row(0, named=True)
        raise ProbeFileError(f"{file_name}: already imported as profile {d['id']} of {d['accelerator_id']}; delete it first")
    cat = load_catalogue(store)
    gpu_id = target(doc, cat, gpu)
    made = accelerator_from_probe(doc, cat) if gpu_id is None else None
    values = {
        "accelerator_id": made.id if made else gpu_id,
        "device_name": doc.device.name,
        "device_kind": doc.device.kind,
        "backend": doc.device.backend,
        "probed_at": doc.created_at,
        "file_name": file_name,
        "file_sha256": sha,
        "bandwidth_bytes_per_s": doc.summary.bandwidth_bytes_per_s,
        **{f"peak_{p}": doc.summary.peak_flops.get(p) for p in MEASURED_PRECISIONS},  # type: ignore[call-overload]
        "document_json": doc.to_json(),
    }
    with store.transaction() as cur:
        if made is not None:
            cur.register("rows", accelerator_frame([made]))
            cur.execute(read_sql("insert_custom_accelerator"))
            cur.unregister("rows")
        row = cur.execute(read_sql("insert_probe_profile"), values).fetchone()
    return ProbeImport(int(row[0]), str(values["accelerator_id"]), made is not None, doc)


def profile_document(store: Any, profile_id: int) -> ProbeDocument:
    """The full probe document of a stored profile."""
    rows = store.query("probe_document", id=profile_id)
    if not rows.height:
        raise KeyError(f"no measured profile {profile_id}")
    return ProbeDocument.model_validate_json(rows["document_json"][0])


def delete_profile(store: Any, profile_id: int) -> None:
    store.execute("delete_probe_profile", id=profile_id)


def measured_vs_datasheet(cat: Catalogue, gpu_id: str) -> pl.DataFrame:
    """Per figure of an accelerator's newest profile: datasheet, measured and their ratio (empty without a profile)."""
    prof = cat.profile(gpu_id)
    if prof is None:
        return pl.DataFrame(schema={"figure": pl.String, "datasheet": pl.Float64, "measured": pl.Float64, "ratio": pl.Float64})
    acc = cat.gpu(gpu_id)
    rows = [("bandwidth (B/s)", acc.bandwidth_bytes_per_s, prof["bandwidth_bytes_per_s"])]
    rows += [(f"{p} peak (FLOP/s)", getattr(acc, f"peak_{p}"), prof[f"peak_{p}"]) for p in MEASURED_PRECISIONS if prof[f"peak_{p}"]]
    return pl.DataFrame(
        {
            "figure": [r[0] for r in rows],
            "datasheet": [r[1] for r in rows],
            "measured": [r[2] for r in rows],
            "ratio": [r[2] / r[1] if r[1] else None for r in rows],
        },
        schema={"figure": pl.String, "datasheet": pl.Float64, "measured": pl.Float64, "ratio": pl.Float64},
    )


def measured_line(cat: Catalogue, gpu_id: str) -> str | None:
    """ "measured: 91% of datasheet bandwidth, 78% of bf16 peak" for an accelerator with a profile (None without)."""
    table = measured_vs_datasheet(cat, gpu_id)
    if table.is_empty():
        return None
    if made_from_probe(cat.gpu(gpu_id)):
        when = str((cat.profile(gpu_id) or {}).get("probed_at", ""))[:10]
        return f"every figure is its probe's ({when}), not a datasheet's"
    parts = []
    for fig, ratio in zip(table["figure"], table["ratio"], strict=True):
        if ratio is None:
            continue
        what = "datasheet bandwidth" if fig.startswith("bandwidth") else f"{fig.split()[0]} peak"
        parts.append(f"{ratio:.0%} of {what}")
    prof = cat.profile(gpu_id) or {}
    when = str(prof.get("probed_at", ""))[:10]
    return f"measured ({when}): " + ", ".join(parts) if parts else None
