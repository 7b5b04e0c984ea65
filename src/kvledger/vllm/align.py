"""Hybrid block alignment: vLLM raises the attention block until a page covers a Mamba state.

`Platform._align_hybrid_block_size` (vllm/platforms/interface.py; earlier
`HybridAttentionMambaModelConfig.verify_and_update_config` in
model_executor/models/config.py):

    attn_block = granule × cdiv(mamba_page, granule × attn_bytes_per_token)
    attn_block = round_up(attn_block, lcm of every attention backend's smallest kernel block)
    block      = max(block_size, attn_block)
    mamba page padded up to block × attn_bytes_per_token ("Padding mamba page size by …%")

The granule is the rule set's (`VllmRules.granule_tokens`): the kernel block or the user's
--block-size, raised for MLA and lcm'd with a prefill checkpoint alignment in align mode. From
v0.32.0 the block is then a multiple of every non-SSM backend's smallest kernel block too
(`backend_block_alignment`; GLM-5.3-Flash on SM120: its indexer's 256 tokens).

Worked example, Qwen3-Next-80B at TP 2 (1 KV head × 256 × 2 (K,V) × 2 B = 1,024 B per token;
GDN state (3, 4096) + (16, 128, 128) bf16 = 548,864 B), granule 16:

>>> a = align_block(attn_bytes_per_token=1024, mamba_page_bytes=548_864, granule_tokens=16,
...                 block_size=16)
>>> a.block_tokens, a.attn_page_bytes, a.mamba_padding_bytes, f"{a.padding_pct:.2f}"
(544, 557056, 8192, '1.49')
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.units import cdiv, round_up


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockAlignment:
    granule_tokens: int
    requested_block_tokens: int  # --block-size, or the platform default
    block_tokens: int  # after alignment
    attn_page_bytes: int  # block_tokens × bytes per token
    mamba_real_page_bytes: int

    @property
    def raised(self) -> bool:
        """Whether vLLM logs "Setting attention block size to N tokens"."""
        return self.block_tokens > self.requested_block_tokens

    @property
    def mamba_padding_bytes(self) -> int:
        return self.attn_page_bytes - self.mamba_real_page_bytes

    @property
    def padding_pct(self) -> float:
        """The percentage vLLM logs as "Padding mamba page size by X%"."""
        return 100 * self.mamba_padding_bytes / self.mamba_real_page_bytes


def align_block(*, attn_bytes_per_token: int, mamba_page_bytes: int, granule_tokens: int,
                block_size: int, backend_multiple_tokens: int = 1) -> BlockAlignment:
    attn_block = granule_tokens * cdiv(mamba_page_bytes, granule_tokens * attn_bytes_per_token)
    attn_block = round_up(attn_block, backend_multiple_tokens)
    block = max(block_size, attn_block)
    page = block * attn_bytes_per_token
    assert page >= mamba_page_bytes, "an attention page must cover a Mamba state"
    return BlockAlignment(granule_tokens=granule_tokens, requested_block_tokens=block_size,
                          block_tokens=block, attn_page_bytes=page,
                          mamba_real_page_bytes=mamba_page_bytes)
