"""What the one-group comparison is asked: its controls, declared once.

`CompareRequest` is to the compare page what `Scenario` is to the sidebar.
Each field carries its default, its bounds (those of core's own types:
`Ownership`, `Load`, the service targets) and a `Param`: label, help, unit on
screen, link key and command-line option. From it the page draws its
controls (pages/shared/widgets.request_input), the link carries them (the
widget keys are the Param keys; pages/shared/params.LINKS lists them from
here), `roofline compare` takes its options (`add_request_arguments`) and
the view is fed (`core.present.figures.compare_view(cat, picked, scenario,
request)`). A new control is one field here plus its use.

A field's value is in core's units (seconds, a fraction of 1); a control
may show it scaled (TPOT in ms, utilisation in %), as the sidebar's do.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.catalogue.prices import RATE_LABELS, parse_price
from core.model.scenario import Param, bounds, choices, default, param
from core.plan.costs import DEFAULT_SOURCES, PUE, USD_PER_KWH, UTILIZATION, YEARS, Ownership
from core.plan.purchase import BASIS_LABELS, PRICE_MAX, REQUESTS_PER_S, SORT_KEYS, SORT_LABELS, TOKENS, Load
from core.plan.targets import BY_KEY as TARGETS
from core.plan.targets import CUSTOM, OPTION_LABELS, Target

#: The workload's two kinds, as the page shows (and a link spells) them.
MODES = {"fixed batch": "fixed batch", "service target": "service target"}
#: How GPU-hours are paid for, as the page shows (and a link spells) them.
PAY = {"rent": "rent", "buy": "buy"}


def _own(name: str) -> Any:
    return Ownership.model_fields[name].default


class CompareRequest(BaseModel):
    """The one-group comparison's controls: the workload, a service target, how to sort, the cost of a GPU-hour, a load."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Annotated[
        Literal["fixed batch", "service target"],
        Param(
            "Workload",
            "Fixed batch: the sidebar's batch. Service target: every batch from 1 to 1,024 is tried and the cheapest that meets "
            "both limits kept.",
            key="cmp_mode",
            labels=MODES,
            radio=True,
        ),
    ] = "fixed batch"
    target: Annotated[
        str,
        Param(
            "Preset target",
            "Published latency limits (MLPerf Inference's Server and Interactive scenarios, for the model they were set for) "
            "or this app's chat and batch assumptions; picking one sets both limits, custom limits lets you type them.",
            key="cmp_target",
            labels=OPTION_LABELS,
        ),
    ] = CUSTOM
    max_tpot_s: Annotated[
        float | None,
        Field(gt=0, le=10.0),
        Param(
            "TPOT ≤",
            "Time per output token each user sees, in ms (50 ms = 20 tokens/s per user). A preset sets it; pick custom limits "
            "to type your own.",
            unit="ms",
            scale=1e-3,
            key="cmp_tpot",
            flag="--tpot-ms",
            lo=1.0,
            step=1.0,
        ),
    ] = 0.05
    max_ttft_s: Annotated[
        float | None,
        Field(gt=0, le=600.0),
        Param(
            "TTFT ≤",
            "Time to first token: the prefill of one prompt, in seconds. A preset sets it; pick custom limits to type your own.",
            unit="s",
            key="cmp_ttft",
            flag="--ttft-s",
            lo=0.01,
            step=0.1,
        ),
    ] = 2.0
    sort_by: Annotated[
        str,
        Param(
            "Sort by",
            "Best first; accelerators that miss the target or do not fit last.",
            key="cmp_sort",
            flag="--sort",
            labels=SORT_LABELS,
        ),
    ] = next(iter(SORT_KEYS))
    basis: Annotated[
        Literal["predicted", "ceiling"],
        Param(
            "Figures",
            "Expected: what the sidebar's framework is expected to reach (the predicted model, with its held-out error), the "
            "search made on it and the ceiling beside it as the bound. Ceiling: the roofline bound alone (seed 004's comparisons).",
            key="cmp_basis",
            labels=BASIS_LABELS,
            radio=True,
        ),
    ] = "predicted"
    pay: Annotated[
        Literal["rent", "buy"],
        Param(
            "Pay for GPU-hours by",
            "Rent: the on-demand price per GPU-hour, paid only while used. Buy: the purchase price over the years below plus "
            "the energy of every hour, over the utilisation.",
            key="cmp_pay",
            labels=PAY,
            radio=True,
        ),
    ] = "rent"
    years: Annotated[
        float, YEARS, Param("Years", f"Buy: amortisation. Default {DEFAULT_SOURCES['years']}.", key="cmp_years", lo=0.5, step=0.5)
    ] = _own("years")
    usd_per_kwh: Annotated[
        float,
        USD_PER_KWH,
        Param("$ per kWh", f"Energy price. Default: {DEFAULT_SOURCES['usd_per_kwh']}.", key="cmp_kwh", step=0.005, fmt="%.3f"),
    ] = _own("usd_per_kwh")
    pue: Annotated[
        float, PUE, Param("PUE", f"Facility power over IT power. Default: {DEFAULT_SOURCES['pue']}.", key="cmp_pue", step=0.01)
    ] = _own("pue")
    utilization: Annotated[
        float,
        UTILIZATION,
        Param(
            "Utilisation",
            "Share of hours the GPUs serve. Buy: an owned GPU is paid every hour, so its cost per token is divided by this. "
            "Rent vs buy: the rented hours are this share of the month.",
            unit="%",
            scale=0.01,
            key="cmp_util",
            lo=1.0,
            step=5.0,
        ),
    ] = _own("utilization")
    rent_prices: Annotated[
        Literal["on-demand", "any"],
        Param(
            "Rent prices in the median",
            "Which published rent prices the median of each accelerator uses. On-demand instance rates (the default) are what "
            "a cloud charges for a GPU-hour with no commitment. Every rent price adds serverless per-second rates, managed "
            "inference endpoints, marketplace floor prices and second-hand reports. Either way each seller counts once, with "
            "its lowest price.",
            key="cmp_rates",
            labels=RATE_LABELS,
            radio=True,
        ),
    ] = _own("rent_prices")
    requests_per_s: Annotated[
        float,
        Field(ge=0, le=REQUESTS_PER_S.metadata[1].le),
        Param(
            "Load",
            "A load to serve, in requests per second (0: none): each configuration is replicated to carry it, each request's "
            "input is the sidebar's prompt.",
            unit="requests/s",
            key="cmp_rps",
            hi=1e6,
            step=1.0,
        ),
    ] = 0.0
    output_tokens: Annotated[
        int, TOKENS, Param("Output tokens", "Output tokens per request of the load.", key="cmp_out", hi=100_000, step=64)
    ] = 256

    @field_validator("target")
    @classmethod
    def _known_target(cls, value: str) -> str:
        if value != CUSTOM and value not in TARGETS:
            raise ValueError(f"unknown target {value!r}; known: {', '.join([CUSTOM, *TARGETS])}")
        return value

    @field_validator("sort_by")
    @classmethod
    def _known_sort(cls, value: str) -> str:
        if value not in SORT_KEYS:
            raise ValueError(f"unknown sort key {value!r}; known: {', '.join(SORT_KEYS)}")
        return value

    @property
    def targeted(self) -> bool:
        """Whether the comparison searches for the cheapest configuration under a service target."""
        return self.mode == "service target"

    @property
    def preset(self) -> Target | None:
        """The preset target picked (None: custom limits)."""
        return TARGETS.get(self.target)

    def with_preset_limits(self) -> CompareRequest:
        """The request with a preset's limits in its two limit fields (a preset says them; a link may name it alone)."""
        p = self.preset
        return self if p is None else self.model_copy(update={"max_tpot_s": p.tpot_s, "max_ttft_s": p.ttft_s})

    def limits(self) -> tuple[float | None, float | None]:
        """(TPOT, TTFT) limits in seconds the search holds configurations to (None: that one is not limited; both at a
        fixed batch)."""
        if not self.targeted:
            return None, None
        r = self.with_preset_limits()
        return r.max_tpot_s, r.max_ttft_s

    def ownership(self) -> Ownership:
        """How a GPU-hour is paid for, as core's cost model takes it."""
        return Ownership(
            mode=self.pay,
            years=self.years,
            usd_per_kwh=self.usd_per_kwh,
            pue=self.pue,
            utilization=self.utilization,
            rent_prices=self.rent_prices,
        )

    def load(self, input_tokens: int) -> Load | None:
        """The load to serve, each request's input the given prompt (None: no load asked for)."""
        if self.requests_per_s <= 0:
            return None
        return Load(requests_per_s=self.requests_per_s, input_tokens=input_tokens, output_tokens=self.output_tokens)

    def goal(self, batch: int) -> str:
        """What the configurations are held to, in words: the limits, or the sidebar's batch."""
        tpot, ttft = self.limits()
        said = ([f"TPOT ≤ {tpot * 1e3:g} ms"] if tpot is not None else []) + ([f"TTFT ≤ {ttft:g} s"] if ttft is not None else [])
        return ", ".join(said) if said else f"batch {batch}"


FIELDS: tuple[str, ...] = tuple(CompareRequest.model_fields)


def request_param(name: str) -> Param:
    """The Param of a CompareRequest field."""
    return param(name, CompareRequest)


def link_keys() -> dict[str, str]:
    """Field -> the link parameter (and widget key) of its control."""
    return {name: request_param(name).key or name for name in FIELDS}


def shown_labels() -> dict[str, Mapping[Any, str]]:
    """Link key -> the labels its control shows (and a link spells) for its values, for the fields that have them."""
    return {link_keys()[n]: p.labels for n in FIELDS if (p := request_param(n)).labels is not None}


# -- the command line ------------------------------------------------------------

#: The fields `roofline compare` takes directly (its cost options come from Ownership: core/cli.py's _cost_arguments).
CLI_FIELDS = ("target", "max_tpot_s", "max_ttft_s", "sort_by")


def add_request_arguments(parser: argparse.ArgumentParser, *, only: tuple[str, ...] = CLI_FIELDS) -> None:
    """One option per request field of `only`, with its default, type and help. An option named for its control's unit
    (--tpot-ms) takes the value in that unit."""
    for name in only:
        p = request_param(name)
        flag = p.flag or "--" + name.replace("_", "-")
        text = p.help.rstrip(".").replace("%", "%%")
        options = choices(name, CompareRequest) or (tuple(p.labels) if p.labels is not None else None)
        if p.unit and p.scale != 1:
            text += f" ({p.unit})"
        lo, _, hi, _ = bounds(name, CompareRequest)
        kind = float if lo is not None or hi is not None else str
        if name in ("target", "max_tpot_s", "max_ttft_s"):  # a service target: no default, so the CLI knows one was asked for
            parser.add_argument(flag, dest=name, type=kind, choices=options, default=None, help=text)
        else:
            parser.add_argument(
                flag,
                dest=name,
                type=kind,
                choices=options,
                default=default(name, CompareRequest),
                help=f"{text}; default: {default(name, CompareRequest)}",
            )


class RequestError(ValueError):
    """A request value a control or an option cannot take: names the option and the problem, in one line."""


def from_cli(args: argparse.Namespace, ownership: Ownership) -> CompareRequest:
    """The request of parsed `roofline compare` options: a preset or typed limits ask for a service target, and a limit
    not given is not held (a preset sets both)."""
    given = {n: getattr(args, n) for n in CLI_FIELDS if getattr(args, n, None) is not None}
    if "target" in given and ("max_tpot_s" in given or "max_ttft_s" in given):
        raise RequestError("--target: give a preset or --tpot-ms/--ttft-s, not both")
    tpot = request_param("max_tpot_s")
    if "max_tpot_s" in given:
        given["max_tpot_s"] = given["max_tpot_s"] * tpot.scale  # --tpot-ms is in the control's unit
    targeted = any(n in given for n in ("target", "max_tpot_s", "max_ttft_s"))
    values = {
        "max_tpot_s": None,
        "max_ttft_s": None,
        **given,
        "mode": "service target" if targeted else "fixed batch",
        **ownership.model_dump(exclude={"mode"}),
        "pay": ownership.mode,
    }
    try:
        return CompareRequest.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0])
        shown = getattr(args, name, err.get("input"))
        raise RequestError(f"{request_param(name).flag or '--' + name.replace('_', '-')}: {err['msg']}, got {shown}") from None


# -- prices typed by the user, in a link --------------------------------------------------

#: The link parameters of the prices the user typed, one `id:usd` per accelerator (a table is no widget: written by hand).
PRICE_LINKS = {"rent": "cmp_rent", "buy": "cmp_buy"}


def read_link_prices(items: Sequence[str], known: set[str], kind: str) -> tuple[dict[str, float], list[str]]:
    """({accelerator id: price} of a link's `id:usd` items of one kind, the items refused: not a known id, or not a price
    above 0 and at most PRICE_MAX[kind])."""
    given: dict[str, float] = {}
    refused = []
    for item in items:
        price = parse_price(item, ":")
        if price is not None and price[0] in known and price[1] <= PRICE_MAX[kind]:
            given[price[0]] = price[1]
        else:
            refused.append(item)
    return given, refused


def refused_prices_text(kind: str, refused: Sequence[str], shown: Callable[[str], str] = str) -> str:
    """One line for every refused price of a link, however many; each value cut where it is long and written by
    `shown` (a page escapes the link's text for markdown)."""
    some = shown(", ".join(repr(v if len(v) <= 60 else v[:40] + "…") for v in refused[:3]))
    many = "value is" if len(refused) == 1 else "values are"
    return (
        f"Link parameter {PRICE_LINKS[kind]}: {len(refused):,} {many} not an accelerator id and a price above 0 and at most "
        f"{PRICE_MAX[kind]:,.0f} US dollars ({some}); ignored."
    )


def link_price_items(prices: Mapping[str, float]) -> list[str]:
    """The `id:usd` items that write `prices` into a link, in id order."""
    return [f"{g}:{v:g}" for g, v in sorted(prices.items())]
