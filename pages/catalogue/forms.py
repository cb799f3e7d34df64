"""Forms of the catalogue page: add a custom accelerator or model, delete custom entries."""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from core.catalogue import CatalogueError, accelerator_from_row, add_custom_accelerator, add_custom_model, delete_custom
from core.measurements import escape_markdown
from core.model_config import ConfigError, slugify
from core.precisions import PEAK_PRECISIONS
from core.store import StoreError
from pages.shared.state import catalogue, store


def custom_accelerator_form() -> None:
    """A form for one accelerator in datasheet units; validated before anything is stored."""
    st.subheader("Custom accelerator")
    with st.form("custom_gpu", clear_on_submit=False):
        name = st.text_input("Name", placeholder="My accelerator", help="Display name.")
        vendor = st.text_input("Vendor", placeholder="Vendor", help="Who makes it.")
        c1, c2 = st.columns(2)
        memory = c1.number_input("Memory (GB)", 0.0, 4000.0, 80.0, help="Device memory, decimal GB (1e9 bytes).")
        bandwidth = c2.number_input("Bandwidth (TB/s)", 0.0, 50.0, 3.35, help="Peak memory bandwidth, decimal TB/s.")
        peaks = {}
        cols = st.columns(3)
        for i, prec in enumerate(reversed(PEAK_PRECISIONS)):
            peaks[prec] = cols[i % 3].number_input(
                f"{prec} dense ({'TOPS' if prec.startswith('int') else 'TFLOP/s'})",
                0.0,
                50000.0,
                0.0,
                key=f"custom_peak_{prec}",
                help=f"Dense {prec} peak (no 2:4 sparsity); 0 = not supported.",
            )
        c1, c2 = st.columns(2)
        power = c1.number_input("Power (W)", 0.0, 3000.0, 700.0, help="Board power; 0 = unknown.")
        link = c2.number_input("Scale-up link (GB/s)", 0.0, 10000.0, 0.0, help="NVLink or equivalent per device, bidirectional; 0 = none.")
        source = st.text_input("Source URL", placeholder="https://…", help="Where the figures come from.")
        submitted = st.form_submit_button("Add accelerator", icon=":material/add:")
    if submitted:
        row = {
            "id": slugify(name or "custom"),
            "name": name.strip(),
            "vendor": vendor.strip() or "custom",
            "form_factor": "custom",
            "memory_bytes": memory * 1e9,
            "bandwidth_bytes_per_s": bandwidth * 1e12,
            **{f"peak_{p}": (v * 1e12 if v > 0 else None) for p, v in peaks.items()},
            "power_w": power or None,
            "scaleup_bytes_per_s": link * 1e9 or None,
            "sources": source.strip(),
            "notes": "user-entered",
            "custom": True,
        }
        try:
            acc = accelerator_from_row(row)
            add_custom_accelerator(store(), acc)
        except (CatalogueError, StoreError, ValidationError) as exc:
            st.error(f"Not added: {exc}", icon=":material/error:")
        else:
            st.success(f"Added {escape_markdown(acc.name)} as `{acc.id}`.", icon=":material/check_circle:")


def custom_model_form() -> None:
    """Upload or paste a Hugging Face config.json; refused with the field named if it is incomplete."""
    st.subheader("Custom model")
    with st.form("custom_model", clear_on_submit=False):
        name = st.text_input("Name", placeholder="My fine-tune 8B", help="Display name; the id is derived from it.")
        upload = st.file_uploader("config.json", type=["json"], help="The model's Hugging Face config.json.")
        pasted = st.text_area("…or paste config.json", height=150, help="Used when no file is uploaded.")
        submitted = st.form_submit_button("Add model", icon=":material/add:")
    if submitted:
        text = upload.getvalue().decode("utf-8", errors="replace") if upload is not None else pasted
        if not name.strip():
            st.error("Not added: name is empty.", icon=":material/error:")
        elif not text.strip():
            st.error("Not added: upload a config.json or paste its text.", icon=":material/error:")
        else:
            try:
                rec = add_custom_model(store(), text, model_id=slugify(name), name=name.strip())
            except (ConfigError, CatalogueError, StoreError) as exc:
                st.error(f"Not added: config.json {exc}", icon=":material/error:")
            else:
                st.success(
                    f"Added {escape_markdown(rec.name)} as `{rec.id}` ({rec.num_layers} layers, hidden {rec.hidden_size}).",
                    icon=":material/check_circle:",
                )


def delete_custom_form() -> None:
    """Delete one custom entry (reference rows cannot be deleted)."""
    cat = catalogue()
    custom = [("accelerator", g) for g in cat.gpus.filter("custom")["id"]] + [("model", m) for m, r in cat.records.items() if r.custom]
    st.subheader("Your custom entries")
    if not custom:
        st.caption("None yet. Custom entries live in the store and survive restarts and reseeding.")
        return
    c1, c2 = st.columns([3, 1])
    choice = c1.selectbox("Entry", custom, format_func=lambda kv: f"{kv[0]}: {kv[1]}", help="A custom accelerator or model.")
    if c2.button("Delete", icon=":material/delete:", disabled=store().read_only, help="Remove this entry from the store."):
        delete_custom(store(), choice[0], choice[1])
        st.rerun()
