"""What the tests share, in one place: the checkout's folders."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SEED = ROOT / "data" / "seed"
APP = ROOT / "streamlit_app.py"
