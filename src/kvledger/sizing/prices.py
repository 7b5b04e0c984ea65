"""Per-GPU prices (USD per GPU-hour) that rank fleets by cost, and the user's overrides.

The defaults are one provider's published on-demand rates, so they agree with each other:
Spheron's prices of 17 March 2026 (spheron.network/blog/nvidia-h200-vs-b200-vs-gb200:
H200 SXM $4.54/h, B200 SXM $6.03/h). Rates differ by provider and by commitment by a factor
of two or more, so a user ranks with their own: `--gpu-price NAME=USD` replaces or adds one
GPU's price. A GPU without a price cannot be ranked by cost and is refused by name.

>>> prices = price_table(("H100=2.5", "h200=3"))
>>> prices["H100"], prices["H200"], prices["B200"]
(2.5, 3.0, 6.03)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kvledger.core.gpus import get_gpu

DEFAULT_PRICES_USD_PER_GPU_HOUR: Mapping[str, float] = {"H200": 4.54, "B200": 6.03}
SOURCE = "Spheron on-demand, 17 March 2026"
MAX_PRICE_USD = 1_000.0  # per GPU-hour; anything above is a typo


def parse_price(text: str) -> tuple[str, float]:
    """`NAME=USD` → (catalogue name, USD per GPU-hour)."""
    name, sep, usd = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"--gpu-price {text!r}: expected NAME=USD per GPU-hour (H200=4.5)")
    try:
        gpu = get_gpu(name.strip()).name
    except (KeyError, ValueError) as exc:
        raise ValueError(f"--gpu-price {text!r}: {exc}") from None
    try:
        value = float(usd)
    except ValueError:
        raise ValueError(f"--gpu-price {text!r}: {usd!r} is not a number of USD") from None
    if not 0 < value <= MAX_PRICE_USD:
        raise ValueError(f"--gpu-price {text!r}: expected a price in (0, {MAX_PRICE_USD:g}] "
                         "USD per GPU-hour")
    return gpu, value


def price_table(overrides: Iterable[str] = ()) -> dict[str, float]:
    """The default prices with each `NAME=USD` override applied, in order."""
    table = dict(DEFAULT_PRICES_USD_PER_GPU_HOUR)
    for text in overrides:
        gpu, value = parse_price(text)
        table[gpu] = value
    return table


def price_of(table: Mapping[str, float], gpu: str) -> float:
    if gpu not in table:
        raise ValueError(f"--gpu {gpu}: no price to rank it by cost; give --gpu-price "
                         f"{gpu.replace(' ', '')}=USD (USD per GPU-hour)")
    return table[gpu]
