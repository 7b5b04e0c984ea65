"""The HTML report: self-contained, plan tables and figures, simulation results when given;
rendered by headless Chromium when it is installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from kvledger.report.html_page import render_report
from kvledger.sglang.plan import make_plan
from kvledger.sim.generators import GENERATORS, GeneratorParams
from kvledger.sim.replay import simulate

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def page() -> str:
    plan = make_plan(kv_cache_dtype="fp8_e4m3")
    work = GENERATORS["chat"].generate(GeneratorParams(num_requests=80, seed=7))
    return render_report(plan, simulate(plan, work), ignored=("--port",))


def test_plan_tables_carry_the_article_numbers(page):
    assert "per token — 7,260 B per token" in page  # SPEC §2: scaled fp8 5,808 + 1,452
    assert "147,619,840" in page  # SPEC §3: one state slot, fp32 temporal
    assert "738,099,200" in page  # SPEC §4: 5 slots per request
    assert "<td>K state slots (+1 padding)</td><td>343</td>" in page  # SPEC §5
    assert "ignored flag: --port" in page


def test_figures_are_inline_and_nothing_is_fetched(page):
    assert page.count("<svg") == 7  # five article figures, two simulation plots
    assert "<script" not in page
    assert not re.search(r'(src|href)="(http|//|file:)', page)
    for stem in ("fig1_layer_map", "fig3_pool_tree", "fig5_hicache_cover", "sim_occupancy"):
        assert f'id="{stem}"' in page


def test_simulation_section(page):
    assert "Simulation: chat (seed 7)" in page
    assert "80 requests, 80 finished, 0 unfinished" in page
    assert "not available: no host tier in this run" in page


def test_without_a_workload_there_is_no_simulation_section():
    html = render_report(make_plan())
    assert html.count("<svg") == 5 and "Simulation" not in html


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")
def test_headless_chromium_renders_the_page(page, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    shot = tmp_path / "shot.png"
    common = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
              f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", path.as_uri()], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert dom.count("<svg") == 7
    assert "kvledger report: glm-5.3-flash" in dom
    assert "Simulation: chat (seed 7)" in dom
    subprocess.run([*common, f"--screenshot={shot}", "--window-size=1200,3000", path.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 10_000
