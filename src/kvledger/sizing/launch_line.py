"""The SGLang (and vLLM) launch command that reproduces a deployment, to paste on the servers.

`vllm_command` writes `vllm serve MODEL …` with the flags of a VllmDeployment that differ
from vLLM's defaults, in vLLM's spellings (`VllmDeployment` field metadata); it parses back
with `kvledger.vllm.flags.parse_vllm_command`, which the tests check.

Only flags that differ from SGLang's defaults are written, in their spelling every release
accepts (`kvledger.sglang.launch.flags`); the command parses back to the same deployment
(`kvledger.sglang.launch.parse_flags`), which the tests check. A multi-node deployment adds
SGLang's --nnodes/--node-rank/--dist-init-addr: run the same line on every node with its
own --node-rank.

>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> sglang_command("zai-org/GLM-5.3-Flash", Deployment(tp_size=8, dp_size=8,
...                enable_dp_attention=True, kv_cache_dtype=KVDtype.FP8_E4M3))
'python -m sglang.launch_server --model-path zai-org/GLM-5.3-Flash --tp-size 8 --dp-size 8 --enable-dp-attention --kv-cache-dtype fp8_e4m3'
"""

from __future__ import annotations

import shlex
from dataclasses import fields
from enum import Enum

from kvledger.sglang.deploy import Deployment
from kvledger.sglang.launch.flags import FLAGS
from kvledger.vllm.deploy import FIELD_FLAGS as VLLM_FLAGS
from kvledger.vllm.deploy import VllmDeployment

# Deployment field → the spelling every release's parser registers. The DSA backend pair is
# written as the two --dsa-* flags (0.5.21 and 0.5.23 register only those).
_SPELLING = {f.key: f.spellings[0] for f in FLAGS if f.key in {x.name for x in fields(Deployment)}}
_DEFAULTS = Deployment()
_MULTI_NODE = "--nnodes {nodes} --node-rank 0 --dist-init-addr HEAD_NODE_IP:5000"


def _value(value: object) -> str:
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def sglang_command(model_ref: str, dep: Deployment, *, nodes: int = 1) -> str:
    """`python -m sglang.launch_server …` for `dep`: the flags that differ from defaults."""
    words = ["python", "-m", "sglang.launch_server", "--model-path", model_ref]
    for field in fields(Deployment):
        value = getattr(dep, field.name)
        if value == getattr(_DEFAULTS, field.name):
            continue
        if field.name == "dsa_backend":
            words += ["--dsa-prefill-backend", _value(value), "--dsa-decode-backend",
                      _value(value)]
            continue
        if field.name == "speculative_num_draft_tokens" and dep.speculative_algorithm is None:
            continue
        flag = _SPELLING.get(field.name)
        assert flag is not None, f"no SGLang flag writes Deployment.{field.name}"
        words += [flag] if value is True else [flag, _value(value)]
    line = shlex.join(words)
    return f"{line} {_MULTI_NODE.format(nodes=nodes)}" if nodes > 1 else line


_VLLM_DEFAULTS = VllmDeployment()
# Written as vLLM's parser spells them; speculative decoding is a JSON --speculative-config,
# which a sweep point never sets.
_VLLM_WRITABLE = ("tensor_parallel_size", "data_parallel_size", "gpu_memory_utilization",
                  "max_model_len", "max_num_seqs", "kv_cache_dtype", "mamba_cache_dtype",
                  "mamba_ssm_cache_dtype", "block_size", "enable_prefix_caching",
                  "enforce_eager")


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
    unwritten = [n for n in ("kv_cache_memory_bytes", "mamba_cache_mode",
                             "num_speculative_tokens")
                 if getattr(dep, n) != getattr(_VLLM_DEFAULTS, n)]
    assert not unwritten, f"vllm_command does not write VllmDeployment.{unwritten}"
    return shlex.join(words)
