"""Expandable explanations of the roofline's terms (text only)."""

from __future__ import annotations

import streamlit as st

TERMS = {
    "Arithmetic intensity": "FLOPs performed ÷ bytes moved to or from HBM (FLOP/byte). The only property of an operation the roofline needs.",
    "Memory roof": "The slanted line: attainable FLOP/s = bandwidth × intensity. On log axes a 45° line is a bandwidth.",
    "Compute roof": "The flat line at the accelerator's dense peak for the chosen precision (no 2:4 sparsity).",
    "Ridge point": "Peak FLOP/s ÷ bandwidth. Below it an operation is memory-bound, above it compute-bound.",
    "Decode matmul": "Every weight matrix of a decode step: each weight read once is used by every sequence of the batch, so intensity ≈ 2 × batch ÷ bytes per weight.",
    "Decode attention": "Each sequence reads its own KV cache; with GQA group g, intensity ≈ 2g ÷ bytes per KV element, whatever the batch.",
    "Prefill matmul": "The same matrices used by every prompt token at once: far right of the ridge, compute-bound even for one request.",
    "Derated roof": "The datasheet roof scaled by the efficiency factors: what a well-tuned kernel reaches in practice (70-90% of bandwidth for decode).",
}


def explain_terms() -> None:
    """One expander per term."""
    st.subheader("Terms")
    for term, text in TERMS.items():
        with st.expander(term):
            st.markdown(text)
