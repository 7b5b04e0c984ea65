"""SGLang's default attention backend and the page it forces (kvledger.sglang.attention).

Each case is a branch of sglang 0.5.21/0.5.23 python/sglang/srt/arg_groups/:
model_override_base.py `get_default_attn_backend`, the model_overrides/*.py providers and
overrides.py `_mla_backend_page_constraints`. The B200 pages also match what SGLang's own
resolution answered in the oracle recordings (tests/oracle/test_sglang_differential.py).
"""

from __future__ import annotations

import pytest

from kvledger.core.gpus import get_gpu
from kvledger.model.config import load_model
from kvledger.sglang.attention import default_attention
from kvledger.sglang.deploy import Deployment as D
from kvledger.sglang.deploy import DisaggMode, MambaStrategy, SpecAlgorithm
from kvledger.sglang.plan import make_plan
from kvledger.sglang.rules import RULES

R21, R23 = RULES["sglang-0.5.21"], RULES["sglang-0.5.23"]
EAGLE = {"speculative_algorithm": SpecAlgorithm.EAGLE, "speculative_num_draft_tokens": 4}


def pick(model: str, dep: D, gpu: str = "B200", rules=R21) -> tuple[str, int]:
    chosen = default_attention(load_model(model), dep, get_gpu(gpu), rules)
    return chosen.backend.value, chosen.page_tokens


@pytest.mark.parametrize(("dep", "want"), [
    (D(), ("trtllm_mha", 64)),  # SM100, no speculation: trtllm_mha; page 1 is refused → 64
    (D(page_size=32), ("trtllm_mha", 32)),  # 16/32/64/128 are kept
    (D(page_size=8), ("trtllm_mha", 64)),
    (D(**EAGLE), ("flashinfer", 1)),  # EAGLE with topk unset: not trtllm_mha
    (D(**EAGLE, speculative_eagle_topk=1), ("trtllm_mha", 64)),
    # topk 1 with a page > 1 fails is_no_spec_infer_or_topk_one
    (D(**EAGLE, speculative_eagle_topk=1, page_size=16), ("flashinfer", 16)),
    (D(**EAGLE, speculative_eagle_topk=2, speculative_num_steps=3), ("flashinfer", 1)),
])
def test_mha_on_b200(dep, want):
    assert pick("llama-3.1-8b", dep) == want


def test_mha_elsewhere_keeps_the_page():
    assert pick("llama-3.1-8b", D(), "H100") == ("fa3", 1)  # Hopper: fa3
    assert pick("qwen3-32b", D(**EAGLE), "H200") == ("fa3", 1)  # topk unset still counts
    assert pick("llama-3.1-8b", D(), "A100 80GB") == ("flashinfer", 1)
    assert pick("llama-3.1-8b", D(), "RTX PRO 6000") == ("flashinfer", 1)  # SM120 is not SM100
    assert pick("llama-3.1-8b", D(), "B300") == ("trtllm_mha", 64)  # SM103: is_sm100
    assert default_attention(load_model("llama-3.1-8b"), D(), get_gpu("MI300X"), R21) is None
    assert default_attention(load_model("llama-3.1-8b"), D(), None, R21) is None


def test_dflash_counts_as_a_given_topk_from_0_5_23():
    """0.5.23 `_forces_eagle_topk_one`: DFLASH's topk is forced to 1 after this default."""
    dflash = D(speculative_algorithm=SpecAlgorithm.DFLASH, speculative_num_draft_tokens=16)
    assert pick("llama-3.1-8b", dflash, rules=R21) == ("flashinfer", 1)
    assert pick("llama-3.1-8b", dflash, rules=R23) == ("trtllm_mha", 64)


def test_mla_models():
    assert pick("deepseek-v3", D()) == ("trtllm_mla", 64)  # deepseek_v2.py on SM100
    assert pick("deepseek-v3", D(page_size=32)) == ("trtllm_mla", 32)  # 32 and 64 are kept
    assert pick("deepseek-v3", D(), "H200") == ("fa3", 1)
    assert pick("kimi-linear-48b-a3b-instruct", D()) == ("flashinfer", 1)  # generic MLA, SM100
    assert pick("kimi-linear-48b-a3b-instruct", D(), "A100 80GB") == ("triton", 1)
    # DSA models: the `dsa` backend, paged by the rule set (kvledger.sglang.resolve)
    assert default_attention(load_model("deepseek-v3.2"), D(), get_gpu("B200"), R21) is None


@pytest.mark.parametrize("model", ["qwen3-next-80b-a3b-instruct", "qwen3.5-35b-a3b"])
def test_qwen3_5_hybrid_override(model):
    """`_qwen3_5_hybrid_overrides`: triton, page 1 when the radix cache is on, the strategy (as
    given: auto is resolved later) is not extra_buffer and nothing speculates; the page is
    declared, so it replaces --page-size."""
    assert pick(model, D()) == ("triton", 1)
    assert pick(model, D(page_size=64)) == ("triton", 1)
    assert pick(model, D(disable_radix_cache=True)) == ("trtllm_mha", 64)
    assert pick(model, D(mamba_strategy=MambaStrategy.EXTRA_BUFFER)) == ("trtllm_mha", 64)
    assert pick(model, D(**EAGLE, speculative_eagle_topk=1)) == ("trtllm_mha", 64)
    assert pick(model, D(**EAGLE)) == ("triton", 1)  # generic pick is flashinfer: triton
    assert pick(model, D(), "H200") == ("fa3", 1)  # the override is SM100-only


def test_nemotron_h_override():
    model = "nemotron-h-56b-base-8k"
    assert pick(model, D()) == ("trtllm_mha", 64)
    assert pick(model, D(**EAGLE)) == ("trtllm_mha", 64)  # topk unset is accepted here
    assert pick(model, D(**EAGLE, speculative_eagle_topk=4, speculative_num_steps=3)) == ("triton", 1)
    assert pick(model, D(**EAGLE), "RTX PRO 6000") == ("triton", 1)  # Blackwell, not SM100
    assert pick(model, D(), "RTX PRO 6000") == ("flashinfer", 1)  # no override: generic


def test_the_plan_pages_a_b200_decode_server_at_64():
    """A decode server's radix cache is off before the Qwen3.5 override reads it (recording:
    0.5.21|qwen3.5-35b-a3b|B200|auto|tp=8|dp=1|spec=0|radix=off|decode has page 64)."""
    dep = D(tp_size=8, disaggregation_mode=DisaggMode.DECODE)
    plan = make_plan("qwen3.5-35b-a3b", dep, gpu="B200")
    assert plan.page_tokens == 64 and plan.capacity.max_total_tokens % 64 == 0
    assert "page 1 → 64: SGLang's default attention backend here is trtllm_mha" in " ".join(
        plan.notes)
    assert make_plan("qwen3.5-35b-a3b", D(tp_size=8), gpu="B200").page_tokens == 1
