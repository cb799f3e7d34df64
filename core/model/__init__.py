"""The model: the one engine and what it answers for a scenario.

`scenario` (the Scenario type: one definition for the sidebar, links, the CLI
and the tests), `engine` (a step's operations, their FLOPs and bytes, and
the step's time at the ridge), `ceilings` (a scenario's steps, tokens/s,
TTFT, memory fit and cost as one frame), `result` (that frame's schema and a
typed row), `roofline` (roofs, ridges, operating points), `sweep` (grids of
scenarios), `allocation` (memory as vLLM or SGLang sizes it at start-up: the
KV cache's tokens and concurrency), `allocator` (keep freed memory for the
engine's large arrays).
Imports only core.catalogue.
"""
