"""The catalogue: what accelerators and models are, read from the reviewed seed and the store.

`precisions` (formats, fallback to a wider peak), `specs` (the Accelerator and
ModelRecord records, each accelerator field declared once), `model_config`
(a config.json into a ModelRecord), `operations` (a model's operations and
their shapes), `seed` (data/seed/ into the store's rows), `catalogue` (the
loaded catalogue as frames, records and arrays). Imports nothing above it.
"""
