"""Service targets a deployment is held to: time per output token and time to first token, with where each comes from.

MLPerf Inference's latency limits are the published ones: the LLM
benchmarks' Server and Interactive scenarios each fix a TTFT and a TPOT limit
(mlcommons/inference_policies, inference_rules.adoc at commit ac93e89c,
2026-07-23; the loadgen's mlperf.conf holds the same numbers). "chat" and
"batch" are this app's own and say what they assume.
"""

from __future__ import annotations

from dataclasses import dataclass

RULES = "https://github.com/mlcommons/inference_policies/blob/ac93e89c0c9a8819eb0ad987768c2f6e22896714/inference_rules.adoc"


@dataclass(frozen=True)
class Target:
    """One preset: its key (in a link), label, limits (s), the catalogue model it was set for (None: any) and its source."""

    key: str
    label: str
    tpot_s: float
    ttft_s: float
    model: str | None
    source: str

    @property
    def text(self) -> str:
        """The limits as people write them."""
        return f"TPOT ≤ {self.tpot_s * 1e3:g} ms, TTFT ≤ {self.ttft_s:g} s"


def _mlperf(key: str, benchmark: str, scenario: str, ttft_ms: float, tpot_ms: float, model: str, version: str, note: str = "") -> Target:
    source = f"MLPerf Inference {version} rules, {benchmark} {scenario}: TTFT/TPOT {ttft_ms:g} ms/{tpot_ms:g} ms ({RULES})"
    return Target(key, f"MLPerf {benchmark} {scenario}", tpot_ms / 1e3, ttft_ms / 1e3, model, source + note)


TARGETS: tuple[Target, ...] = (
    Target(
        "chat",
        "Chat",
        0.050,
        2.0,
        None,
        "this app's assumption: 20 tokens/s per user streams faster than people read, and the first token within 2 s",
    ),
    Target(
        "batch",
        "Batch (offline)",
        1.0,
        60.0,
        None,
        "this app's assumption: only throughput matters; the limits only keep a token under a second and a prompt under a minute",
    ),
    _mlperf("mlperf-llama2-70b-server", "Llama-2-70B", "Server", 2000, 200, "llama-2-70b", "v4.0 and later"),
    _mlperf("mlperf-llama2-70b-interactive", "Llama-2-70B", "Interactive", 450, 40, "llama-2-70b", "v5.0 and later"),
    _mlperf("mlperf-mixtral-8x7b-server", "Mixtral-8x7B", "Server", 2000, 200, "mixtral-8x7b", "v4.1 and later"),
    _mlperf("mlperf-llama3.1-405b-server", "Llama-3.1-405B", "Server", 6000, 175, "llama-3.1-405b", "v5.0 and later"),
    _mlperf("mlperf-llama3.1-405b-interactive", "Llama-3.1-405B", "Interactive", 4500, 80, "llama-3.1-405b", "v5.1 and later"),
    _mlperf("mlperf-llama3.1-8b-server", "Llama-3.1-8B", "Server", 2000, 100, "llama-3.1-8b", "v5.1 and later"),
    _mlperf("mlperf-llama3.1-8b-interactive", "Llama-3.1-8B", "Interactive", 500, 30, "llama-3.1-8b", "v5.1 and later"),
    _mlperf(
        "mlperf-deepseek-r1-server",
        "DeepSeek-R1",
        "Server",
        2000,
        80,
        "deepseek-v3",
        "v5.1 and later",
        "; DeepSeek-R1 has DeepSeek-V3's architecture, the catalogue's deepseek-v3",
    ),
    _mlperf(
        "mlperf-deepseek-r1-interactive",
        "DeepSeek-R1",
        "Interactive",
        1500,
        15,
        "deepseek-v3",
        "v6.0 and later",
        "; DeepSeek-R1 has DeepSeek-V3's architecture, the catalogue's deepseek-v3",
    ),
    _mlperf("mlperf-gpt-oss-120b-server", "GPT-OSS-120B", "Server", 3000, 80, "gpt-oss-120b", "v6.0 and later"),
    _mlperf(
        "mlperf-gpt-oss-120b-interactive",
        "GPT-OSS-120B",
        "Interactive",
        2000,
        20,
        "gpt-oss-120b",
        "v6.0 and later",
        "; the loadgen's mlperf.conf at commit b66003e1 prints 15 ms for this TPOT, the rules 20 ms",
    ),
)
BY_KEY = {t.key: t for t in TARGETS}
#: What a preset picker shows (and a link carries) for each key; "custom" for limits typed by hand.
CUSTOM = "custom"
OPTION_LABELS = {CUSTOM: "custom limits", **{t.key: f"{t.label} ({t.text})" for t in TARGETS}}


def targets_for(model: str) -> list[Target]:
    """The presets that apply to a model: the general ones and the MLPerf ones set for it (then the other MLPerf ones)."""
    general = [t for t in TARGETS if t.model is None]
    mine = [t for t in TARGETS if t.model == model]
    others = [t for t in TARGETS if t.model not in (None, model)]
    return general + mine + others
