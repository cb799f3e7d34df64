"""Import form (upload, context, column mapping) and dataset management for the measured page."""

from __future__ import annotations

from typing import Any

import streamlit as st
from pydantic import ValidationError

from core.catalogue.catalogue import Catalogue
from core.catalogue.messages import Words, explain
from core.catalogue.precisions import COMPUTE_FORMATS
from core.catalogue.precisions import FORMATS as PRECISIONS
from core.evidence.formats import CANONICAL
from core.evidence.formats.generic import one_row_csv
from core.evidence.formats.registry import BY_NAME as FORMATS
from core.evidence.formats.registry import UPLOAD_TYPES, format_help
from core.evidence.importers import (
    ImportContext,
    ImportFileError,
    columns_to_map,
    delete_dataset,
    import_file,
    list_datasets,
    rename_dataset,
)
from core.evidence.measurements import Measurement
from core.present.text import escape_markdown
from core.store import SessionStore, Store, StoreError

FROM_FILE = "(from the file)"


def import_form(cat: Catalogue, store: Store | SessionStore) -> None:
    """Upload a file with the context it lacks; imports it as a dataset (one transaction; in read-only mode, into the session)."""
    with st.expander("Import benchmark results", expanded=True, icon=":material/upload_file:"):
        if store.session_only:
            st.info(
                "Read-only demo (ROOFLINE_READ_ONLY=1): what you import is kept in this browser session only. Other visitors never see it, "
                "nothing is saved, and it vanishes when this tab is closed or reloaded.",
                icon=":material/lock:",
            )
        up = st.file_uploader(
            "Benchmark output (CSV, JSON, JSONL, YAML, or a text log, table, summary, markdown or SQL file)",
            type=list(UPLOAD_TYPES),
            key="ms_upload",
            help="The format is detected from the content. Read here:\n\n" + format_help(),
        )
        c1, c2, c3 = st.columns(3)
        fmt = c1.selectbox(
            "Format", ["auto", *FORMATS], key="ms_format", format_func=_format_label, help="auto: detected from the content."
        )
        gpu = c2.selectbox("Accelerator", [FROM_FILE, *cat.gpus["id"].to_list()], key="ms_gpu", help="Replaces the file's accelerator.")
        model = c3.selectbox("Model", [FROM_FILE, *cat.records], key="ms_model", help="Replaces the file's model.")
        d1, d2, d3, d4 = st.columns(4)
        num_gpus = d1.number_input(
            "Accelerator count", 0, 1024, 0, key="ms_num_gpus", help="Accelerators the model ran on (0: from the file, else 1)."
        )
        weights = d2.selectbox("Weights", [FROM_FILE, *PRECISIONS], key="ms_weights", help="Weight format (from the file, else bf16).")
        kv = d3.selectbox("KV cache", [FROM_FILE, *PRECISIONS], key="ms_kv", help="KV-cache format (from the file, else bf16).")
        compute = d4.selectbox(
            "Compute", [FROM_FILE, *COMPUTE_FORMATS], key="ms_compute", help="Tensor-core format (default: from weights)."
        )
        e1, e2, e3, e4 = st.columns(4)
        batch = e1.number_input(
            "Batch (sequences)",
            0,
            1_000_000,
            0,
            key="ms_batch",
            help="Sequences decoded together or the client concurrency; fills the file's batch where it lacks one, or a CSV's "
            "missing batch column (0: from the file).",
        )
        inp = e2.number_input(
            "Input tokens per request",
            0,
            10_000_000,
            0,
            key="ms_in",
            help="Prompt length; fills a missing input column (0: from the file).",
        )
        out = e3.number_input(
            "Output tokens per request",
            0,
            10_000_000,
            0,
            key="ms_out",
            help="Output length; fills a missing output column (0: from the file).",
        )
        name = e4.text_input("Dataset name", key="ms_name", help="Stored as typed; default: the file name.")
        given = frozenset(k for k, v in (("batch", batch), ("input_tokens", inp), ("output_tokens", out)) if v)
        mapping, phase = _mapping_step(up, fmt, given)
        if st.button(
            "Import",
            icon=":material/upload:",
            disabled=up is None,
            key="ms_import",
            help="Validate every row, then keep the dataset in this session only."
            if store.session_only
            else "Validate every row, then store the dataset.",
        ):
            pick = {"gpu": gpu, "model": model, "weights": weights, "kv": kv, "compute": compute}
            ctx = ImportContext(
                **{k: None if v == FROM_FILE else v for k, v in pick.items()},
                num_gpus=num_gpus or None,
                batch=batch or None,
                input_tokens=inp or None,
                output_tokens=out or None,
                phase=phase,
            )
            bar = st.progress(0.0, text="Reading")
            assert up is not None
            try:
                res = import_file(
                    store,
                    up.getvalue(),
                    up.name,
                    fmt=None if fmt == "auto" else fmt,
                    context=ctx,
                    name=name,
                    mapping=mapping,
                    progress=lambda f, m: bar.progress(f, text=m),
                )
            except (ImportFileError, StoreError) as exc:  # StoreError: the store stayed busy (or refused a write)
                bar.empty()
                st.error(escape_markdown(str(exc)), icon=":material/error:")
                return
            st.session_state["_ms_select_id"] = res.dataset_id
            where = " (kept in this session only)" if store.session_only else ""
            st.success(f"Imported {res.rows:,} measurements ({res.format}) as {escape_markdown(res.name)}{where}.", icon=":material/check:")
            if res.notes:  # what the file was read as: names matched, a count or a format read from a name, a phase inferred
                st.info("How the file was read:\n\n" + "\n".join(f"- {escape_markdown(n)}" for n in res.notes), icon=":material/info:")


def _format_label(name: str) -> str:
    return "auto" if name == "auto" else f"{name}: {FORMATS[name].description}"


def _mapping_step(up: Any, fmt: str, given: frozenset[str]) -> tuple[dict[str, str] | None, Any]:
    """As soon as a CSV read as the generic format lacks required columns: one select per missing column, and the phase.

    Only headers whose content fits are offered (whole numbers for batch and lengths, positive numbers for
    tokens/s), the closest name proposed; nothing is imported until the Import button confirms the mapping.
    A column typed in the fields above (batch, input, output tokens) is not asked for. A file with no phase column
    gets a phase choice, the one inferred from its columns first (a serving run's TTFT or concurrency column: mixed).
    Returns the mapping and the phase chosen (None: the file's phase column, the inferred one, or no mapping step).
    """
    missing = None if up is None else columns_to_map(up.getvalue(), None if fmt == "auto" else fmt, given)
    if missing is None or not missing.missing:
        return None, None
    st.markdown("**Map the columns** this file names differently (nothing is imported until you press Import):")
    inferred = missing.phase
    cols = st.columns(max(1, len(missing.missing) + (inferred is not None)))
    out = {}
    for col, name in zip(cols, missing.missing, strict=False):
        options = ["", *missing.candidates.get(name, [])]
        suggested = missing.suggested.get(name, "")
        default = options.index(suggested) if suggested in options else 0
        out[name] = col.selectbox(
            name,
            options,
            index=default,
            key=f"ms_map_{name}",
            format_func=lambda h: "(choose a column)" if h == "" else h,
            help=f"The file's column holding {name}: only columns whose values fit are offered."
            + ("" if len(options) > 1 else " None fits: type the value in the field above, or fix the file."),
        )
    assert all(k in CANONICAL for k in out)
    phase = None
    if inferred is not None:
        phases = [inferred, *(p for p in PHASE_LABELS if p != inferred)]
        phase = cols[len(missing.missing)].selectbox(
            "phase",
            phases,
            key="ms_map_phase",
            format_func=PHASE_LABELS.__getitem__,
            help=f"The file has no phase column: what its tokens/s counts. Read from its columns as {PHASE_LABELS[inferred]} "
            f"({missing.phase_reason}). Decode: generated tokens/s with no prefill in the window; a serving run: output "
            "tokens/s with prefill included; prefill: prompt tokens/s.",
        )
    return {k: v for k, v in out.items() if v}, None if phase == inferred else phase  # the inferred one is said in the notes


def manage_dataset(store: Store | SessionStore, dataset_id: int, name: str) -> None:
    """Rename or delete the chosen dataset (in read-only mode, only this session's), by its id: each button's key is the
    dataset's, so a click made on a page that showed another dataset never acts on this one, and an id gone meanwhile is
    said and nothing done."""
    with st.expander("Rename or delete this dataset", icon=":material/edit:"):
        ro = not store.dataset_writable(dataset_id)
        if ro:
            st.caption("This dataset is in the read-only store (ROOFLINE_READ_ONLY=1): it cannot be renamed or deleted here.")
        c1, c2, c3 = st.columns([3, 1, 1])
        new = c1.text_input("New name", value=name, key=f"ms_rename_{dataset_id}", help="Kept exactly as typed.")
        rename = c2.button(
            "Rename",
            key=f"ms_rename_btn_{dataset_id}",
            disabled=ro,
            help=f"Save the new name of dataset #{dataset_id} ({escape_markdown(name)}).",
        )
        delete = c3.button(
            "Delete",
            key=f"ms_delete_btn_{dataset_id}",
            type="primary",
            disabled=ro,
            help=f"Delete dataset #{dataset_id} ({escape_markdown(name)}) and its measurements.",
        )
        if not (rename or delete):
            return
        if dataset_id not in set(list_datasets(store)["id"].to_list()):
            st.warning(f"Dataset #{dataset_id} is no longer stored (deleted in another session): nothing was changed.")
            return
        if rename:
            try:
                rename_dataset(store, dataset_id, new)
            except ImportFileError as exc:
                c1.error(f"New name: {escape_markdown(str(exc).removeprefix('name: '))}", icon=":material/error:")
                return
            st.session_state["_ms_done"] = [f"Renamed dataset #{dataset_id} to {escape_markdown(new.strip())}."]
        else:
            delete_dataset(store, dataset_id)
            st.session_state.pop("ms_dataset", None)
            st.session_state["_ms_done"] = [f"Deleted dataset #{dataset_id} ({escape_markdown(name)}) and its measurements."]
        st.rerun()


def measurement_form(cat: Catalogue, store: Store | SessionStore, gpu_now: str, model_now: str) -> None:
    """Type one measurement (as a blog post or a seed article prints it); it is stored as a one-row dataset, validated like a file."""
    with st.expander("Type one measurement", icon=":material/edit_note:"):
        st.caption(
            "For a figure printed in an article or a post: the scenario and what was measured. It is checked by the same rules as an "
            "imported file and kept as a dataset of one row."
        )
        with st.form("ms_one_form", border=False):
            a1, a2, a3 = st.columns(3)
            gpus, models = cat.gpus["id"].to_list(), list(cat.records)
            gpu = a1.selectbox(
                "Accelerator",
                gpus,
                index=gpus.index(gpu_now) if gpu_now in gpus else 0,
                format_func=lambda g: cat.gpu(g).name,
                key="ms_one_gpu",
                help="The accelerator it ran on (default: the sidebar's).",
            )
            count = a2.number_input(
                "Accelerator count", 1, 1024, 1, key="ms_one_gpus", help="Accelerators the model ran on (tensor parallel)."
            )
            model = a3.selectbox(
                "Model",
                models,
                index=models.index(model_now) if model_now in models else 0,
                format_func=lambda m: cat.model(m).name,
                key="ms_one_model",
                help="The model measured (default: the sidebar's).",
            )
            b1, b2, b3, b4 = st.columns(4)
            weights = b1.selectbox("Weights", list(PRECISIONS), key="ms_one_weights", help="Weight format.")
            kv = b2.selectbox("KV cache", list(PRECISIONS), key="ms_one_kv", help="KV-cache format.")
            compute = b3.selectbox(
                "Compute", [FROM_WEIGHTS, *COMPUTE_FORMATS], key="ms_one_compute", help="Tensor-core format (default: from the weights)."
            )
            phase = b4.selectbox(
                "What was measured",
                ["decode", "mixed", "prefill"],
                format_func=PHASE_LABELS.__getitem__,
                key="ms_one_phase",
                help="Decode: generated tokens/s with no prefill in the window; serving run: output tokens/s with prefill included; "
                "prefill: prompt tokens/s.",
            )
            c1, c2, c3 = st.columns(3)
            batch = c1.number_input(
                "Batch (sequences)", 1, 1_000_000, 1, key="ms_one_batch", help="Sequences decoded together, or concurrency."
            )
            inp = c2.number_input("Input tokens per request", 0, 10_000_000, 128, key="ms_one_in", help="Prompt length per request.")
            out = c3.number_input("Output tokens per request", 0, 10_000_000, 128, key="ms_one_out", help="Tokens generated per request.")
            d1, d2, d3, d4 = st.columns(4)
            tps = d1.number_input(
                "Tokens/s",
                0.0,
                1e8,
                0.0,
                key="ms_one_tps",
                help="Measured tokens/s of the whole batch (prefill: prompt tokens/s).",
                format="%.4g",
            )
            ttft = d2.number_input("TTFT (ms)", 0.0, 600_000.0, 0.0, key="ms_one_ttft", help="Mean time to first token (0: not measured).")
            tpot = d3.number_input("TPOT (ms)", 0.0, 10_000.0, 0.0, key="ms_one_tpot", help="Mean time per output token (0: not measured).")
            name = d4.text_input("Dataset name", key="ms_one_name", help="Default: the scenario in words.")
            sent = st.form_submit_button("Add this measurement", icon=":material/add:", help="Validate it and keep it as a dataset.")
        if not sent:
            return
        typed = {
            "gpu": gpu,
            "num_gpus": int(count),
            "model": model,
            "weights": weights,
            "kv": kv,
            "compute": None if compute == FROM_WEIGHTS else compute,
            "phase": phase,
            "batch": int(batch),
            "input_tokens": int(inp),
            "output_tokens": int(out),
            "tokens_per_s": float(tps),
            "ttft_s": float(ttft) / 1000 or None,
            "tpot_s": float(tpot) / 1000 or None,
        }
        try:  # the record's rules, said in this form's labels and units (ms, not the file's s)
            Measurement.model_validate(typed)
        except ValidationError as exc:
            problems = [escape_markdown(p) for p in explain(exc, MEASUREMENT_WORDS)]
            st.error("Not added: " + "; ".join(problems), icon=":material/error:")
            return
        csv = one_row_csv(
            gpu=gpu,
            num_gpus=int(count),
            model=model,
            weights=weights,
            kv=kv,
            compute=None if compute == FROM_WEIGHTS else compute,
            phase=phase,
            batch=int(batch),
            input_tokens=int(inp),
            output_tokens=int(out),
            tokens_per_s=float(tps),
            ttft_ms=float(ttft) or None,
            tpot_ms=float(tpot) or None,
        )
        label = name.strip() or f"{cat.model(model).name} on {int(count)} x {cat.gpu(gpu).name}, batch {int(batch)} (typed)"
        try:
            res = import_file(store, csv, "typed measurement.csv", name=label)
        except (ImportFileError, StoreError) as exc:
            st.error(escape_markdown(str(exc).replace("typed measurement.csv: row 1, ", "")), icon=":material/error:")
            return
        st.session_state["ms_dataset"] = res.dataset_id
        st.success(f"Added as dataset {escape_markdown(res.name)}.", icon=":material/check:")


FROM_WEIGHTS = "(from the weights)"
#: The typed measurement's fields by this form's labels and units (times in ms), for its error messages.
MEASUREMENT_WORDS = {
    "num_gpus": Words("Accelerator count", "accelerators"),
    "batch": Words("Batch (sequences)", "sequences"),
    "input_tokens": Words("Input tokens per request", "tokens"),
    "output_tokens": Words("Output tokens per request", "tokens"),
    "tokens_per_s": Words("Tokens/s", "tokens/s", empty="enter the measured tokens/s"),
    "ttft_s": Words("TTFT", "ms", 1e-3),
    "tpot_s": Words("TPOT", "ms", 1e-3),
    "phase": Words("What was measured"),
}
PHASE_LABELS = {"decode": "decode only", "mixed": "a serving run (prefill included)", "prefill": "prefill only"}
