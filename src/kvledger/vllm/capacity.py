"""Blocks, tokens and concurrency from the available memory, and vLLM's start-up refusals.

Formulas (vllm/v1/core/kv_cache_utils.py, later split into kv_cache_planning.py):
- bytes per block = the largest group's summed per-layer pages (`_get_kv_cache_bytes_per_block`;
  0.13's `get_num_blocks` divides by page then by group size, the same floor);
- num_blocks = available // bytes per block (`get_kv_cache_config_from_groups`), one of them
  the null block the BlockPool holds back; with pipeline stages every worker gets the
  smallest stage's count (`get_kv_cache_configs`, kvledger.vllm.pipeline);
- blocks per request = Σ over groups of cdiv(max_memory_usage_bytes, page) (an attention
  group's tokens are one DCP rank's, kvledger.vllm.context_parallel);
- max concurrency = num_blocks / blocks per request
  (`get_max_concurrency_for_kv_cache_config`, logged "%.2fx");
- GPU KV cache size: the rule set's `logged_tokens` formula.
Refusals: `_check_enough_kv_cache_memory` (one max_model_len request must fit: the needed
bytes are bytes per block × blocks per request, planned against the memory less the null block
in 0.33) and `CompilationConfig.resolve_cudagraph_mode_and_sizes` (with full CUDA graphs, a
hybrid's max_num_seqs must not exceed the blocks); between them, 0.24's refusal of several
groups under DCP (`resolve_kv_cache_block_sizes`).

>>> from kvledger.model.config import load_model
>>> from kvledger.vllm.layout import vllm_layout, VllmDeployment
>>> from kvledger.vllm.rules import RULES
>>> lay = vllm_layout(load_model("qwen3-next-80b-a3b-instruct"),
...                   VllmDeployment(tensor_parallel_size=2), RULES["vllm-0.13"])
>>> c = vllm_capacity(lay, available_bytes=47_878_147_932)
>>> c.num_blocks, c.blocks_per_request, f"{c.max_concurrency:.2f}", c.logged_tokens
(7162, 485, '14.77', 973760)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.errors import DeploymentError
from kvledger.core.units import GiB
from kvledger.vllm.context_parallel import check_groups
from kvledger.vllm.layout import VllmLayout
from kvledger.vllm.rules import LoggedTokens


class KVCacheMemoryError(DeploymentError):
    """vLLM would refuse to start: the message is vLLM's, with kvledger's numbers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmCapacity:
    available_bytes: int
    bytes_per_block: int
    num_blocks: int  # num_gpu_blocks, the null block included
    blocks_per_request: int  # one max_model_len request, all groups
    max_concurrency: float
    logged_tokens: int  # what "GPU KV cache size: N tokens" prints
    max_num_seqs: int
    # Blocks this rank's memory alone holds; more than num_blocks on a pipeline stage whose
    # blocks are narrower than the widest stage's (the count every worker gets).
    own_num_blocks: int = 0

    @property
    def trimmed_blocks(self) -> int:
        """Blocks this rank could hold but leaves unallocated (the smallest stage's count)."""
        return max(self.own_num_blocks - self.num_blocks, 0)

    @property
    def unallocated_bytes(self) -> int:
        """Memory past the last whole block of this rank's own count."""
        return self.available_bytes - (self.num_blocks + self.trimmed_blocks) * self.bytes_per_block

    @property
    def binding(self) -> str:
        """What caps concurrent max_model_len requests (vLLM never logs it)."""
        if self.max_num_seqs < self.max_concurrency:
            return f"--max-num-seqs {self.max_num_seqs}"
        return "KV-cache blocks"


def _gib(n: int) -> str:
    return f"{n / GiB:.2f}"


def estimate_max_model_len(lay: VllmLayout, check_bytes: int) -> int:
    """Largest length whose one request fits (`_estimate_max_model_len_from_groups`)."""
    lo, hi, best = 1, lay.max_model_len, 0
    while lo <= hi:
        mid = (lo + hi) // 2
        if lay.bytes_per_block * lay.blocks_for_len(mid) <= check_bytes:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def admitted_blocks(lay: VllmLayout, available_bytes: int) -> int:
    """The blocks `available_bytes` hold, once one max_model_len request is admitted
    (`_check_enough_kv_cache_memory`); KVCacheMemoryError otherwise."""
    if available_bytes <= 0:
        raise KVCacheMemoryError(
            f"No available memory for the cache blocks ({_gib(available_bytes)} GiB). Try "
            "increasing --gpu-memory-utilization")
    per_block = lay.bytes_per_block
    per_request = lay.blocks_per_request()
    check = available_bytes - (per_block if lay.rules.check_reserves_null_block else 0)
    needed = per_block * per_request
    if needed > check:
        estimate = estimate_max_model_len(lay, check)
        hint = (f" Based on the available memory, the estimated maximum model length is "
                f"{estimate}." if estimate else "")
        raise KVCacheMemoryError(
            f"--max-model-len {lay.max_model_len}: to serve at least one request with the "
            f"model's max seq len ({lay.max_model_len}), {_gib(needed)} GiB KV cache is needed, "
            f"which is larger than the available KV cache memory ({_gib(check)} GiB).{hint}")
    return available_bytes // per_block


def vllm_capacity(lay: VllmLayout, available_bytes: int, *,
                  num_blocks: int | None = None) -> VllmCapacity:
    """Size the block pool; raise KVCacheMemoryError where vLLM refuses to start.

    `num_blocks`: the count every pipeline stage's worker gets (the smallest stage's);
    None: the rank's own."""
    own = admitted_blocks(lay, available_bytes)
    num_blocks = own if num_blocks is None else num_blocks
    if lay.rules.context_parallel is not None:
        check_groups(len(lay.groups), lay.deployment, lay.rules.context_parallel)
    per_block, per_request = lay.bytes_per_block, lay.blocks_per_request()
    concurrency = num_blocks / per_request
    if lay.rules.logged_tokens is LoggedTokens.BLOCKS_PER_GROUP:
        tokens = num_blocks // len(lay.groups) * lay.block_tokens
    else:
        tokens = int(concurrency * lay.max_model_len)
    dep = lay.deployment
    assert dep.max_num_seqs is not None
    if lay.mamba is not None and not dep.enforce_eager and dep.max_num_seqs > num_blocks:
        raise KVCacheMemoryError(
            f"--max-num-seqs {dep.max_num_seqs}: max_num_seqs ({dep.max_num_seqs}) exceeds "
            f"available Mamba cache blocks ({num_blocks}); with full CUDA graphs each decode "
            "request needs one. Lower --max-num-seqs, or pass --enforce-eager")
    return VllmCapacity(available_bytes=available_bytes, bytes_per_block=per_block,
                        num_blocks=num_blocks, blocks_per_request=per_request,
                        max_concurrency=concurrency, logged_tokens=tokens,
                        max_num_seqs=dep.max_num_seqs, own_num_blocks=own)
