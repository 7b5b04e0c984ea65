"""Separate host budgets for KV and states: `--hicache-state-share F` (kvledger's what-if).

Not an SGLang flag, and never the default. SGLang sizes the two host pools of a hybrid
model together: `build_hybrid_mamba_stack` (mem_cache/hybrid_cache/hybrid_pool_assembler.py)
passes the one `hicache_ratio` to both `build_kv_host_pool` and `MambaPoolHost`, and splits
`--hicache-size` between them in proportion to their device pool bytes
(`_split_hicache_size`). Proposals to size the state pool on its own (sgl-project/sglang
#39851 `--hicache-mamba-ratio`, closed unmerged; #39436 `--hicache-mamba-size-gb`, open)
are not in a release.

A host state slot holds a whole device state (147,619,840 B for GLM-5.3-Flash, the KV of
about 20,000 tokens), and host KV is usable only below a cached state, so the balance
between the two pools decides how much host KV can be loaded back. The share keeps the
host budget SGLang's flags give and splits it anew:

1. the budget B: with `--hicache-size G`, G (1e9 B); with `--hicache-ratio r`, the bytes of
   the two pools the ratio sizes (`int(T·r)` tokens and `int(K·r)` state slots);
2. state slots `S = floor(F·B / slot_bytes)`, host tokens `(B − S·slot_bytes) // token_bytes`;
3. both then round like SGLang's pools (one page and one slot more, `kvledger.sglang.hicache`).

With a share, size mode applies no floor on state slots (`kvledger.sglang.hicache`'s own choice for
the proportional split): the share is the caller's explicit choice.

Worked example (GLM-5.3-Flash, fp8, `--available-gib 60`: T = 4,670,784, K = 205; ratio 2;
7,260 host bytes per token): B = 9,341,568 · 7,260 + 410 · 147,619,840 = 128,343,918,080 B;
F = 0.7 gives S = 608 slots and 5,315,572 tokens.

>>> share = StateShare(0.7)
>>> budget = share.ratio_budget(raw_tokens=9_341_568, raw_slots=410, token_bytes=7_260,
...                             slot_bytes=147_619_840)
>>> budget, share.split(budget, token_bytes=7_260, slot_bytes=147_619_840, page_tokens=64)
(128343918080, (5315572, 608))
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvledger.core.units import GB, fmt_bytes

FLAG = "--hicache-state-share"
WHAT_IF = "what-if, not an SGLang flag"


def check_share(value: object) -> float:
    """The share as a float in (0, 1); a clear error naming the flag otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0 < value < 1:
        raise ValueError(f"{FLAG} {value!r}: expected a fraction strictly between 0 and 1 "
                         "(the host budget's share for state slots; the rest is KV)")
    return float(value)


@dataclass(frozen=True, slots=True)
class StateShare:
    fraction: float

    def __post_init__(self) -> None:
        check_share(self.fraction)

    @staticmethod
    def ratio_budget(*, raw_tokens: int, raw_slots: int, token_bytes: int, slot_bytes: int) -> int:
        """Host bytes --hicache-ratio gives the two pools before SGLang's rounding."""
        return raw_tokens * token_bytes + raw_slots * slot_bytes

    def split(self, budget_bytes: int, *, token_bytes: int, slot_bytes: int,
              page_tokens: int) -> tuple[int, int]:
        """(host tokens, host state slots) before rounding; errors when either pool is empty."""
        slots = int(budget_bytes * self.fraction // slot_bytes)
        if slots < 1:
            raise ValueError(
                f"{FLAG} {self.fraction!r}: {self.fraction!r} of the host budget "
                f"({fmt_bytes(budget_bytes)}) holds no state slot of {fmt_bytes(slot_bytes)}; "
                f"expected at least {math.ceil(slot_bytes / budget_bytes * 1000) / 1000:g}")
        tokens = (budget_bytes - slots * slot_bytes) // token_bytes
        if tokens < page_tokens:
            raise ValueError(
                f"{FLAG} {self.fraction!r}: leaves {fmt_bytes(budget_bytes - slots * slot_bytes)}"
                f" of a {budget_bytes / GB:g} GB host budget for KV, less than one "
                f"{page_tokens}-token page; expected a smaller share")
        return int(tokens), slots

    def note(self, budget_bytes: int, slots: int, tokens: int) -> str:
        return (f"{FLAG} {self.fraction!r} ({WHAT_IF}): {self.fraction:.0%} of the "
                f"{fmt_bytes(budget_bytes)} host budget to {slots:,} state slots, the rest to "
                f"{tokens:,} KV tokens; SGLang sizes both pools with --hicache-ratio or splits "
                "--hicache-size by device pool bytes")
