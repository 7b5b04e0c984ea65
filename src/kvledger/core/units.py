"""Integer helpers and byte units.

Decimal units (GB = 1e9, MB = 1e6) are what the article quotes; binary units (GiB = 2**30,
MiB = 2**20) are what SGLang logs. Every rendered number says which one it uses.

>>> cdiv(132, 4), align_down(7_795_170, 64), fmt_bytes(147_619_840)
(33, 7795136, '147,619,840 B (147.62 MB)')
>>> fmt_bytes(1_421_190_000_000)  # one number format: thousands separators everywhere
'1,421,190,000,000 B (1,421.19 GB)'
"""

from __future__ import annotations

KB = 1_000
MB = 1_000_000
GB = 1_000_000_000
KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative integers."""
    return -(-a // b)


def round_up(a: int, multiple: int) -> int:
    """`a` raised to a multiple of `multiple` (vllm.utils.math_utils.round_up)."""
    return cdiv(a, multiple) * multiple


def align_down(value: int, multiple: int) -> int:
    return value // multiple * multiple


def align_up(value: int, multiple: int) -> int:
    return cdiv(value, multiple) * multiple


def fmt_int(n: int) -> str:
    return f"{n:,}"


def fmt_bytes(n: int) -> str:
    """Exact bytes, then the largest decimal unit that keeps the number readable."""
    for unit, name in ((GB, "GB"), (MB, "MB"), (KB, "KB")):
        if abs(n) >= unit:
            return f"{n:,} B ({n / unit:,.2f} {name})"
    return f"{n:,} B"


def fmt_gib(n: int) -> str:
    return f"{n / GiB:,.2f} GiB"
