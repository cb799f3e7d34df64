"""Forms of the catalogue page: add a custom accelerator or model, delete custom entries."""

from __future__ import annotations

from typing import Any

import streamlit as st
from pydantic import ValidationError

from core.catalogue.catalogue import add_custom_accelerator, add_custom_model, delete_custom
from core.catalogue.model_config import ConfigError, slugify
from core.catalogue.seed import CatalogueError, accelerator_from_row, field_type
from core.catalogue.specs import accelerator_columns
from core.present.text import escape_markdown
from core.store import StoreError
from pages.shared.data import catalogue, store


def custom_accelerator_form() -> None:
    """A form with one input per accelerator field, in its datasheet unit; validated before anything is stored."""
    st.subheader("Custom accelerator")
    row: dict[str, Any] = {"form_factor": "custom", "notes": "user-entered", "custom": True}
    with st.form("custom_gpu", clear_on_submit=False):
        cols = st.columns(3)
        for i, (name, col) in enumerate(c for c in accelerator_columns().items() if c[1].form):
            where = cols[i % 3] if name.startswith("peak_") else st
            row[name] = _field_input(name, col, where)
        submitted = st.form_submit_button("Add accelerator", icon=":material/add:")
    if submitted:
        row["id"] = slugify(row.get("name") or "custom")
        row["vendor"] = row.get("vendor") or "custom"
        row["sources"] = row.get("sources") or "user-entered"
        try:
            acc = accelerator_from_row(row)
            add_custom_accelerator(store(), acc)
        except (CatalogueError, StoreError, ValidationError) as exc:
            st.error(f"Not added: {escape_markdown(str(exc))}", icon=":material/error:")
        else:
            st.success(f"Added {escape_markdown(acc.name)} as `{acc.id}`.", icon=":material/check_circle:")


def _field_input(name: str, col: Any, where: Any) -> Any:
    """One field's input in its reading unit; returns the SI value (None for an empty or zero figure)."""
    label = col.heading()
    if field_type(name) is str or field_type(name) is list:
        text = where.text_input(label, value=str(col.example or ""), key=f"custom_{name}", help=col.doc)
        return text.strip() or None
    if field_type(name) is int:
        value = where.number_input(label, 0, 10_000, int(col.example or 0), key=f"custom_{name}", help=f"{col.doc}; 0 = unknown.")
        return value or None
    value = where.number_input(
        label, 0.0, 1e6, float(col.example or 0.0), key=f"custom_{name}", help=f"{col.doc}; 0 = unknown or unsupported."
    )
    return value * col.scale if value > 0 else None


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
                st.error(f"Not added: config.json {escape_markdown(str(exc))}", icon=":material/error:")
            else:
                st.success(
                    f"Added {escape_markdown(rec.name)} as `{rec.id}` ({rec.num_layers} layers, hidden {rec.hidden_size}).",
                    icon=":material/check_circle:",
                )


def delete_custom_form() -> None:
    """Delete one custom entry (reference rows cannot be deleted)."""
    cat = catalogue()
    custom = [("accelerator", g) for g, a in cat.accelerators.items() if a.custom]
    custom += [("model", m) for m, r in cat.records.items() if r.custom]
    st.subheader("Your custom entries")
    if not custom:
        st.caption("None yet. Custom entries live in the store and survive restarts and reseeding.")
        return
    c1, c2 = st.columns([3, 1])
    choice = c1.selectbox("Entry", custom, format_func=lambda kv: f"{kv[0]}: {kv[1]}", help="A custom accelerator or model.")
    if c2.button("Delete", icon=":material/delete:", disabled=store().read_only, help="Remove this entry from the store."):
        delete_custom(store(), choice[0], choice[1])
        st.rerun()
