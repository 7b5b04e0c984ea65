"""Kimi-Linear with speculation: which releases give the KDA conv state speculative rows.

`MambaStateShapeCalculator.kda_state_shape` (model_executor/layers/mamba/mamba_utils.py) takes
num_spec, and `KimiLinearForCausalLM.get_mamba_state_shape_from_config` passes it, but
v0.13.0 and v0.24.0–v0.26.0 return conv_kernel_size − 1 rows all the same (their
`KimiGatedDeltaNetAttention.forward` decodes through the non-spec state indices only);
v0.27.0 adds the num_spec rows. `_align_hybrid_block_size` sizes the block from that shape.

Kimi-Linear at TP 4 on an A100, n-gram speculation with 2 tokens, as vLLM 0.24.0 planned it
(tests/data/oracle/vllm-0.24.0-sample200.jsonl, `kimi-linear-48b-a3b-instruct|A100 80GB|auto|
pc=None|spec=2|tp=4`): block 480, 3,870,720 B per block, 9,728 blocks, 2,194 per request,
4,649,292 tokens.
"""

from __future__ import annotations

from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.plan import make_vllm_plan

AVAILABLE_BYTES = 37_658_150_598  # what vLLM 0.24.0 was given for that row


def plan(rules, spec=2):
    return make_vllm_plan("kimi-linear-48b-a3b-instruct", VllmDeployment(
        tensor_parallel_size=4, num_speculative_tokens=spec,
        kv_cache_memory_bytes=AVAILABLE_BYTES), rules=rules, gpu="A100 80GB")


def test_vllm_024_keeps_k_minus_1_conv_rows_and_matches_its_planning():
    p = plan("vllm-0.24")
    lay, cap = p.layout, p.capacity
    # conv 3 rows × (3 × 32 × 128 / 4) bf16 + temporal (32 / 4, 128, 128) float32
    assert lay.mamba.shapes == ((3, 3072), (8, 128, 128))
    assert lay.mamba.real_page_bytes == 3 * 3072 * 2 + 8 * 128 * 128 * 4 == 542_720
    # granule 16 (no MLA floor in 0.24), MLA row 576 × 2 B
    assert lay.block_tokens == 16 * -(-542_720 // (16 * 1152)) == 480
    assert cap.bytes_per_block == 7 * 480 * 1152 == 3_870_720
    assert cap.num_blocks == AVAILABLE_BYTES // 3_870_720 == 9728
    # mamba_cache_mode none: (1 + 2 speculative) per state group, 3 state groups
    assert cap.blocks_per_request == -(-1_048_576 // 480) + 3 * 3 == 2194
    assert cap.logged_tokens == int(9728 / 2194 * 1_048_576) == 4_649_292


def test_the_note_gives_the_figure_with_the_speculative_rows():
    (note,) = [n for n in plan("vllm-0.24").notes if "kda_state_shape" in n]
    # 5 rows: 5 × 3,072 × 2 + 524,288 = 555,008 B; 16 × cdiv(555,008, 16 × 1,152) = 496
    assert "keeps 3 rows × 3072, none for the 2 speculative tokens" in note
    assert "the state would be 555,008 B and the block 496 tokens, not 542,720 B and 480" in note
    assert not [n for n in plan("vllm-0.24", spec=0).notes if "kda_state_shape" in n]


def test_vllm_013_drops_them_too_and_027_adds_them():
    assert plan("vllm-0.13").layout.mamba.shapes[0] == (3, 3072)
    later = plan("vllm-0.27").layout
    assert later.mamba.shapes[0] == (5, 3072) and later.mamba.real_page_bytes == 555_008
    assert not [n for n in plan("vllm-0.33").notes if "kda_state_shape" in n]
