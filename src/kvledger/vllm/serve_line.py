"""The vLLM launch command that reproduces a deployment: `vllm serve MODEL …`.

Only the flags of a VllmDeployment that differ from vLLM's defaults are written, in vLLM's
spellings (`VllmDeployment` field metadata); the command parses back with
`kvledger.vllm.flags.parse_vllm_command`, which the tests check.
"""

from __future__ import annotations

import shlex

from kvledger.vllm.deploy import FIELD_FLAGS as VLLM_FLAGS
from kvledger.vllm.deploy import VllmDeployment


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


_VLLM_DEFAULTS = VllmDeployment()
# Written as vLLM's parser spells them; speculative decoding is a JSON --speculative-config,
# which a sweep point never sets.
_VLLM_WRITABLE = ("tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size",
                  "decode_context_parallel_size", "prefill_context_parallel_size",
                  "gpu_memory_utilization",
                  "max_model_len", "max_num_seqs", "kv_cache_dtype", "mamba_cache_dtype",
                  "mamba_ssm_cache_dtype", "block_size", "enable_prefix_caching",
                  "enforce_eager", "kv_cache_memory_bytes")


def vllm_command(model_ref: str, dep: VllmDeployment) -> str:
    """`vllm serve MODEL …` for `dep`: the flags that differ from vLLM's defaults.

    >>> vllm_command("Qwen/Qwen3-Next-80B-A3B-Instruct",
    ...              VllmDeployment(tensor_parallel_size=2, data_parallel_size=4,
    ...                             max_model_len=32768))
    'vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 2 --data-parallel-size 4 --max-model-len 32768'
    """
    words = ["vllm", "serve", model_ref]
    for name in _VLLM_WRITABLE:
        value = getattr(dep, name)
        if value == getattr(_VLLM_DEFAULTS, name):
            continue
        flag = VLLM_FLAGS[name]
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + flag.removeprefix("--"))
        else:
            words += [flag, _value(value)]
    unwritten = [n for n in ("mamba_cache_mode", "num_speculative_tokens")
                 if getattr(dep, n) != getattr(_VLLM_DEFAULTS, n)]
    assert not unwritten, f"vllm_command does not write VllmDeployment.{unwritten}"
    return shlex.join(words)
