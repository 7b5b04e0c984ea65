"""The HTML report: self-contained, plan tables and figures, simulation results when given;
rendered by headless Chromium when it is installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from kvledger.report.html_page import render_report
from kvledger.sglang.deploy import Deployment
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


def test_totals_weights_and_latency_are_on_the_page():
    # what `kvledger plan` and `simulate` print is on the page too: the deployment totals, the
    # weights ledger when kvledger estimated the weights, and the latency percentiles
    plan = make_plan("qwen3-next-80b-a3b-instruct", Deployment(tp_size=2), gpu="H200")
    work = GENERATORS["chat"].generate(GeneratorParams(num_requests=40, seed=3))
    html = render_report(plan, simulate(plan, work))
    assert plan.weights_estimated and plan.ledgers.weights.rows
    assert f"{plan.ledgers.weights.name} — {plan.ledgers.weights.total_bytes:,} B" in html
    tot = plan.capacity.totals
    assert "<caption>Deployment — " in html
    assert f"<td>running requests (N × workers)</td><td>{tot.running_requests:,}</td>" in html
    assert "<caption>Latency (" in html and "<td>TTFT</td>" in html and " ms</td>" in html
    assert "units: B = byte; KiB, MiB, GiB" in html


def test_one_unit_style_on_the_page(page):
    # binary byte units only (the engines' GiB), shares as "x.y %", times with their unit
    assert not re.search(r"\d (GB|MB|KB)\b", page)
    assert not re.search(r"\d\.\d%", page)
    assert re.search(r"token hit rate \d+\.\d %", page)
