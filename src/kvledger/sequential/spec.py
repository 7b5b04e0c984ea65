"""What a sequential replay runs: pool sizes, page, components and SGLang's replay options.

>>> spec = ReplaySpec(page_tokens=64, pool_tokens=4_670_784, state_slots=205,
...                   components=Components.FULL_MAMBA, checkpoints=Checkpoints.BRANCH)
>>> spec.pool_pages, spec.grid_pages, spec.run_name
(72981, 1, 'mamba@64+branch')
>>> ReplaySpec(page_tokens=1, pool_tokens=100, state_slots=1).grid_pages  # lcm(64, 1) tokens
64
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from math import lcm

from kvledger.sglang.rules import DEFAULT_RULES, RULES
from kvledger.tree import FULL_MAMBA, FULL_ONLY, Component

# SGLang's linear-attention chunk (mamba_cache_chunk_size, 64 by default): states are saved
# every lcm(chunk, page) tokens (mamba_checkpoint_grid).
MAMBA_CHUNK_TOKENS = 64


class Components(Enum):
    FULL = "full"  # SGLang RadixCache: KV only (dense models, the non-hybrid baseline)
    FULL_MAMBA = "full+mamba"  # UnifiedRadixCache with FULL and MAMBA components

    @property
    def tree_components(self) -> tuple[Component, ...]:
        return FULL_ONLY if self is Components.FULL else FULL_MAMBA


class Checkpoints(Enum):
    END = "end"  # one state per request, at its page-aligned prompt end
    BRANCH = "branch"  # plus SGLang's branching checkpoint (mamba_branching_seqlen)


class MatchKey(Enum):
    PROMPT = "prompt"  # the whole prompt, as the oracle replays it
    PROMPT_MINUS_ONE = "prompt-minus-one"  # all but the last token, as SGLang's scheduler does


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaySpec:
    page_tokens: int
    pool_tokens: int  # KV pool, tokens (SGLang's max_total_tokens); whole pages are usable
    state_slots: int | None  # state pool slots; None for a FULL-only tree
    components: Components = Components.FULL_MAMBA
    checkpoints: Checkpoints = Checkpoints.END
    match_key: MatchKey = MatchKey.PROMPT
    rules: str = DEFAULT_RULES

    def __post_init__(self) -> None:
        for flag, value in (("--page-size", self.page_tokens), ("--pool-tokens", self.pool_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{flag} {value!r}: expected a positive integer")
        if self.pool_tokens < self.page_tokens:
            raise ValueError(f"--pool-tokens {self.pool_tokens}: less than one "
                             f"{self.page_tokens}-token page")
        if self.rules not in RULES:
            raise ValueError(f"--rules {self.rules!r}: expected one of {', '.join(RULES)}")
        if self.components is Components.FULL:
            if self.state_slots is not None:
                raise ValueError("--state-slots: a --components full replay has no state pool")
            if self.checkpoints is Checkpoints.BRANCH:
                raise ValueError("--checkpoints branch: needs --components full+mamba")
            return
        need = 2 if self.checkpoints is Checkpoints.BRANCH else 1
        slots = self.state_slots
        if slots is None or isinstance(slots, bool) or not isinstance(slots, int) or slots < need:
            raise ValueError(f"--state-slots {slots!r}: a full+mamba replay with --checkpoints "
                             f"{self.checkpoints.value} needs at least {need} state slot(s)")

    @property
    def has_state(self) -> bool:
        return self.components is Components.FULL_MAMBA

    @property
    def pool_pages(self) -> int:
        return self.pool_tokens // self.page_tokens

    @property
    def grid_pages(self) -> int:
        """The state checkpoint grid in pages (the tree runs over page keys)."""
        return lcm(MAMBA_CHUNK_TOKENS, self.page_tokens) // self.page_tokens

    @property
    def run_name(self) -> str:
        base = "mamba" if self.has_state else "radix"
        branch = "+branch" if self.checkpoints is Checkpoints.BRANCH else ""
        return f"{base}@{self.page_tokens}{branch}"
