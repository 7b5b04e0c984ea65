"""Figures: every file written and non-empty, drawn from the ledgers (numbers checked)."""

from __future__ import annotations

import numpy as np

from kvledger.report.figures import PLAN_FIGURES, write_figures
from kvledger.report.figures.sim_plots import Binned
from kvledger.report.figures.token_bytes import _variants
from kvledger.sglang.plan import make_plan
from kvledger.sim.series import Constraint, TimeSeries


def test_article_figures_written_as_svg_and_png(tmp_path):
    plan = make_plan(kv_cache_dtype="fp8_e4m3")
    files, skipped = write_figures(plan, tmp_path)
    assert skipped == []
    assert len(files) == 2 * len(PLAN_FIGURES) == 10
    for path in files:
        assert path.stat().st_size > 5_000, path
    svg = {p.stem: p.read_text() for p in files if p.suffix == ".svg"}
    # Numbers the article prints (SPEC §2, §4, §6), as drawn from the ledgers:
    assert "7,260" in svg["fig2_token_bytes"] and "12,716" in svg["fig2_token_bytes"]
    assert "7,084" in svg["fig2_token_bytes"]
    assert "HybridLinearKVPool" in svg["fig3_pool_tree"]
    assert "(344, 64, 128, 128) float32" in svg["fig3_pool_tree"]  # K + 1 slots
    assert "8,448" in svg["fig4_index_page"] and "16 groups of kpool 4" in svg["fig4_index_page"]
    assert "5,632" in svg["fig5_hicache_cover"]  # 512-wide host rows × 11 layers
    assert "truncated row" in svg["fig5_hicache_cover"]


def test_token_bytes_variants_are_the_ledgers_of_each_layout():
    got = {label: ledger.total_bytes for label, ledger in _variants(make_plan())}
    # SPEC §2: bf16 12,716, scaled fp8 7,260, raw fp8 7,084 (0.5.21); 0.5.23 reserves 33 B of
    # index key per token per layer: 5,808 + 363 = 6,171.
    assert got == {
        "bf16\nsglang-0.5.21": 12_716, "fp8 scaled\nsglang-0.5.21": 7_260,
        "fp8 raw (TRT-LLM)\nsglang-0.5.21": 7_084, "bf16\nsglang-0.5.23": 11_627,
        "fp8 scaled\nsglang-0.5.23": 6_171, "fp8 raw (TRT-LLM)\nsglang-0.5.23": 5_995,
    }


def test_a_model_without_indexer_skips_the_index_page_and_says_why(tmp_path):
    files, skipped = write_figures(make_plan("qwen3-next-80b-a3b-instruct"), tmp_path)
    assert skipped == ["fig4_index_page: qwen3-next-80b-a3b-instruct has no DSA indexer: no "
                       "index-key pages"]
    assert len(files) == 8


def test_binned_series_takes_end_values_and_blocked_shares():
    s = TimeSeries()
    base, host = (0,) * 14, (0,) * 4
    s.append((100.0, 1, 3, *base, Constraint.TOKENS.bit, *host))  # 0–100 ms, blocked on T
    s.append((300.0, 1, 5, *base, 0, *host))  # 100–300 ms
    s.append((400.0, 1, 7, *base, Constraint.TOKENS.bit, *host))  # 300–400 ms
    b = Binned(s, bins=2)  # bins 0–200, 200–400 ms
    assert b.at_end("running").tolist() == [3.0, 7.0]
    assert np.allclose(b.blocked_share(Constraint.TOKENS), [0.5, 0.5])
    assert np.allclose(b.blocked_share(Constraint.STATE), [0, 0])


def test_occupancy_adds_a_host_panel_only_with_a_host_tier():
    from kvledger.report.figures.sim_plots import occupancy
    from kvledger.sim.replay import simulate
    from sim.sim_factories import request, small_plan, workload

    w = workload(request(0, 0, {1: 1000}), request(1, 1e7, {2: 2000}), request(2, 2e7, {1: 1000}))
    plans = {False: small_plan(max_total_tokens=40 * 64),
             True: small_plan(max_total_tokens=40 * 64, enable_hierarchical_cache=True)}
    axes = {host: occupancy(simulate(plan, w)).axes for host, plan in plans.items()}
    assert (len(axes[False]), len(axes[True])) == (3, 4)
    host = axes[True][3]
    # --hicache-ratio 2 (the default) over 40 device pages and 343 state slots:
    # int(2·2,560) // 64 + 1 = 81 host pages, int(2·343) + 1 = 687 host state slots.
    assert [line.get_label() for line in host.get_lines()] == [
        "host KV pages (of 81)", "host state slots (of 687)"]
    assert max(host.get_lines()[0].get_ydata()) == 46 / 81  # A (15) and B (31) backed up
