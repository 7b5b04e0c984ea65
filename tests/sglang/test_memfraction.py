"""SGLang's automatic mem_fraction_static and the H100 Llama-3.1-8B boot logs.

Source: arg_groups' `handle_gpu_memory_settings` / `reserve_for_graph_mb` /
`adjust_mem_fraction_for_vlm` (same arithmetic as `ServerArgs._handle_gpu_memory_settings` in
server_args.py); gpu_mem is nvidia-smi's memory.total in MiB. Each expected value is worked out
by hand in its comment. The last term of each reserve is the breakable prefill CUDA graphs a text
model gets on CUDA (kvledger.sglang.cudagraphs): 8 MiB per captured size of
`generate_prefill_cuda_graph_batch_sizes(chunked)`, 50 sizes up to 4,096 tokens, 58 up to 8,192,
74 up to 16,384.
"""

from __future__ import annotations

import pytest

from kvledger.core.units import GiB, MiB
from kvledger.sglang.memfraction import CUDA_CONTEXT_BYTES, auto_mem_fraction_static
from kvledger.sglang.plan import make_plan


@pytest.mark.parametrize("gpu_mib, layout, reserved, fraction", [
    # H100 (81,559 MiB), tp 1: 512 + 8,192·1.5 + 1/8·1,024 + 256·2 + 58·8 = 13,904 → 0.830
    (81_559, dict(tp=1), 13_904, 0.83),
    # H200 (143,771), tp 4: 512 + 12,288 + 512 + 512·2 + 464 = 14,800 → 0.897
    (143_771, dict(tp=4), 14_800, 0.897),
    # H200, tp 8 dp 8 DP attention: 13,824 + 1,024 + 512·8·3 + 512·8·1.5 + 464 = 33,744 → 0.765
    (143_771, dict(tp=8, dp=8, dp_attention=True), 33_744, 0.765),
    # RTX 4090 (24,564), tp 1: 512 + 4,096·1.5 + 128 + 48·2 + 50·8 = 7,280 → 0.704
    (24_564, dict(tp=1), 7_280, 0.704),
    # A100 40GB (40,960), tp 1: 512 + 6,144 + 128 + 32·2 + 400 = 7,248 (no 10 GiB floor) → 0.823
    (40_960, dict(tp=1), 7_248, 0.823),
    # B200 (183,359), tp 8: 512 + 16,384·1.5 + 1,024 + 512·2 + 74·8 = 27,728 → 0.849
    (183_359, dict(tp=8), 27_728, 0.849),
])
def test_auto_fraction_per_gpu_and_layout(gpu_mib, layout, reserved, fraction):
    auto = auto_mem_fraction_static(gpu_mib, **layout)
    assert auto.reserved_mib == reserved and auto.fraction == fraction


def test_multimodal_fraction_takes_the_vit_factor():
    # GLM-5.3-Flash's vision tower: 24 layers × 1024 hidden = the ViT-L/14 baseline → factor
    # 0.95 × clamp(1 − 0.1·(1 − 1)) = 0.95; H200 tp 4: 0.897 × 0.95 = 0.85215.
    auto = auto_mem_fraction_static(143_771, tp=4, vit=(24, 1024))
    assert auto.vit_factor == 0.95 and auto.fraction == pytest.approx(0.85215)
    # Through the plan, tp 1: 0.5.21 turns breakable off for a KDA model, so reserved 13,440 →
    # round(130,331 / 143,771, 3) = 0.907; × 0.95. 0.5.23 keeps GLM-5.3-Flash's breakable
    # prefill graphs, 1,536 MiB for an MLA model: 14,976 → 0.896; × 0.95.
    plan = make_plan("glm-5.3-flash", gpu="H200", weights_gib=40)
    assert plan.capacity.memory.mem_fraction_static == pytest.approx(0.907 * 0.95)
    plan = make_plan("glm-5.3-flash", gpu="H200", weights_gib=40, rules="sglang-0.5.23")
    assert plan.capacity.memory.mem_fraction_static == pytest.approx(0.896 * 0.95)


def test_qwen3_5_vision_depth_is_not_what_sglang_counts():
    """`adjust_mem_fraction_for_vlm` reads `getattr(vision_config, "num_hidden_layers", 24)`;
    SGLang's Qwen3_5MoeVisionConfig (configs/qwen3_5.py) spells the depth `depth` (27) and
    aliases nothing, so the tower counts 24 × 1152²: ratio 1.265625, factor 0.95 × 0.9734375.
    H200 tp 2: reserved 512 + 12,288 + 256 + 512 + 464 (breakable prefill graphs) = 14,032 MiB
    → 0.902; × 0.924765625 = 0.83413859375, SGLang 0.5.23's own answer for
    0.5.23|qwen3.5-35b-a3b|H200|auto|tp=2|dp=1|spec=0|radix=off|null (the recording)."""
    from kvledger.model.config import load_model
    from kvledger.sglang.deploy import Deployment

    assert load_model("qwen3.5-35b-a3b").vit_shape == (24, 1152)
    plan = make_plan("qwen3.5-35b-a3b", Deployment(tp_size=2, disable_radix_cache=True),
                     rules="sglang-0.5.23", gpu="H200", weights_gib=40)
    assert plan.auto_mem_fraction.vit_factor == pytest.approx(0.95 * 0.9734375)
    assert plan.capacity.memory.mem_fraction_static == pytest.approx(0.83413859375, abs=1e-12)


def test_small_gpu_that_reserves_everything_is_refused():
    with pytest.raises(ValueError, match="leaving no static memory; pass --mem-fraction-static"):
        auto_mem_fraction_static(3_000, tp=1)  # reserves 3,728 + 42·8 prefill-graph MiB


def test_h100_llama_boot_logs_within_one_percent():
    # Two H100 boot logs of Llama-3.1-8B (bf16, tp 1) show 444,500 and 442,750 tokens; the
    # second reads "Load weight end … avail mem=63.48 GB, mem usage=15.11 GB" → 78.59 GiB free
    # before load (the CUDA context is the rest of 81,559 MiB) and rest/131,072 B gives back
    # mem_fraction_static 0.88: the logs come from a release whose tp-1 default was 0.88.
    # With that fraction and only the catalogue and the config (weights 8,029,995,008 × 2 B):
    # rest = (85,520,809,984 − 1,134,559,232)·0.88 − 16,059,990,016 = 58,199,910,646 B
    # T = 58,199,910,646 // 131,072 = 444,030.
    plan = make_plan("llama-3.1-8b", _deployment(mem_fraction_static=0.88), gpu="H100")
    tokens = plan.capacity.max_total_tokens
    assert tokens == 444_030
    assert abs(tokens / 444_500 - 1) < 0.01 and abs(tokens / 442_750 - 1) < 0.01
    # Under the sglang-0.5.21/0.5.23 rules the automatic fraction is 0.83 on this GPU (breakable
    # prefill graphs included), which gives (84,386,250,752·0.83 − 16,059,990,016) // 131,072
    # = 411,839 tokens, 7.3 % under the logs: those rule sets do not reproduce them without
    # --mem-fraction-static 0.88.
    auto = make_plan("llama-3.1-8b", gpu="H100")
    assert auto.capacity.memory.mem_fraction_static == 0.83
    assert auto.capacity.max_total_tokens == 411_839


def test_gpu_memory_gib_for_an_uncatalogued_device():
    # 48 GiB = 49,152 MiB: the < 60 GiB bucket, 512 + 6,144 + 128 + 64 + 50·8 = 7,248 → 0.853.
    plan = make_plan("llama-3.1-8b", gpu_memory_gib=48, weights_gib=15)
    memory = plan.capacity.memory
    assert memory.mem_fraction_static == 0.853
    assert memory.pre_load_free_bytes == 48 * GiB - CUDA_CONTEXT_BYTES
    assert memory.available_bytes == 48 * GiB - CUDA_CONTEXT_BYTES - 15 * GiB
    # --gpu-memory-gib replaces a catalogue GPU's total.
    h100 = make_plan("llama-3.1-8b", gpu="H100", gpu_memory_gib=80, weights_gib=15)
    assert h100.capacity.memory.pre_load_free_bytes == 80 * GiB - CUDA_CONTEXT_BYTES
    assert 1_082 * MiB == CUDA_CONTEXT_BYTES


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf")])
def test_gpu_memory_gib_must_be_positive(value):
    with pytest.raises(ValueError, match="--gpu-memory-gib"):
        make_plan("llama-3.1-8b", gpu_memory_gib=value)


def test_gpu_memory_gib_and_available_gib_conflict():
    with pytest.raises(ValueError, match="--gpu-memory-gib and --available-gib: give one"):
        make_plan("llama-3.1-8b", gpu_memory_gib=80, available_gib=60)


def _deployment(**fields):
    from kvledger.sglang.deploy import Deployment

    return Deployment(**fields)
