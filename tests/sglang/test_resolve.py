"""Resolution of autos and the errors for contradictory deployments."""

from __future__ import annotations

from dataclasses import replace

import pytest

from factories import glm_layout
from kvledger.model.arch import ModelError
from kvledger.model.config import load_model
from kvledger.sglang.deploy import (
    Deployment,
    DeploymentError,
    KVDtype,
    LinearBackend,
    MambaStrategy,
)
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES, get_rules
from kvledger.sglang.specs import RowLayout

R21 = RULES["sglang-0.5.21"]


def test_auto_kv_dtype_follows_gpu_architecture():
    # SPEC §2: "auto KV dtype resolves to bf16 on Hopper (H100/H200) and fp8 on Blackwell"
    glm = load_model("glm-5.3-flash")
    assert resolve(glm, Deployment(), R21, blackwell=False).kv_row.layout is RowLayout.BF16
    # on Blackwell SGLang's DSA backend for fp8 is trtllm, whose rows carry no scales
    # (`_dsa_split_backend_resolution`; SGLang 0.5.21 sizes GLM-5.3-Flash's B200 cell with
    # 512 B rows: tests/data/oracle/sglang-0.5.21-grid.jsonl)
    assert resolve(glm, Deployment(), R21, blackwell=True).kv_row.layout is RowLayout.FP8_RAW
    unnamed = resolve(glm, Deployment(), R21)
    assert unnamed.kv_row.layout is RowLayout.FP8_SCALED and unnamed.notes


def test_default_strategy_is_extra_buffer_with_overlap():
    # SPEC §4: ratio = base 3 + 2 (extra_buffer with overlap) or + 1 (overlap off); a request
    # holds 1 working slot + the ping-pong track slots (2 with overlap, 1 without).
    lay = glm_layout()
    assert lay.deployment.mamba_strategy is MambaStrategy.EXTRA_BUFFER
    assert (lay.slots_per_request, lay.held_slots_per_request) == (5, 3)
    lay = glm_layout(disable_overlap_schedule=True)
    assert (lay.slots_per_request, lay.held_slots_per_request) == (4, 2)


def test_no_buffer_with_dsa_is_rejected():
    # SPEC §5: "no_buffer with a DSA model is rejected (it needs page size 1)"
    with pytest.raises(DeploymentError, match="no_buffer.*DSA"):
        glm_layout(mamba_strategy=MambaStrategy.NO_BUFFER, disable_overlap_schedule=True)


def test_explicit_no_buffer_with_overlap_is_rejected():
    # SPEC §5: "an explicit no_buffer with overlap on is rejected too"
    with pytest.raises(DeploymentError, match="disable-overlap-schedule"):
        glm_layout(mamba_strategy=MambaStrategy.NO_BUFFER)


def test_auto_strategy_with_non_triton_backend_turns_overlap_off():
    # SPEC §5: "only the auto strategy quietly turns overlap off when it resolves to no_buffer".
    # A GQA hybrid (page 1) can use no_buffer; GLM's DSA pages cannot.
    qwen = load_model("qwen3-next-80b-a3b-instruct")
    lay = resolve(qwen, Deployment(linear_attn_backend=LinearBackend.CUTEDSL), R21)
    assert lay.deployment.mamba_strategy is MambaStrategy.NO_BUFFER
    assert lay.deployment.disable_overlap_schedule and lay.slots_per_request == 3
    assert any("overlap" in note for note in lay.notes)


def test_dsa_page_replaces_any_requested_page():
    # SPEC §5: "For DSA models on CUDA a requested page size of 1 is overridden"
    assert glm_layout(page_size=1).page_tokens == 64
    assert glm_layout("sglang-0.5.23", page_size=1).page_tokens == 256
    # arg_groups/model_overrides/deepseek_v2.py replaces a requested page on CUDA, it does not
    # refuse it (the issue: --page-size 128 was refused here).
    for rules, page in (("sglang-0.5.21", 64), ("sglang-0.5.23", 256)):
        lay = glm_layout(rules, page_size=128)
        assert lay.page_tokens == page
        assert any(f"--page-size 128: SGLang replaces it with the DSA page of {page}" in n
                   for n in lay.notes)


@pytest.mark.parametrize("page, message", [
    # validate_mamba_extra_buffer: 256 % page == 0 and 64 | page or page | 64
    (3, "mamba_track_interval 256 must be divisible by page_size 3"),
    (512, "mamba_track_interval 256 must be divisible by page_size 512"),
])
def test_extra_buffer_page_must_divide_the_track_interval(page, message):
    dep = Deployment(page_size=page)
    with pytest.raises(DeploymentError, match=message):
        resolve(load_model("qwen3-next-80b-a3b-instruct"), dep, RULES["sglang-0.5.21"])
    # 16, 64 and 256 pass both checks
    for ok in (16, 64, 256):
        lay = resolve(load_model("qwen3-next-80b-a3b-instruct"), Deployment(page_size=ok),
                      RULES["sglang-0.5.21"])
        assert lay.page_tokens == ok


def test_state_sharding_must_divide_heads():
    # 64 KDA heads: attn_tp 8 divides; attn_tp 3 cannot be built (tp 3 is rejected up front or
    # at resolve, either way naming the flag).
    assert glm_layout(tp_size=8).state.conv_shape == (3, 3_072)
    with pytest.raises(DeploymentError, match="tp"):
        glm_layout(tp_size=3)


def test_context_length_beyond_model_is_rejected():
    with pytest.raises(DeploymentError, match="--context-length"):
        glm_layout(context_length=2_000_000)
    assert glm_layout(context_length=131_072).context_tokens == 131_072


def test_unknown_rule_set_names_the_choices():
    with pytest.raises(ValueError, match="sglang-0.5.21, sglang-0.5.23"):
        get_rules("sglang-9")


def test_kv_dtype_itemsize_refuses_auto():
    with pytest.raises(AssertionError):
        _ = KVDtype.AUTO.itemsize


def test_scaled_fp8_widths_must_fill_whole_scale_groups():
    # calculate_mla_kv_cache_dim (SGLang) asserts kv_lora_rank % 128 == 0 for scaled fp8 rows;
    # a width of 500 once gave 500 + 500 // 128 · 4 = 512 B rows without complaint. Index keys
    # are always scaled fp8, so their width is checked whatever the KV dtype.
    glm = load_model("glm-5.3-flash")
    fp8, bf16 = Deployment(kv_cache_dtype=KVDtype.FP8_E4M3), Deployment(kv_cache_dtype=KVDtype.BF16)
    narrow_latent = replace(glm, mla=replace(glm.mla, kv_lora_rank=500))
    with pytest.raises(ModelError, match=r"kv_lora_rank is 500 \(expected a multiple of 128"):
        resolve(narrow_latent, fp8, R21)
    assert resolve(narrow_latent, bf16, R21).kv_row.row_bytes == 1_000  # 500 × 2 B, no scales
    narrow_key = replace(glm, indexer=replace(glm.indexer, head_dim=100))
    with pytest.raises(ModelError, match=r"index_head_dim is 100 \(expected a multiple of 128"):
        resolve(narrow_key, bf16, R21)
