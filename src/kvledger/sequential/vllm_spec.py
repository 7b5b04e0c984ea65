"""What a vLLM replay runs: block size, the shared pool, groups and the scheduler variant.

The pool is given in tokens as the oracle cells define it: ``num_blocks = T // B + 1``
blocks (block 0 is the null block), shared by every group, one block per cached state.
The groups follow vLLM 0.33's hybrid layout for a model whose layer 0 is linear attention:
the Mamba groups first, then the attention group (`_get_kv_cache_groups_uniform_page_size`;
GLM-5.3-Flash has four Mamba groups and one MLA group, so each of its states costs four
blocks: ``mamba_groups=4``; the oracle cells have one).

>>> spec = VllmReplaySpec(block_tokens=64, pool_tokens=4_670_784)
>>> spec.num_blocks, spec.run_name
(72982, 'hybrid-align@64')
>>> VllmReplaySpec(block_tokens=64, pool_tokens=1 << 20, retention_tokens=None,
...                scheduler=Scheduler.SYNC).run_name
'hybrid-align@64+dense+sync'
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kvledger.blocks import FullAttentionSpec, GroupSpec, MambaAlignSpec
from kvledger.sequential.spec import Components


class Scheduler(Enum):
    ASYNC = "async"  # AsyncScheduler, batch queue of 2 (VllmConfig's default)
    SYNC = "sync"  # Scheduler, one step in flight

    @property
    def steps_in_flight(self) -> int:
        return 2 if self is Scheduler.ASYNC else 1


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmReplaySpec:
    block_tokens: int
    pool_tokens: int  # T: T // B + 1 blocks shared by every group
    components: Components = Components.FULL_MAMBA
    checkpoint_blocks: int = 1  # num_prefill_checkpoint_blocks (0: the scheduler stops at c)
    retention_tokens: int | None = 0  # prefix_cache_retention_interval; None: every state
    scheduler: Scheduler = Scheduler.ASYNC
    mamba_groups: int = 1  # Mamba KV-cache groups: a cached state costs this many blocks

    def __post_init__(self) -> None:
        for flag, value in (("--block-size", self.block_tokens),
                            ("--pool-tokens", self.pool_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{flag} {value!r}: expected a positive integer")
        if self.pool_tokens < self.block_tokens:
            raise ValueError(f"--pool-tokens {self.pool_tokens}: less than one "
                             f"{self.block_tokens}-token block")
        groups = self.mamba_groups
        if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
            raise ValueError(f"--mamba-groups {groups!r}: expected a positive integer")
        if self.components is Components.FULL:
            if self.checkpoint_blocks != 1 or self.retention_tokens != 0 or groups != 1:
                raise ValueError("--checkpoint-blocks/--retention/--mamba-groups: need "
                                 "--components full+mamba")
            if self.scheduler is not Scheduler.ASYNC:
                raise ValueError("--scheduler: a --components full replay runs one step per "
                                 "prompt; the scheduler variant needs full+mamba")
        self.groups()  # the group specs check their own fields

    @property
    def has_state(self) -> bool:
        return self.components is Components.FULL_MAMBA

    @property
    def num_blocks(self) -> int:
        return self.pool_tokens // self.block_tokens + 1

    def groups(self) -> tuple[GroupSpec, ...]:
        attention = FullAttentionSpec(block_size_tokens=self.block_tokens)
        if not self.has_state:
            return (attention,)
        mamba = MambaAlignSpec(block_size_tokens=self.block_tokens,
                               num_prefill_checkpoint_blocks=self.checkpoint_blocks,
                               retention_interval_tokens=self.retention_tokens)
        return (mamba,) * self.mamba_groups + (attention,)

    @property
    def run_name(self) -> str:
        if not self.has_state:
            return f"full@{self.block_tokens}"
        tags = ("+dense" if self.retention_tokens is None else
                f"+retain{self.retention_tokens}" if self.retention_tokens else "")
        tags += "+nockpt" if self.checkpoint_blocks == 0 else ""
        tags += "+sync" if self.scheduler is Scheduler.SYNC else ""
        tags += f"+{self.mamba_groups}groups" if self.mamba_groups > 1 else ""
        return f"hybrid-align@{self.block_tokens}{tags}"
