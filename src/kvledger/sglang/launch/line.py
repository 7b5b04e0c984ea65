"""The SGLang launch command that reproduces a deployment, to paste on the servers.

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

from kvledger.sglang.deploy import EAGLE_FAMILY, Deployment
from kvledger.sglang.launch.flags import FLAGS

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


def _eagle_chain(dep: Deployment) -> list[str]:
    """An EAGLE-family chain as SGLang's handler takes it (arg_groups/speculative_hook.py,
    `kvledger.sglang.launch.speculative`): topk unset, nothing (it picks (3, 1, 4) itself and
    refuses draft tokens without steps); topk 1, the steps alone (draft tokens are steps + 1);
    topk > 1, the steps and the draft tokens, which it cannot derive (topk itself is its own
    field)."""
    topk = dep.speculative_eagle_topk
    if topk is None:
        return []
    if topk == 1:
        steps = dep.speculative_num_steps or dep.speculative_num_draft_tokens - 1
        return ["--speculative-num-steps", _value(steps)]
    assert dep.speculative_num_steps is not None, "Deployment requires steps with topk > 1"
    return ["--speculative-num-steps", _value(dep.speculative_num_steps),
            "--speculative-num-draft-tokens", _value(dep.speculative_num_draft_tokens)]


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
        if field.name == "speculative_num_steps":
            continue  # written with the draft tokens, below
        if (field.name == "speculative_num_draft_tokens"
                and dep.speculative_algorithm in EAGLE_FAMILY):
            words += _eagle_chain(dep)
            continue
        flag = _SPELLING.get(field.name)
        assert flag is not None, f"no SGLang flag writes Deployment.{field.name}"
        words += [flag] if value is True else [flag, _value(value)]
    line = shlex.join(words)
    return f"{line} {_MULTI_NODE.format(nodes=nodes)}" if nodes > 1 else line
