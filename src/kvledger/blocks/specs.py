"""The KV-cache groups' rule objects: what each group caches and how it finds a hit.

vLLM gives every group a spec (`vllm/v1/kv_cache_interface.py`: `FullAttentionSpec`,
`MambaSpec`) and builds one manager per spec (`single_type_kv_cache_manager.py`:
`spec_manager_map`). Here a spec is a frozen dataclass with the fields the cache reads;
`kvledger.blocks.coordinator` maps each spec type to its manager.

`MambaAlignSpec` is `MambaSpec` with ``mamba_cache_mode="align"`` (what
`MambaModelConfig.verify_and_update_config` sets when prefix caching is on):

- ``num_prefill_checkpoint_blocks`` 1: on a prompt's last chunk the kernel also exports the
  state at ``c = ⌊(L−1)/B⌋·B`` into its own block (`get_mamba_prefill_checkpoint_position`);
  0 for a backend that cannot, and then the scheduler stops a chunk at ``c`` instead;
- ``retention_interval_tokens`` (vLLM's ``prefix_cache_retention_interval``): which state
  blocks get a hash (`MambaManager.reachable_block_mask`): 0, the 0.33 default, only those
  ending on the prompt's replay boundary ``c`` or the shared-prefix junction; ``R > 0`` also
  every ``R`` tokens; None every state block the request holds ("dense").

>>> MambaAlignSpec(block_size_tokens=64).reachable(128, boundaries={128}), \\
...     MambaAlignSpec(block_size_tokens=64, retention_interval_tokens=None).reachable(64, set())
(True, True)
>>> MambaAlignSpec(block_size_tokens=64, retention_interval_tokens=256).reachable(512, set())
True
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass


def _positive(flag: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{flag} {value!r}: expected a positive integer")


@dataclass(frozen=True, slots=True, kw_only=True)
class FullAttentionSpec:
    block_size_tokens: int  # tokens per block (vLLM's block_size, = hash block size here)

    def __post_init__(self) -> None:
        _positive("--block-size", self.block_size_tokens)


@dataclass(frozen=True, slots=True, kw_only=True)
class MambaAlignSpec:
    block_size_tokens: int  # one block holds one state: "the state after (p+1)·B tokens"
    num_prefill_checkpoint_blocks: int = 1  # 0 or 1 (the flashkda backend publishes 1)
    retention_interval_tokens: int | None = 0  # vLLM 0.33's CacheConfig default

    def __post_init__(self) -> None:
        _positive("--block-size", self.block_size_tokens)
        if self.num_prefill_checkpoint_blocks not in (0, 1):
            raise ValueError(f"--checkpoint-blocks {self.num_prefill_checkpoint_blocks!r}: "
                             "expected 0 or 1")
        r = self.retention_interval_tokens
        if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r < 0
                              or r % self.block_size_tokens):
            raise ValueError(f"--retention {r!r}: expected 0, dense, or a positive multiple "
                             f"of the {self.block_size_tokens}-token block")

    def reachable(self, end_tokens: int, boundaries: AbstractSet[int]) -> bool:
        """Whether the state after ``end_tokens`` may be cached (a block-aligned length)."""
        r = self.retention_interval_tokens
        if r is None:
            return True
        return end_tokens in boundaries or (r > 0 and end_tokens % r == 0)


GroupSpec = FullAttentionSpec | MambaAlignSpec
