"""GLM-5.3-Flash on the RTX PRO 6000 (SM120) under vllm-0.33: fp8_ds_mla rows, packed groups.

Every number by hand from vLLM 0.33.0's source, then checked against vLLM 0.33.0's own
planning of the same deployment (tests/data/oracle/vllm-0.33.0-grid.jsonl,
`glm-5.3-flash|RTX PRO 6000|auto|pc=None|spec=0|tp=4`: block 2,304, 18,011,136 B per block,
1,183 blocks, 466 per request, 2.54x, 2,661,942 tokens):
- backend: FLASHINFER_MLA_SPARSE_SM120 (`_get_backend_priorities`, platforms/cuda.py), which
  stores `auto` as fp8_ds_mla (`_canonicalize_sparse_mla_kv_cache_dtype`,
  model_executor/layers/attention/mla_attention.py): 656 B per latent row
  (`MLAAttention.get_kv_cache_spec`, state_content_bytes);
- block: `_align_hybrid_block_size` (platforms/interface.py) builds its one-token
  MLAAttentionSpec without state_content_bytes: 512 × 1 B; KDA state at TP 4
  3 × 6,144 × 2 + 16 × 128 × 128 × 4 = 1,085,440 B; granule 128 (MLA floor):
  128 × cdiv(1,085,440, 128 × 512) = 2,176, then `backend_block_alignment`, the lcm of every
  non-SSM backend's smallest kernel block: Glm5NextIndexerBackend takes index_kpool × 64 =
  256 only on SM120 (`get_paged_mqa_page_sizes`, utils/deep_gemm.py) → 2,304;
- pages: latent 2,304 × 656 = 1,511,424; indexer 576 rows × 132 = 76,032; state padded to
  2,304 × 512 = 1,179,648; kpool tail ring 4 × 2 × 128 × 2 = 2,048;
- groups: `_get_packed_kv_cache_groups` (v1/core/kv_cache_planning.py): repeats 12
  (`_approximate_gcd([11, 11, 34], lower_bound=11)`), anchor 11 × (1,511,424 + 76,032) =
  17,462,016 B, 14 states fit → max(cdiv(34, 12), cdiv(34, 14)) = 3 state groups;
- bytes per block: `_get_kv_cache_bytes_per_block`, 17,462,016 up to a multiple of
  lcm(64 rows × 656 (the SM120 backend's `align_blocks_to_rows(spec, 64)`), 64 index rows ×
  132) = 1,385,472 → 13 × 1,385,472 = 18,011,136.
"""

from __future__ import annotations

from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.groups import PageBucket, approximate_gcd, packed_groups
from kvledger.vllm.plan import make_vllm_plan

AVAILABLE_BYTES = 21_320_772_095  # what vLLM was given for that grid row


def plan(tp=4, **kw):
    return make_vllm_plan("glm-5.3-flash", VllmDeployment(
        tensor_parallel_size=tp, kv_cache_memory_bytes=AVAILABLE_BYTES, **kw),
        rules="vllm-0.33", gpu="RTX PRO 6000")


def test_the_block_is_sized_from_the_plain_row_and_the_indexer_kernel_block():
    lay = plan().layout
    assert lay.mla_backend.name == "FLASHINFER_MLA_SPARSE_SM120"
    assert lay.attention.fp8_ds_mla and lay.attention.bytes_per_token == 656
    assert lay.attention.align_bytes_per_token == 512
    assert lay.mamba.real_page_bytes == 3 * 6144 * 2 + 16 * 128 * 128 * 4 == 1_085_440
    assert 128 * -(-1_085_440 // (128 * 512)) == 2176  # before backend_block_alignment
    assert lay.block_tokens == 2304 == 9 * 256
    assert lay.page_bytes == 2304 * 656 == 1_511_424
    assert lay.mamba.page_bytes == 2304 * 512 == 1_179_648
    assert lay.indexer.page_bytes == 576 * 132 == 76_032
    assert lay.tail_page_bytes == 2048


def test_state_groups_pack_into_the_latent_block():
    lay = plan().layout
    assert [(g.kind, g.num_layers) for g in lay.groups] == [
        ("mamba", 12), ("mamba", 11), ("mamba", 11), ("attention", 11)]
    assert lay.block_stride_alignment_bytes == 1_385_472
    assert lay.group_bytes(lay.groups[3]) == 11 * (1_511_424 + 76_032) == 17_462_016
    assert lay.group_bytes(lay.groups[0]) == 12 * 1_179_648
    assert lay.bytes_per_block == 13 * 1_385_472 == 18_011_136


def test_capacity_and_the_logged_line_match_vllm_033():
    cap = plan().capacity
    assert cap.num_blocks == AVAILABLE_BYTES // 18_011_136 == 1183
    assert cap.blocks_per_request == -(-1_048_576 // 2304) + 3 * 3 + 1 == 466
    assert f"{cap.max_concurrency:.2f}" == "2.54"
    assert cap.logged_tokens == int(1183 / 466 * 1_048_576) == 2_661_942


def test_per_block_ledger_sums_to_the_block():
    p = plan()
    rows = {r.component: r.total_bytes for r in p.ledgers.per_block.rows}
    assert rows == {"layer page": 11 * 1_511_424, "indexer page": 11 * 76_032,
                    "block stride rounding": 18_011_136 - 17_462_016}
    assert p.ledgers.per_block.total_bytes == p.capacity.bytes_per_block
    lost = {r.component: r for r in p.ledgers.lost_per_request.rows}
    # a state group's block id spans the whole block; 12 padded states hold 14,155,776 B of it
    row = lost["unused block bytes (mamba group of 12)"]
    assert (row.count, row.unit_bytes) == (3, 18_011_136 - 12 * 1_179_648)


def test_approximate_gcd_prefers_the_larger_divisor_on_ties():
    assert approximate_gcd([11, 11, 34], lower_bound=11) == 12  # pads 1 + 1 + 2
    assert approximate_gcd([4, 6], lower_bound=1) == 2  # 1, 2 pad nothing; 3 and 6 pad 2
    assert approximate_gcd([4], lower_bound=9) == 9  # a bound above every value stands


def test_packed_groups_caps_a_state_group_at_the_states_a_block_holds():
    mla = PageBucket(kind="attention", layers_by_page=((1000, 4), (100, 4)))
    states = PageBucket(kind="mamba", layers_by_page=((1000, 10),), state=True)
    # anchor 4 × 1,100 = 4,400 B: 4 states fit, cdiv(10, 4) = 3 groups (repeats: 5)
    assert [(b.kind, n) for b, n in packed_groups([states, mla])] == [
        ("mamba", (4, 3, 3)), ("attention", (4,))]
    # with half-size state pages 8 fit: the repeat pattern's cdiv(10, 5) = 2 decides
    small = PageBucket(kind="mamba", layers_by_page=((500, 10),), state=True)
    assert packed_groups([small, mla])[0][1] == (5, 5)
