"""Import form (upload, context, column mapping) and dataset management for the measured page."""

from __future__ import annotations

import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.catalogue.precisions import COMPUTE_FORMATS
from core.catalogue.precisions import FORMATS as PRECISIONS
from core.evidence.formats import CANONICAL
from core.evidence.formats.registry import BY_NAME as FORMATS
from core.evidence.importers import ImportContext, ImportFileError, delete_dataset, import_file, rename_dataset
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
            "Benchmark output (CSV, JSON, JSONL)",
            type=["csv", "json", "jsonl"],
            key="ms_upload",
            help="vLLM, SGLang, TensorRT-LLM, genai-perf, AIPerf, llmperf, llama-bench, optimum-benchmark or the generic CSV.",
        )
        c1, c2, c3 = st.columns(3)
        fmt = c1.selectbox(
            "Format", ["auto", *FORMATS], key="ms_format", format_func=_format_label, help="auto: detected from the content."
        )
        gpu = c2.selectbox("Accelerator", [FROM_FILE, *cat.gpus["id"].to_list()], key="ms_gpu", help="Replaces the file's accelerator.")
        model = c3.selectbox("Model", [FROM_FILE, *cat.records], key="ms_model", help="Replaces the file's model.")
        d1, d2, d3, d4 = st.columns(4)
        num_gpus = d1.number_input("GPUs", 0, 1024, 0, key="ms_num_gpus", help="Accelerators the model ran on (0: from the file, else 1).")
        weights = d2.selectbox("Weights", [FROM_FILE, *PRECISIONS], key="ms_weights", help="Weight format (from the file, else bf16).")
        kv = d3.selectbox("KV cache", [FROM_FILE, *PRECISIONS], key="ms_kv", help="KV-cache format (from the file, else bf16).")
        compute = d4.selectbox(
            "Compute", [FROM_FILE, *COMPUTE_FORMATS], key="ms_compute", help="Tensor-core format (default: from weights)."
        )
        e1, e2, e3, e4 = st.columns(4)
        batch = e1.number_input(
            "Batch", 0, 1_000_000, 0, key="ms_batch", help="Sequences or concurrency, where the file lacks it (0: none)."
        )
        inp = e2.number_input("Input (tokens)", 0, 10_000_000, 0, key="ms_in", help="Prompt length, where the file lacks it (0: none).")
        out = e3.number_input("Output (tokens)", 0, 10_000_000, 0, key="ms_out", help="Output length, where the file lacks it (0: none).")
        name = e4.text_input("Dataset name", key="ms_name", help="Stored as typed; default: the file name.")
        mapping = _mapping_step()
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
                st.session_state["ms_missing"] = getattr(exc, "missing", None)
                st.error(escape_markdown(str(exc)), icon=":material/error:")
                return
            st.session_state.pop("ms_missing", None)
            st.session_state["ms_dataset"] = res.dataset_id
            where = " (kept in this session only)" if store.session_only else ""
            st.success(f"Imported {res.rows:,} measurements ({res.format}) as {escape_markdown(res.name)}{where}.", icon=":material/check:")


def _format_label(name: str) -> str:
    return "auto" if name == "auto" else f"{name}: {FORMATS[name].description}"


def _mapping_step() -> dict[str, str] | None:
    """When the generic CSV's headers differ: one select per missing column."""
    missing = st.session_state.get("ms_missing")
    if missing is None:
        return None
    st.markdown("**Map the columns** this file names differently:")
    cols = st.columns(max(1, len(missing.missing)))
    out = {}
    for col, name in zip(cols, missing.missing, strict=False):
        options = ["", *missing.headers]
        default = options.index(missing.suggested.get(name, "")) if missing.suggested.get(name, "") in options else 0
        out[name] = col.selectbox(name, options, index=default, key=f"ms_map_{name}", help=f"The file's column holding {name}.")
    assert all(k in CANONICAL for k in out)
    return {k: v for k, v in out.items() if v}


def manage_dataset(store: Store | SessionStore, dataset_id: int, name: str) -> None:
    """Rename or delete the chosen dataset (in read-only mode, only this session's)."""
    with st.expander("Rename or delete this dataset", icon=":material/edit:"):
        ro = not store.dataset_writable(dataset_id)
        if ro:
            st.caption("This dataset is in the read-only store (ROOFLINE_READ_ONLY=1): it cannot be renamed or deleted here.")
        c1, c2, c3 = st.columns([3, 1, 1])
        new = c1.text_input("New name", value=name, key=f"ms_rename_{dataset_id}", help="Kept exactly as typed.")
        if c2.button("Rename", key="ms_rename_btn", disabled=ro, help="Save the new name."):
            rename_dataset(store, dataset_id, new)
            st.rerun()
        if c3.button("Delete", key="ms_delete_btn", type="primary", disabled=ro, help="Delete the dataset and its measurements."):
            delete_dataset(store, dataset_id)
            st.session_state.pop("ms_dataset", None)
            st.rerun()
