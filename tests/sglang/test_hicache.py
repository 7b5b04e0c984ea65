"""Host-tier sizing (kvledger.sglang.hicache): SGLang's ratio and size rules, our floor, both views.

Device sizes come from the SPEC §5 plan (100 GiB after weights, scaled fp8, fp32 state):
T = 7,780,672 tokens, K = 343 state slots, unless a test says otherwise.
"""

from __future__ import annotations

import pytest

from kvledger.sglang.deploy import Deployment, DsaBackend, KVDtype
from kvledger.sglang.hicache import ARTICLE_HOST, OUR_HOST, CopyStatus, HostObject, SizingMode
from kvledger.sglang.plan import make_plan

SLOT_BYTES = 147_619_840  # SPEC §3: one fp32 KDA state slot over 34 layers


def host(model: str = "glm-5.3-flash", **deploy):
    if model == "glm-5.3-flash":
        deploy.setdefault("kv_cache_dtype", KVDtype.FP8_E4M3)
    plan = make_plan(model, Deployment(enable_hierarchical_cache=True, **deploy))
    assert plan.host is not None
    return plan.host


def pools(view) -> dict[str, tuple[int, int]]:
    return {row.component: (row.count, row.unit_bytes) for row in view.pools.rows}


def test_no_host_plan_without_hierarchical_cache():
    assert make_plan(kv_cache_dtype="fp8_e4m3").host is None


def test_ratio_default_two_rounds_like_sglang():
    # HostKVCache: size = int(T·2) = 15,561,344; page_num = size // 64 + 1 = 243,147 pages.
    # MambaPoolHost: int(343·2) + 1 = 687 slots (page size 1).
    plan = host()
    assert (plan.mode, plan.ratio, plan.size_bytes) == (SizingMode.RATIO, 2.0, None)
    article, ours = plan.views
    assert pools(article) == {"host KV pool": (15_561_408, 5_632),
                              "host MAMBA pool": (687, SLOT_BYTES)}
    assert pools(ours) == {"host KV pool": (15_561_408, 5_808),
                           "host INDEXER pool": (15_561_408, 1_452),
                           "host MAMBA pool": (687, SLOT_BYTES)}
    assert article.pools.total_bytes == 15_561_408 * 5_632 + 687 * SLOT_BYTES == 189_056_679_936
    assert ours.pools.total_bytes == 15_561_408 * 7_260 + 687 * SLOT_BYTES == 214_390_652_160
    assert plan.notes == ()


def test_ratio_one_still_adds_a_page_and_a_slot():
    # int(7,780,672·1) is page-aligned, yet SGLang adds a page: 121,574 + 1 pages.
    article, ours = host(hicache_ratio=1).views
    assert (article.host_tokens, article.host_state_slots) == (7_780_736, 344)
    assert (ours.host_tokens, ours.host_state_slots) == (7_780_736, 344)


def test_size_splits_in_proportion_to_device_bytes():
    # Device pools: token 56,488,143,360 B, state 50,781,224,960 B (344 slots).
    # State share of 100 GB = 47.34 GB → 320 slots (+1). KV share = 1e11 − 320·S:
    # article 52,761,651,200 // 5,632 = 9,368,190 → 146,377 pages + 1 → 9,368,192 tokens;
    # ours    52,761,651,200 // 7,260 = 7,267,445 → 113,553 pages + 1 → 7,267,456 tokens.
    plan = host(hicache_size_gb=100)
    assert (plan.mode, plan.size_bytes) == (SizingMode.SIZE, 100_000_000_000)
    article, ours = plan.views
    assert (article.host_tokens, article.host_state_slots) == (9_368_192, 321)
    assert (ours.host_tokens, ours.host_state_slots) == (7_267_456, 321)
    # Only ours is below the device's 7,780,672 tokens; SGLang warns in that case.
    assert len(plan.notes) == 1 and plan.notes[0].startswith("kvledger: host KV pool (7,267,456")


def test_size_floor_of_state_slots_binds_for_a_tiny_device_state_pool():
    # K = 5 (--max-mamba-cache-size 5), context 4,096: the proportional state share of 100 GB
    # is 0.83 GB → 5 slots. The floor ceil(G / (C·context + S)) is higher:
    # article: 1e11 / (5,632·4,096 + S) = 585.9 → 586; ours: 1e11 / (7,260·4,096 + S) = 563.8 → 564;
    # MambaPoolHost then adds its padding slot: 587 and 565.
    article, ours = host(hicache_size_gb=100, context_length=4096, max_mamba_cache_size=5).views
    assert (article.host_state_slots, ours.host_state_slots) == (587, 565)
    # ours: (1e11 − 564·S) // 7,260 = 2,306,117 → 36,033 pages + 1 → 2,306,176 tokens,
    # which is ≤ 564 contexts of 4,096 tokens: no host KV is stranded without a state.
    assert ours.host_tokens == 2_306_176
    assert ours.host_tokens <= (ours.host_state_slots - 1) * 4096


def test_size_too_small_for_one_state_slot_names_the_flag():
    with pytest.raises(ValueError, match=r"--hicache-size 0.1: cannot hold 1 host state slot"):
        host(hicache_size_gb=0.1)


def test_article_row_is_512_of_528_and_index_keys_are_missing():
    # Article §5.2: "它的行宽是 kv_lora_rank + qk_rope_head_dim = 512，不是 device 端 scaled FP8 的 528"
    # and §5.5: "HiCache 的 host pool 里没有 indexer buffer，也没有 compress tail buffer".
    article, ours = host().views
    assert [(r.count, r.unit_bytes) for r in article.per_token.rows] == [(11, 512)]
    assert [(r.count, r.unit_bytes) for r in ours.per_token.rows] == [(11, 528), (11, 132)]
    assert article.coverage == {
        HostObject.KV: CopyStatus.TRUNCATED, HostObject.INDEX_KEYS: CopyStatus.MISSING,
        HostObject.STATE: CopyStatus.COPIED, HostObject.COMPRESS_TAIL: CopyStatus.NOT_IN_TREE}
    assert ours.coverage == {
        HostObject.KV: CopyStatus.COPIED, HostObject.INDEX_KEYS: CopyStatus.COPIED,
        HostObject.STATE: CopyStatus.COPIED, HostObject.COMPRESS_TAIL: CopyStatus.NOT_IN_TREE}


@pytest.mark.parametrize(("deploy", "row"), [
    ({"dsa_backend": DsaBackend.TRTLLM}, 512),  # raw fp8: the 512 host row happens to fit
    ({"kv_cache_dtype": KVDtype.BF16}, 1_024),  # 512 elements × 2 B on both sides
])
def test_article_row_is_only_short_for_scaled_fp8(deploy, row):
    article, _ = host(**deploy).views
    assert article.per_token.rows[0].unit_bytes == row
    assert article.coverage[HostObject.KV] is CopyStatus.COPIED


def test_deepseek_v32_article_row_576_of_656():
    # 512 latent + 64 RoPE elements at 1 B on host; device scaled row 512 + 16 + 64·2 = 656.
    article, ours = host("deepseek-v3.2", kv_cache_dtype=KVDtype.FP8_E4M3).views
    assert article.per_token.rows[0].unit_bytes == 576
    assert ours.per_token.rows[0].unit_bytes == 656
    assert HostObject.STATE not in ours.coverage and HostObject.COMPRESS_TAIL not in ours.coverage


def test_pure_gqa_model_has_only_a_kv_host_pool():
    plan = make_plan("llama-3.1-8b", Deployment(enable_hierarchical_cache=True, hicache_ratio=3))
    for view in plan.host.views:
        # page 1: int(T·3) + 1 tokens, no states.
        assert pools(view) == {"host KV pool": (int(plan.capacity.max_total_tokens * 3) + 1,
                                                plan.ledgers.token.total_bytes)}
        assert view.coverage == {HostObject.KV: CopyStatus.COPIED}


def test_rules_objects_carry_the_defects_declaratively():
    assert (ARTICLE_HOST.row_matches_device, ARTICLE_HOST.indexer_pool) == (False, False)
    assert (OUR_HOST.row_matches_device, OUR_HOST.indexer_pool) == (True, True)


def test_plan_json_and_view_show_both_host_views():
    from rich.console import Console

    from kvledger.report.plan_view import host_tables
    from kvledger.sglang.plan_json import plan_json

    plan = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3,
                                           enable_hierarchical_cache=True))
    doc = plan_json(plan)["host"]
    assert [v["name"] for v in doc["views"]] == ["sglang-0.5.21", "kvledger"]
    assert doc["views"][1]["coverage"]["index keys"] == "host copy"
    assert doc["views"][0]["total_bytes"] == 189_056_679_936
    console = Console(width=200, record=True)
    for table in host_tables(plan):
        console.print(table)
    text = console.export_text()
    assert "15,561,408 × 1,452 = 22,595,164,416" in text and "stale after loadback" in text
    assert plan_json(make_plan(kv_cache_dtype="fp8_e4m3"))["host"] is None


def test_host_views_are_labelled_with_the_rules_given():
    # issue 15: the first column named the article's release whatever --rules said
    plan = make_plan(rules="sglang-0.5.23", deployment=Deployment(
        kv_cache_dtype=KVDtype.FP8_E4M3, enable_hierarchical_cache=True))
    first, ours = plan.host.views
    assert (first.rules.name, ours.rules.name) == ("sglang-0.5.23", "kvledger")
    # 0.5.23: host row = device row and index keys on host, so both views agree
    assert first.pools.total_bytes == ours.pools.total_bytes
