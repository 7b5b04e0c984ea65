"""VllmDeployment: the vLLM server flags that change memory, frozen and validated.

Field names follow vLLM's EngineArgs (vllm/engine/arg_utils.py) and CacheConfig
(vllm/config/cache.py); each field carries the flag vLLM spells in `metadata["flag"]`, and a
bad value raises DeploymentError naming it. `None` means "vLLM's default", which the rule set
and the model decide (`kvledger.vllm.layers`).

>>> VllmDeployment(tensor_parallel_size=2).tensor_parallel_size
2
>>> VllmDeployment(gpu_memory_utilization=1.5)
Traceback (most recent call last):
...
kvledger.core.errors.DeploymentError: --gpu-memory-utilization 1.5: expected a number in (0, 1]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from kvledger.core.errors import DeploymentError
from kvledger.core.limits import MAX_COUNT, MAX_GIB, MAX_GPUS, show_value
from kvledger.vllm.rules import MambaCacheMode

# --kv-cache-dtype choices (CacheDType in vllm/config/cache.py) and their bytes per element.
KV_CACHE_DTYPES = {"auto": None, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
                   "fp8_inc": 1}
# --mamba-ssm-cache-dtype / --mamba-cache-dtype choices (MambaDType) and their bytes.
MAMBA_DTYPES = {"auto": None, "float32": 4, "bfloat16": 2, "float16": 2}


_MAXIMA = {"kv_cache_memory_bytes": int(MAX_GIB) << 30}  # the rest: MAX_COUNT


def _flag(default: object, flag: str):
    return field(default=default, metadata={"flag": flag})


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmDeployment:
    tensor_parallel_size: int = _flag(1, "--tensor-parallel-size")
    data_parallel_size: int = _flag(1, "--data-parallel-size")
    # Stages of decoder layers (kvledger.vllm.pipeline); each its own GPUs.
    pipeline_parallel_size: int = _flag(1, "--pipeline-parallel-size")
    # TP ranks that shard each request's tokens (kvledger.vllm.context_parallel); no GPUs of
    # its own.
    decode_context_parallel_size: int = _flag(1, "--decode-context-parallel-size")
    # Ranks that split a prefill; GPUs of their own beside TP.
    prefill_context_parallel_size: int = _flag(1, "--prefill-context-parallel-size")
    gpu_memory_utilization: float | None = _flag(None, "--gpu-memory-utilization")
    kv_cache_memory_bytes: int | None = _flag(None, "--kv-cache-memory-bytes")
    max_model_len: int | None = _flag(None, "--max-model-len")
    max_num_seqs: int | None = _flag(None, "--max-num-seqs")
    kv_cache_dtype: str = _flag("auto", "--kv-cache-dtype")
    mamba_cache_dtype: str = _flag("auto", "--mamba-cache-dtype")
    mamba_ssm_cache_dtype: str = _flag("auto", "--mamba-ssm-cache-dtype")
    block_size: int | None = _flag(None, "--block-size")
    enable_prefix_caching: bool | None = _flag(None, "--enable-prefix-caching")
    mamba_cache_mode: MambaCacheMode | None = _flag(None, "--mamba-cache-mode")
    num_speculative_tokens: int = _flag(0, "--speculative-config num_speculative_tokens")
    enforce_eager: bool = _flag(False, "--enforce-eager")

    def __post_init__(self) -> None:
        for name in ("tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size",
                     "decode_context_parallel_size", "prefill_context_parallel_size"):
            _positive(self, name, getattr(self, name), MAX_GPUS)
        for name in ("max_model_len", "max_num_seqs", "block_size", "kv_cache_memory_bytes"):
            if getattr(self, name) is not None:
                _positive(self, name, getattr(self, name), _MAXIMA.get(name, MAX_COUNT))
        util = self.gpu_memory_utilization
        if util is not None and not (isinstance(util, int | float) and not isinstance(util, bool)
                                     and math.isfinite(util) and 0 < util <= 1):
            raise _fail("gpu_memory_utilization", util, "expected a number in (0, 1]")
        if self.kv_cache_dtype not in KV_CACHE_DTYPES:
            raise _fail("kv_cache_dtype", self.kv_cache_dtype,
                        f"expected one of {', '.join(KV_CACHE_DTYPES)}")
        for name in ("mamba_cache_dtype", "mamba_ssm_cache_dtype"):
            if getattr(self, name) not in MAMBA_DTYPES:
                raise _fail(name, getattr(self, name), f"expected one of {', '.join(MAMBA_DTYPES)}")
        if not (isinstance(self.num_speculative_tokens, int)
                and 0 <= self.num_speculative_tokens <= MAX_COUNT):
            raise _fail("num_speculative_tokens", self.num_speculative_tokens,
                        "expected a non-negative integer")
        if self.mamba_cache_mode is not None and not isinstance(self.mamba_cache_mode,
                                                                MambaCacheMode):
            raise _fail("mamba_cache_mode", self.mamba_cache_mode,
                        f"expected one of {', '.join(m.value for m in MambaCacheMode)}")
        if self.mamba_cache_mode is MambaCacheMode.ALIGN and self.enable_prefix_caching is False:
            raise _fail("mamba_cache_mode", "align",
                        "needs prefix caching (drop --no-enable-prefix-caching)")


    @property
    def gpus_per_engine(self) -> int:
        """GPUs one DP engine spans: TP × PCP × PP ranks (`ParallelConfig.world_size`,
        vllm/config/parallel.py); DCP reuses TP ranks."""
        return (self.tensor_parallel_size * self.prefill_context_parallel_size
                * self.pipeline_parallel_size)


FIELD_FLAGS: dict[str, str] = {f.name: f.metadata["flag"] for f in fields(VllmDeployment)}


def _fail(name: str, value: object, expected: str) -> DeploymentError:
    shown = value if isinstance(value, str) else show_value(value)
    return DeploymentError(f"{FIELD_FLAGS[name]} {shown}: {expected}")


def _positive(dep: VllmDeployment, name: str, value: object, high: int) -> None:
    # Beyond `high` (kvledger.core.limits) a value describes no machine: 2**64 DP engines,
    # a 2**64-token block.
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        raise _fail(name, value, "expected a positive integer")
    if value > high:
        raise _fail(name, value, f"expected at most {high:,}")
