"""Match the names benchmark tools write to catalogue ids.

Tools write what the driver or the model hub calls things: "NVIDIA H100 80GB
HBM3" (nvidia-smi), "NVIDIA A100-SXM4-80GB", "meta-llama/Meta-Llama-3-8B-Instruct",
"models/Qwen2.5-7B-Instruct-Q4_K_M.gguf". Both sides are cut into lower-case
tokens and compared:

- accelerators: the chip token (the first one holding a digit: h100, mi300x,
  4090, l40s) must appear in the candidate; more shared tokens win; a tie goes
  to the SXM part (nvidia-smi prints "HBM3" for the SXM H100, "PCIe" for the
  card).
- models: the family (first word), every size token (8b, 8x7b, 120b) and the
  version (3 matches 3.1, 2 matches 2.5) must agree; more shared tokens win.

No match raises `NoMatchError` (an `UnknownIdError`) with the closest entries.

Tools also write a count into the accelerator ("8xH200", "H100x4", "4x NVIDIA
H100 80GB HBM3": `resolve_accelerator` gives the id and the count) and the
weight format into a quantised checkpoint's id ("Llama-3.3-70B-Instruct-FP8",
"Qwen2.5-7B-Instruct-GPTQ-Int4": `weights_in_model_name`); validation
(core.evidence.measurements) uses both for every format.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from core.catalogue.catalogue import Catalogue, UnknownIdError

_GPU_STOP = {"nvidia", "amd", "intel", "google", "cloud", "aws", "apple", "geforce", "instinct", "tesla", "gpu", "per", "the", "edition"}
_GPU_ALIAS = {"sxm2": "sxm", "sxm4": "sxm", "sxm5": "sxm", "hbm3": "sxm", "hbm3e": "sxm", "hgx": "sxm", "dgx": "sxm"}
_MODEL_STOP = {
    "meta",
    "instruct",
    "chat",
    "hf",
    "it",
    "base",
    "gguf",
    "awq",
    "gptq",
    "fp8",
    "fp16",
    "bf16",
    "int4",
    "int8",
    "medium",
    "small",
}
_SIZE = re.compile(r"^\d+(\.\d+)?[bm]$|^\d+x\d+(\.\d+)?b$")
_VERSION = re.compile(r"^\d+(\.\d+)*$")


class NoMatchError(UnknownIdError):
    """A name that matches no catalogue entry; `suggestions` are the closest ids."""

    def __init__(self, kind: str, value: str, suggestions: list[str]) -> None:
        super().__init__(kind, value, [])
        hint = f"; closest: {', '.join(suggestions)}" if suggestions else ""
        self.message = f"unknown {kind} {value!r}{hint}"
        self.suggestions = suggestions


#: "8xH200", "8 x H200", "4x NVIDIA H100 80GB HBM3" (count first) and "H100x4", "H200 x 8" (count last): an accelerator and a count.
_COUNT_FIRST = re.compile(r"^\s*(\d{1,4})\s*[x\u00d7]\s*(\S.*?)\s*$", re.IGNORECASE)
_COUNT_LAST = re.compile(r"^\s*(\S.*?)\s*[x\u00d7]\s*(\d{1,4})\s*$", re.IGNORECASE)


def split_count(name: str) -> tuple[str, int | None]:
    """An accelerator name without the count a tool writes into it ("8xH200" -> ("H200", 8)); (name, None) when there is none.

    The count is 1 to 4 digits before or after an "x" (or "×"), the rest holding a letter: "H100x4", "H200 x 8" and
    "2 x MI300X" hold counts, "MI300X" (no digits after its X) and "80GB HBM3" do not.
    """
    for pattern, chip_at, count_at in ((_COUNT_FIRST, 2, 1), (_COUNT_LAST, 1, 2)):
        m = pattern.match(name)
        if m is None or not any(c.isalpha() for c in m.group(chip_at)):
            continue
        count = int(m.group(count_at))
        if count >= 1:
            return m.group(chip_at), count
    return name, None


def resolve_accelerator(name: str, cat: Catalogue) -> tuple[str, int | None]:
    """The catalogue id of an accelerator named `name` and the count the name holds ("8xH200": h200-sxm, 8; a plain name: None).

    A name the catalogue holds as it is (an id or a name) is that entry, with no count; otherwise a count written into the
    name is read off and the rest matched, and a name with no count (or whose rest matches nothing) is matched as it is.
    """
    key = name.strip().lower()
    exact = next((str(g) for g, n in zip(cat.gpus["id"].to_list(), cat.gpus["name"].to_list(), strict=True) if key in (g, n.lower())), None)
    if exact is not None:
        return exact, None
    chip, count = split_count(name)
    if count is not None:
        try:
            return _match_accelerator(chip, cat), count
        except NoMatchError:
            pass
    return _match_accelerator(name, cat), None


def match_accelerator(name: str, cat: Catalogue) -> str:
    """The catalogue id of an accelerator named `name` (an id, a name or a driver string; a count in it is read past)."""
    return resolve_accelerator(name, cat)[0]


def _match_accelerator(name: str, cat: Catalogue) -> str:
    ids = cat.gpus["id"].to_list()
    names = cat.gpus["name"].to_list()
    key = name.strip().lower()
    for gid, gname in zip(ids, names, strict=True):
        if key in (gid, gname.lower()):
            return str(gid)
    query = _gpu_tokens(name)
    chip = next((t for t in query if any(c.isdigit() for c in t) and not t.endswith("gb")), None)
    best: tuple[float, str] | None = None
    for gid, gname in zip(ids, names, strict=True):
        cand = _gpu_tokens(f"{gid} {gname}")
        if chip is None or chip not in cand:
            continue
        score = len(query & cand) - 0.1 * len(cand - query) + (0.05 if "sxm" in cand else 0.0)
        if best is None or score > best[0]:
            best = (score, gid)
    if best is None:
        raise NoMatchError("accelerator", name, _suggest(query, {g: _gpu_tokens(f"{g} {n}") for g, n in zip(ids, names, strict=True)}))
    return best[1]


def match_model(name: str, cat: Catalogue) -> str:
    """The catalogue id of a model named `name` (an id, a Hugging Face repo, a file name)."""
    key = name.strip().lower()
    repos = dict(zip(cat.models["id"].to_list(), cat.models["hf_repo"].to_list(), strict=True))
    for mid, rec in cat.records.items():
        if key in (mid, rec.name.lower(), str(repos.get(mid) or "").lower()):
            return mid
    query = _model_tokens(name)
    family = query[0] if query else ""
    sizes = {t for t in query if _SIZE.match(t)}
    version = query[1] if len(query) > 1 and _VERSION.match(query[1]) else None
    best: tuple[float, str] | None = None
    cands = {mid: _model_tokens(f"{mid}") for mid in cat.records}
    for mid, cand in cands.items():
        if not cand or cand[0] != family or not sizes <= set(cand):
            continue
        cver = cand[1] if len(cand) > 1 and _VERSION.match(cand[1]) else None
        if version is not None and (cver is None or not (cver == version or cver.startswith(version + "."))):
            continue
        score = len(set(query) & set(cand)) + (0.5 if cver == version else 0.0) - 0.01 * len(mid)
        if best is None or score > best[0]:
            best = (score, mid)
    if best is None or not sizes:
        raise NoMatchError("model", name, _suggest(set(query), {m: set(t) for m, t in cands.items()}))
    return best[1]


#: A quantised checkpoint's name ends in its weight format ("Llama-3.3-70B-Instruct-FP8", "Qwen2.5-7B-Instruct-GPTQ-Int4",
#: "Meta-Llama-3.1-8B-Instruct-quantized.w4a16"): suffix (lower case) -> the catalogue's storage format
#: (core.catalogue.precisions.FORMATS). AWQ and GPTQ without a width are 4-bit; W8A8 is int8 (the RedHatAI / llm-compressor
#: naming: fp8 checkpoints say FP8).
_WEIGHT_SUFFIXES: dict[str, str] = {
    "fp8": "fp8",
    "fp8-dynamic": "fp8",
    "fp8-static": "fp8",
    "fp8-block": "fp8",
    "awq": "int4",
    "gptq": "int4",
    "gptq-int4": "int4",
    "gptq-int8": "int8",
    "w4a16": "int4",
    "w4a16-g128": "int4",
    "int4": "int4",
    "int8": "int8",
    "w8a8": "int8",
    "w8a16": "int8",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "fp4": "nvfp4",
}
_WEIGHT_SUFFIX = re.compile(
    r"[-_.](" + "|".join(sorted((re.escape(k).replace("\\-", "[-_]") for k in _WEIGHT_SUFFIXES), key=len, reverse=True)) + r")$",
    re.IGNORECASE,
)


def weights_in_model_name(name: str) -> tuple[str, str] | None:
    """The weight format a model id's suffix names and the suffix as written ("...-Instruct-FP8" -> ("fp8", "FP8")); None: no such suffix."""
    base = name.strip().replace("\\", "/").split("/")[-1]
    m = _WEIGHT_SUFFIX.search(base)
    if m is None:
        return None
    return _WEIGHT_SUFFIXES[m.group(1).lower().replace("_", "-")], m.group(1)


def _gpu_tokens(text: str) -> set[str]:
    words = re.split(r"[\s\-_/(),]+", text.lower())
    return {_GPU_ALIAS.get(w, w) for w in words if w and w not in _GPU_STOP}


def _model_tokens(text: str) -> list[str]:
    base = text.strip().lower().replace("\\", "/").split("/")[-1]
    base = re.sub(r"\.(gguf|bin|safetensors)$", "", base)
    base = re.sub(r"\.(?=[a-z])", " ", base)  # llama-2-7b.q4_0 -> llama-2-7b q4_0
    base = re.sub(r"(?<=[a-z])(?=\d)", " ", base)  # qwen2.5 -> qwen 2.5, llama3 -> llama 3
    words = re.split(r"[\s\-_]+", base)
    return [w for w in words if w and w not in _MODEL_STOP]


def _suggest(query: Iterable[str], candidates: dict[str, set[str]]) -> list[str]:
    q = set(query)
    text = " ".join(sorted(q))

    def likeness(toks: set[str]) -> float:  # a tie on shared words goes to the closest spelling (4080: the 4090, not the 3090)
        return difflib.SequenceMatcher(None, text, " ".join(sorted(toks))).ratio()

    scored = sorted(
        ((len(q & toks), likeness(toks), cid) for cid, toks in candidates.items() if q & toks), key=lambda x: (-x[0], -x[1], x[2])
    )
    out = [cid for _, _, cid in scored[:3]]
    if len(out) < 3:
        extra = difflib.get_close_matches(" ".join(sorted(q)), list(candidates), n=3, cutoff=0.3)
        out += [e for e in extra if e not in out][: 3 - len(out)]
    return out
