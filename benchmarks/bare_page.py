"""The floor for benchmarks/browser.py: a Streamlit page with the roofline's batch input and one small roofline chart.

What Streamlit and the browser cost for a rerun on their own: the same number input ("Batch (sequences)", in
the sidebar), a Vega-Lite chart of one roof and three points whose corner text names the batch, the line
"Batch N ·" under it, and nothing else; no store, no engine (its figures are two multiplications). Served with
the app's own settings (.streamlit/config.toml) by browser.py, which times it the way it times the roofline.

    streamlit run benchmarks/bare_page.py   (from the repository root, so the app's settings apply)
"""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="Bare page", layout="wide")
batch = int(st.sidebar.number_input("Batch (sequences)", min_value=1, max_value=4096, value=1, step=1, key="batch"))
# H100 SXM5's dense bf16 roof (989.4 TFLOP/s, 3.35 TB/s) and decode points at 2 x batch / 2 bytes FLOP/byte
peak, bandwidth = 989.4e12, 3.35e12
roof = [{"x": x, "y": min(peak, bandwidth * x)} for x in (0.1, peak / bandwidth, 1e5)]
points = [{"x": f * batch, "y": min(peak, bandwidth * f * batch), "point": p} for p, f in (("matmul", 1.0), ("step", 0.9))]
spec = {
    "width": 760,
    "height": 440,
    "title": "Roofline",
    "layer": [
        {
            "data": {"values": roof},
            "mark": "line",
            "encoding": {
                "x": {"field": "x", "type": "quantitative", "scale": {"type": "log"}, "title": "FLOP/byte"},
                "y": {"field": "y", "type": "quantitative", "scale": {"type": "log"}, "title": "FLOP/s"},
            },
        },
        {
            "data": {"values": points},
            "mark": {"type": "point", "filled": True, "size": 90},
            "encoding": {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}},
        },
        {
            "data": {"values": [{"text": f"batch {batch:,}"}]},
            "mark": {"type": "text", "align": "right", "x": "width", "y": 10},
            "encoding": {"text": {"field": "text"}},
        },
    ],
}
st.vega_lite_chart(spec)
st.markdown(f"**Batch {batch:,}** · decode matmul at {batch:.1f} FLOP/byte")
