"""What an accelerator costs per hour and per token: renting on demand or owning it.

Two ways to pay for a GPU-hour:
- rent: the on-demand price per GPU-hour; on-demand hours are paid only
  while they are used, so utilisation does not enter the cost of a token;
- buy: the purchase price spread over the years of amortisation plus the
  energy of every hour, board power x PUE x $ per kWh:
      cost per GPU-hour = price / (years x 8,760) + power (kW) x PUE x $/kWh,
  and an owned GPU is paid for every hour whether it serves or not, so a
  token's share is that over the utilisation.

$ per million tokens = cost per served GPU-hour x GPUs / (tokens/s x 3,600) x 1e6,
for output tokens at the decode ceiling and input tokens at the prefill's.
Buying is cheaper than renting after
      months = price / (730 x (utilisation x rent per hour - energy per hour))
(never when renting the used hours costs less than the owned GPU's energy).

Defaults, with their sources (read 2026-12-01):
- 6 years of amortisation: the useful life Microsoft and Alphabet give servers
  in their filings (from fiscal 2023) and CoreWeave its GPUs;
- $0.081 per kWh: the 2024 US industrial average (Lawrence Berkeley National
  Laboratory's study of EIA data, 10/2025);
- PUE 1.54: Uptime Institute's 2025 Global Data Center Survey average;
- utilisation 100%: the ceiling, as every other figure here; lower it for a real fleet.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0  # 730

#: Where each default of `Ownership` comes from (shown as help text and in the CLI's output).
DEFAULT_SOURCES = {
    "years": "6 years: servers' useful life in Microsoft's and Alphabet's filings from fiscal 2023 "
    "(https://shaulkoral.com/useful-life-of-servers-and-network-assets-at-tech-companies/) and CoreWeave's for its GPUs "
    "(https://bizety.com/2025/09/23/gpu-depreciation-coreweave-vs-nebius, 2025-09), read 2026-12-01",
    "usd_per_kwh": "US industrial average 2024, 8.1 cents/kWh (Lawrence Berkeley National Laboratory, 10/2025, as reported at "
    "https://onmine.io/residential-electricity-prices-surge-ahead-of-ci-rates-berkeley-lab, read 2026-12-01)",
    "pue": "Uptime Institute Global Data Center Survey 2025 average, 1.54 "
    "(https://thefreesheet.com/2026/01/19/data-centre-efficiency-flatlines-for-sixth-year-as-ai-power-demands-soar, 2026-01, "
    "read 2026-12-01)",
    "utilization": "100%: the ceiling; a fleet that idles part of the day pays for those hours too when it owns the GPUs",
}


#: The bounds of each ownership figure, shared with every control that asks for one (core.plan.compare_request).
YEARS = Field(gt=0, le=20)
USD_PER_KWH = Field(ge=0, le=5)
PUE = Field(ge=1.0, le=5.0)
UTILIZATION = Field(gt=0, le=1)


class Ownership(BaseModel):
    """How GPU-hours are paid for: rent on demand, or buy and amortise (SI-free: years, $/kWh, ratios)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["rent", "buy"] = "rent"
    years: Annotated[float, YEARS] = 6.0
    usd_per_kwh: Annotated[float, USD_PER_KWH] = 0.081
    pue: Annotated[float, PUE] = 1.54
    utilization: Annotated[float, UTILIZATION] = 1.0
    #: which published rent prices a median uses: on-demand instance rates only, or every rent price (core.catalogue.prices.RATES)
    rent_prices: Literal["on-demand", "any"] = "on-demand"


def energy_usd_per_hour(power_w: float | None, own: Ownership) -> float:
    """Energy of one GPU-hour at board power: kW x PUE x $/kWh (0 without a power figure)."""
    if power_w is None or math.isnan(power_w):
        return 0.0
    return power_w / 1000.0 * own.pue * own.usd_per_kwh


def owned_usd_per_gpu_hour(price_usd: float, power_w: float | None, own: Ownership) -> float:
    """Cost of one owned GPU-hour: price / (years x 8,760) + energy."""
    return price_usd / (own.years * HOURS_PER_YEAR) + energy_usd_per_hour(power_w, own)


def served_usd_per_gpu_hour(paid_usd_per_gpu_hour: float, own: Ownership) -> float:
    """What one GPU-hour of serving costs: the rent as paid; an owned hour over the utilisation."""
    return paid_usd_per_gpu_hour if own.mode == "rent" else paid_usd_per_gpu_hour / own.utilization


def usd_per_million_tokens(served_usd_per_gpu_hour: float, num_gpus: int, tokens_per_s: float) -> float | None:
    """$ per million tokens: cost per served GPU-hour x GPUs / (tokens/s x 3,600) x 1e6 (None without throughput)."""
    if not tokens_per_s or tokens_per_s <= 0 or math.isnan(tokens_per_s):
        return None
    return served_usd_per_gpu_hour * num_gpus / (tokens_per_s * 3600.0) * 1e6


def break_even_months(price_usd: float, rent_usd_per_gpu_hour: float, power_w: float | None, own: Ownership) -> float | None:
    """Months after which buying a GPU has cost less than renting the hours it serves; None when it never does."""
    saved_per_hour = own.utilization * rent_usd_per_gpu_hour - energy_usd_per_hour(power_w, own)
    if saved_per_hour <= 0:
        return None
    return price_usd / (HOURS_PER_MONTH * saved_per_hour)
