"""The calculator's own scenario options (the shared sidebar holds the rest)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.catalogue import Catalogue
from core.planning import default_draft_model


def scenario_options(cat: Catalogue, model_id: str) -> dict[str, Any]:
    """Speculative decoding, efficiency, overhead, memory reserve and price as Scenario overrides."""
    models = {m: r.name for m, r in cat.records.items()}
    with st.expander("Options: speculative decoding, efficiency, memory reserve, price", expanded=True):
        c1, c2, c3, c4 = st.columns(4)
        k = c1.number_input(
            "Draft length (tokens)",
            0,
            16,
            0,
            key="calc_k",
            help="Tokens the draft model proposes per verify step; 0 turns speculative decoding off.",
        )
        accept = c1.slider(
            "Acceptance rate",
            0.0,
            0.95,
            0.7,
            0.05,
            key="calc_accept",
            help="Probability that each drafted token is accepted (per token, independent).",
        )
        suggested = default_draft_model(cat, model_id)
        options = [suggested] if suggested else []
        options += [m for m in models if m not in options and m != model_id]
        draft = c1.selectbox(
            "Draft model",
            options,
            key="calc_draft",
            format_func=models.get,
            help="Small model that drafts tokens; default: the smallest of the same family and vocabulary.",
        )
        eff_b = c2.slider(
            "Bandwidth efficiency",
            0.3,
            1.0,
            1.0,
            0.05,
            key="calc_eff_b",
            help="Share of peak memory bandwidth (byte/s) reachable in practice; 1 = datasheet.",
        )
        eff_c = c2.slider(
            "Compute efficiency", 0.3, 1.0, 1.0, 0.05, key="calc_eff_c", help="Share of peak FLOP/s reachable in practice; 1 = datasheet."
        )
        overhead = c3.number_input(
            "Overhead per step (ms)",
            0.0,
            100.0,
            0.0,
            0.1,
            key="calc_overhead",
            help="Fixed time added to every step (kernel launches, scheduling), in milliseconds.",
        )
        reserve = c3.slider(
            "Memory reserve (%)",
            0,
            50,
            10,
            1,
            key="calc_reserve",
            help="Share of each GPU's memory kept free for activations, CUDA graphs and fragmentation.",
        )
        price = c4.number_input(
            "$ per GPU-hour",
            0.0,
            1000.0,
            0.0,
            0.1,
            key="calc_price",
            help="Your price per GPU per hour (US$); 0 leaves the cost per million tokens empty.",
        )
    return {
        "spec_draft_len": k,
        "spec_acceptance": accept,
        "spec_draft_model": draft if k > 0 else None,
        "eff_bandwidth": eff_b,
        "eff_compute": eff_c,
        "overhead_s": overhead / 1e3,
        "reserve_fraction": reserve / 100,
        "usd_per_gpu_hour": price,
    }
