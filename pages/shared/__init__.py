"""Helpers shared by the pages (Streamlit side only; numbers come from core)."""
