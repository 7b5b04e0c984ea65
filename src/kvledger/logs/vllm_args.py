"""The deployment a vLLM log states: its `non-default args: {…}` line or a `vllm serve` line.

The args line is a Python dict literal (vllm/entrypoints/utils.py `log_non_default_args`);
its keys are EngineArgs field names. Keys that change memory map onto VllmDeployment; the
model comes from `model` / `model_tag`.

>>> d, model, ignored, clipped = vllm_deployment_from_args(
...     "{'model': 'x', 'tensor_parallel_size': 2, 'max_model_len': 8192, 'host': '0.0.0.0'}")
>>> d.tensor_parallel_size, d.max_model_len, model, ignored
(2, 8192, 'x', ('host',))
"""

from __future__ import annotations

import ast

from kvledger.logs.clipped import dict_values
from kvledger.logs.lines import LogError
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.rules import MambaCacheMode

_FIELDS = {"tensor_parallel_size", "data_parallel_size", "gpu_memory_utilization",
           "kv_cache_memory_bytes", "max_model_len", "max_num_seqs", "kv_cache_dtype",
           "mamba_cache_dtype", "mamba_ssm_cache_dtype", "block_size", "enable_prefix_caching",
           "enforce_eager", "pipeline_parallel_size", "decode_context_parallel_size"}
_REFUSED = {"cpu_offload_gb": 0, "num_gpu_blocks_override": None}


def vllm_deployment_from_args(text: str
                              ) -> tuple[VllmDeployment, str | None, tuple[str, ...], bool]:
    """(deployment, model, ignored keys, clipped?): a dict cut by the paste gives the keys
    it still holds (kvledger.logs.clipped)."""
    clipped = False
    try:
        args = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        args, _, clipped = dict_values(text)  # a paste clipped mid-dict: the keys there
        if not args:
            raise LogError("the non-default args hold no 'key': value kvledger can read"
                           ) from None
    if not isinstance(args, dict):
        raise LogError("the non-default args are not a dict")
    values: dict[str, object] = {}
    ignored: list[str] = []
    for key, value in args.items():
        if key in _FIELDS:
            values[key] = value
        elif key == "mamba_cache_mode":
            try:
                values[key] = MambaCacheMode(value)
            except ValueError:
                raise LogError(f"mamba_cache_mode {value!r}: not modelled") from None
        elif key == "speculative_config" and isinstance(value, dict):
            values["num_speculative_tokens"] = value.get("num_speculative_tokens", 0)
        elif key in _REFUSED:
            if value != _REFUSED[key]:
                raise LogError(f"{key}={value!r}: not modelled by kvledger's vLLM rules")
        elif key not in ("model", "model_tag"):
            ignored.append(key)
    model = args.get("model") or args.get("model_tag")
    try:
        return VllmDeployment(**values), model, tuple(ignored), clipped
    except (TypeError, ValueError) as exc:
        raise LogError(f"the non-default args: {exc}") from None
