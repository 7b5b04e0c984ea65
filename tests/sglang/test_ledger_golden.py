"""Golden ledgers for every embedded config at tp 1, numbers derived by hand in comments.

Full-layer rows: GQA = 2 (K+V) × kv_heads × head_dim × itemsize; MLA = (kv_lora_rank + rope)
× itemsize; DSA scaled fp8 = 512 + 512/128·4 + rope·2; DSA index keys reserve 132 B on every
DSA layer that owns an indexer (GLM-5.2's "shared" layers get a 0-row index-K buffer). State: conv (K−1) × channels × 2 B (bf16) + temporal heads × d1 × d2 × 4 B (fp32).
"""

from __future__ import annotations

import pytest

from kvledger.sglang.plan import make_plan

GOLDEN = {
    # name: (bf16 B/token, fp8 B/token, B/state slot, page tokens)
    # 61 MLA layers × (512 + 64) × 2 = 70,272; fp8 (raw for plain MLA) × 1 = 35,136
    "deepseek-v3": (70_272, 35_136, 0, 1),
    # + 61 × 132 index = 8,052 → 78,324; scaled fp8 656 × 61 = 40,016 + 8,052 = 48,068
    "deepseek-v3.2": (78_324, 48_068, 0, 64),
    # 78 DSA layers: 1,152 × 78 = 89,856 + 132 × 21 indexer owners = 2,772 → 92,628;
    # 656 × 78 + 2,772 = 53,940 (SGLang 0.5.21 and 0.5.23 size the same cells:
    # tests/data/oracle/sglang-*-grid.jsonl, `_compute_dsa_indexer_cell_size`)
    "glm-5.2": (92_628, 53_940, 0, 64),
    # 11 DSA: 1,024 × 11 + 1,452 = 12,716; 528 × 11 + 1,452 = 7,260; 34 × 4,341,760 = 147,619,840
    "glm-5.3-flash": (12_716, 7_260, 147_619_840, 64),
    # 7 MLA: 1,152 × 7 = 8,064; 20 KDA layers of 32 heads × 128:
    # conv 3 × 12,288 × 2 = 73,728 + temporal 32 × 128 × 128 × 4 = 2,097,152 → 2,170,880 × 20
    "kimi-linear-48b-a3b-instruct": (8_064, 4_032, 43_417_600, 1),
    # 32 layers × 2 × 8 × 128 × 2 = 131,072
    "llama-3.1-8b": (131_072, 65_536, 0, 1),
    # 64 layers × 2 × 8 × 128 × 2 = 262,144
    "qwen3-32b": (262_144, 131_072, 0, 1),
    # 12 GQA × 2 × 2 × 256 × 2 = 24,576; 36 GDN: conv 3 × (2·16·128 + 32·128 = 8,192) × 2
    # = 49,152 + temporal 32 × 128 × 128 × 4 = 2,097,152 → 2,146,304 × 36 = 77,266,944
    "qwen3-next-80b-a3b-instruct": (24_576, 12_288, 77_266_944, 1),
    # 10 GQA × 2,048 = 20,480; 30 GDN × 2,146,304 = 64,389,120 (config pins float32)
    "qwen3.5-35b-a3b": (20_480, 10_240, 64_389_120, 1),
    # 10 GQA × 2 × 8 × 128 × 2 = 40,960; 54 Mamba2: conv 3 × (256·64 + 2·8·256 = 20,480) × 2
    # = 122,880 + temporal 256 × 64 × 256 × 4 = 16,777,216 → 16,900,096 × 54 = 912,605,184
    "nemotron-h-56b-base-8k": (40_960, 20_480, 912_605_184, 1),
    # 36 GQA × 2 × 2 × 64 × 2 = 18,432; 36 Mamba2: conv 3 × (24·64 + 2·1·128 = 1,792) × 2
    # = 10,752 + temporal 24 × 64 × 128 × 4 = 786,432 → 797,184 × 36 = 28,698,624
    "falcon-h1-0.5b": (18_432, 9_216, 28_698_624, 1),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
@pytest.mark.parametrize("rules", ["sglang-0.5.21", "sglang-0.5.23"])
def test_golden_ledgers(name, rules):
    bf16_token, fp8_token, slot, page = GOLDEN[name]
    bf16 = make_plan(name, kv_cache_dtype="bf16", rules=rules, available_gib=2_000)
    fp8 = make_plan(name, kv_cache_dtype="fp8_e4m3", rules=rules, available_gib=2_000)
    if rules == "sglang-0.5.23" and name == "glm-5.3-flash":
        # 0.5.23 reserves ceil(132 / kpool) per DSA layer and pages hold 64 pooled keys;
        # kpool is 1 outside GLM-5.3, so only GLM-5.3 changes: 132 → 33, page 64 → 256.
        bf16_token, fp8_token, page = 12_716 - 11 * 99, 7_260 - 11 * 99, 256
    assert bf16.ledgers.token.total_bytes == bf16_token
    assert fp8.ledgers.token.total_bytes == fp8_token
    assert bf16.ledgers.state.total_bytes == slot
    assert bf16.layout.page_tokens == page
    for plan in (bf16, fp8):
        ledger = plan.ledgers.token
        assert ledger.total_bytes == sum(r.count * r.unit_bytes for r in ledger.rows)
        assert plan.capacity.token_bytes == ledger.total_bytes


def test_request_ledger_for_hybrid_models_uses_the_slot_ratio():
    plan = make_plan("qwen3-next-80b-a3b-instruct", available_gib=100)
    assert plan.ledgers.request.total_bytes == 5 * 77_266_944
    pure = make_plan("llama-3.1-8b", available_gib=20)
    assert pure.ledgers.request.total_bytes == 0 and pure.capacity.state_slots == 0


def test_embedded_configs_are_the_shared_ones():
    from factories import _SHARED
    from kvledger.model.config import CONFIG_DIR

    if not _SHARED.is_dir():
        pytest.skip("no shared config folder beside this checkout")
    for shared in _SHARED.glob("*.json"):
        assert (CONFIG_DIR / shared.name).read_bytes() == shared.read_bytes(), shared.name
