"""A logged vLLM version picks the rule set read from that release's source
(kvledger.logs.detect.vllm_rules_for; the releases each rule set covers: VllmRules.releases)."""

from __future__ import annotations

import pytest

from kvledger.logs.check import check_log
from kvledger.logs.detect import vllm_rules_for
from kvledger.logs.lines import LogError


@pytest.mark.parametrize("version,rules,noted", [
    ("0.11.2", "vllm-0.13", False), ("0.13.0", "vllm-0.13", False),
    ("0.18.1", "vllm-0.24", True),  # between read ranges: the next rule set up, said
    ("0.24.0", "vllm-0.24", False), ("0.26.0", "vllm-0.24", False),
    ("0.27.1", "vllm-0.27", False), ("0.29.0", "vllm-0.27", False),
    ("0.32.0", "vllm-0.32", False), ("0.33.0", "vllm-0.33", False),
    ("0.35.0", "vllm-0.33", True),  # after the last: the last, said
])
def test_version_picks_its_rule_set(version, rules, noted):
    name, note = vllm_rules_for(version)
    assert name == rules and (note is not None) == noted


def test_pre_v1_releases_are_refused():
    with pytest.raises(LogError, match="before 0.10"):
        vllm_rules_for("0.8.5")


def test_a_033_log_is_checked_with_033_rules():
    # vLLM 0.33's planning on a pretended H200 (tests/data/oracle, row
    # qwen3-next-80b-a3b-instruct|H200|auto|pc=None|spec=0|tp=2 at 47,878,147,932 B):
    # 6,764 blocks, 465 per request (3 state groups × (2 + 1 prefill checkpoint) + 456)
    log = ("(EngineCore pid=1) INFO [core.py:1] Initializing a V1 LLM engine (v0.33.0) with "
           "config: model='Qwen/Qwen3-Next-80B-A3B-Instruct', tensor_parallel_size=2\n"
           "(EngineCore pid=1) INFO [gpu_worker.py:1] Available KV cache memory: 44.59 GiB\n"
           "(EngineCore pid=1) INFO [kv_cache_utils.py:1] GPU KV cache size: 3,813,208 tokens\n")
    r = check_log(log, model="qwen3-next-80b-a3b-instruct", gpu="H200")
    assert (r.version, r.rules) == ("0.33.0", "vllm-0.33")
    assert not r.differs
    assert dict(r.derived)["blocks per max_model_len request"] == "465"
