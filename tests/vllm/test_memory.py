"""vLLM's KV memory (`Worker.determine_available_memory`): its GiB flags at the boundary."""

from __future__ import annotations

import pytest

from kvledger.core.units import GiB
from kvledger.vllm.memory import MemorySource, kv_memory
from kvledger.vllm.rules import get_vllm_rules


def test_logged_available_memory_is_used_as_is():
    m = kv_memory(available_gib=44.59)
    assert m.source is MemorySource.LOGGED and m.available_bytes == int(44.59 * GiB)


@pytest.mark.parametrize("flag, kwargs", [
    ("--available-gib", {"available_gib": 1e300}),
    ("--available-gib", {"available_gib": 0.0}),
    ("--available-gib", {"available_gib": float("nan")}),
    ("--activation-gib", {"activation_gib": 1e300}),
    ("--non-torch-gib", {"non_torch_gib": -1.0}),
    ("--cudagraph-gib", {"cudagraph_gib": float("inf")}),
])
def test_absurd_gib_flags_name_the_flag(flag, kwargs):
    # 1e300 GiB overflowed a float to infinity (a traceback) before the limits table bounded it
    profile = {"total_bytes": 141 * GiB, "utilization": 0.92,
               "rules": get_vllm_rules("vllm-0.33")}
    with pytest.raises(ValueError, match=rf"^{flag} .*: expected a finite number in "):
        kv_memory(**({} if "available_gib" in kwargs else profile), **kwargs)


def test_profiled_memory_subtracts_what_profiling_measures():
    m = kv_memory(total_bytes=100 * GiB, utilization=0.92, rules=get_vllm_rules("vllm-0.33"),
                  weights_bytes=10 * GiB, activation_gib=2, non_torch_gib=0.5,
                  cudagraph_gib=0.25)
    # requested = ceil(100 GiB × 0.92) (v1/worker/utils.request_memory in 0.33)
    requested = -(-100 * GiB * 92 // 100)
    assert m.requested_bytes == requested
    assert m.available_bytes == requested - 10 * GiB - 2 * GiB - GiB // 2 - GiB // 4
