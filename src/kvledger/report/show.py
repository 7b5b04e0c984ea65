"""How every table writes a quantity: one convention for bytes, times and shares.

- Bytes in binary units, the engines' own (vLLM logs GiB; SGLang logs GiB and spells it "GB"):
  an exact ledger figure keeps its bytes, `147,619,840 B (140.78 MiB)`; a size alone reads
  `52.61 GiB`. Decimal GB (1e9 B) appears only where the flag itself is decimal
  (`--hicache-size`), and says so.
- Times in ms below 10 s, in s from 10 s: `850.2 ms`, `9,870.0 ms`, `12.3 s`.
- Shares of a whole as a percentage with one decimal: `36.0 %`; ratios of two quantities
  with a sign: `1.23×`.
JSON keeps machine values (bytes as integers, `*_ms`, fractions); only the tables follow this.

>>> show_bytes(147_619_840), show_size(56_493_334_528), show_size(512)
('147,619,840 B (140.78 MiB)', '52.61 GiB', '512 B')
>>> show_ms(850.24), show_ms(9_870), show_ms(12_345.6)
('850.2 ms', '9,870.0 ms', '12.3 s')
>>> show_share(1, 3), show_fraction(0.36), show_ratio(1.234), show_share(1, 0)
('33.3 %', '36.0 %', '1.23×', '—')
"""

from __future__ import annotations

from kvledger.core.units import GiB, KiB, MiB

TiB = 1 << 40
_BINARY = ((TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB"))
SECONDS_FROM_MS = 10_000.0  # at and above 10 s a time is written in seconds
UNITS_LEGEND = ("B = byte; KiB, MiB, GiB = 2^10, 2^20, 2^30 B (the engines' units); "
                "times in ms below 10 s, else s; shares in %")


def show_size(n: int | float) -> str:
    """The largest binary unit that keeps the number at least 1, two decimals."""
    for unit, name in _BINARY:
        if abs(n) >= unit:
            return f"{n / unit:,.2f} {name}"
    return f"{n:,.0f} B"


def show_bytes(n: int) -> str:
    """Exact bytes, then the size in a binary unit (bytes alone below 1 KiB)."""
    return f"{n:,} B" if abs(n) < KiB else f"{n:,} B ({show_size(n)})"


def show_ms(ms: float) -> str:
    return f"{ms:,.1f} ms" if abs(ms) < SECONDS_FROM_MS else f"{ms / 1000:,.1f} s"


def show_fraction(x: float) -> str:
    return f"{100 * x:.1f} %"


def show_share(part: float, whole: float) -> str:
    return show_fraction(part / whole) if whole else "—"


def show_ratio(x: float) -> str:
    return f"{x:,.2f}×"
