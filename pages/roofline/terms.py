"""Expandable explanations of the roofline's terms; the prefill matmul's with the scenario's figures."""

from __future__ import annotations

import streamlit as st

from core.catalogue.catalogue import Catalogue
from core.model.ceilings import ceiling
from core.model.scenario import Scenario
from core.present.text import escape_markdown
from core.present.tour import prefill_matmuls, prefill_sentence
from pages.shared.data import HASH_FUNCS, catalogue
from pages.shared.params import scenario
from pages.shared.ui import folded

TERMS = {
    "Arithmetic intensity": "FLOPs performed ÷ bytes moved to or from HBM (FLOP/byte). The only property of an operation the roofline needs.",
    "Memory roof": "The slanted line: attainable FLOP/s = bandwidth × intensity. On log axes a 45° line is a bandwidth.",
    "Compute roof": "The flat line at the accelerator's dense peak for the chosen precision (no 2:4 sparsity).",
    "Ridge point": "Peak FLOP/s ÷ bandwidth. Below it an operation is memory-bound, above it compute-bound.",
    "Decode matmul": "Every weight matrix of a decode step: each weight read once is used by every sequence of the batch, so intensity ≈ 2 × batch ÷ bytes per weight.",
    "Decode attention": "Each sequence reads its own KV cache; with GQA group g, intensity ≈ 2g ÷ bytes per KV element, whatever the batch.",
    "Prefill matmul": "The same matrices used by every prompt token at once, so their intensity grows with the prompt's length.",
    "Derated roof": "The datasheet roof scaled by the efficiency factors: what a well-tuned kernel reaches in practice (70-90% of bandwidth for decode).",
}


@st.cache_data(hash_funcs=HASH_FUNCS, max_entries=256, show_spinner=False)
def prefill_term(cat: Catalogue, sc: Scenario) -> str:
    """The prefill matmul's explanation with the scenario's own figures, counted both ways (once per scenario; one
    prompt's prefill and the ridge do not depend on the batch, so the page asks at batch 1)."""
    pm, r = prefill_matmuls(cat, sc), ceiling(cat, sc)
    side = "" if r.ridge is None else (", so they are compute-bound" if pm.intensity >= r.ridge else ", so they are memory-bound")
    said = prefill_sentence(pm)
    return (
        f"{TERMS['Prefill matmul']} For {escape_markdown(cat.model(sc.model).name)}, {said[0].lower()}{said[1:]} "
        f"The ridge of {escape_markdown(r.gpu_name)} in {r.compute_used} is {r.ridge or 0:,.0f} FLOP/byte{side}."
    )


def explain_terms(cat: Catalogue | None = None, sc: Scenario | None = None) -> None:
    """One expander per term, its text drawn once it is opened (pages.shared.ui.folded); the prefill matmul's with
    the scenario's own figures, counted both ways."""
    cat = cat if cat is not None else catalogue()
    sc = sc if sc is not None else scenario()
    st.subheader("Terms")
    for term, text in TERMS.items():
        if box := folded(term, key=term_key(term)):
            box.markdown(prefill_term(cat, sc.model_copy(update={"batch": 1})) if term == "Prefill matmul" else text)


def term_key(term: str) -> str:
    """The session-state key of a term's expander (True while open)."""
    return "rf_term_" + term.lower().replace(" ", "_")
