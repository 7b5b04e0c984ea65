"""Figures and the report say what they show (issue 15's report and figure defects)."""

from __future__ import annotations

from typer.testing import CliRunner

from kvledger import __version__
from kvledger.cli import app
from kvledger.report.figures import draw_all
from kvledger.report.figures.canvas import deployment_line
from kvledger.report.figures.hicache_cover import hicache_cover
from kvledger.report.figures.token_bytes import token_bytes
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.plan import make_plan


def _texts(fig) -> str:
    return "\n".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))


def test_every_figure_is_titled_with_model_deployment_gpu_and_memory():
    plan = make_plan("qwen3-next-80b-a3b-instruct", Deployment(tp_size=4), gpu="H200")
    line = deployment_line(plan)
    assert line.startswith("qwen3-next-80b-a3b-instruct · sglang-0.5.21 · tp 4, dp 1, attn_tp 4")
    assert " · H200 " in line and " GiB − weights " in line  # the GPU and its memory
    drawn = [d for d in draw_all(plan) if d.figure is not None]
    assert len(drawn) == 4  # no indexer: figure 4 says why instead
    for item in drawn:
        assert line in item.figure.get_suptitle(), item.spec.stem
    bare = make_plan()
    assert "no GPU named, 100.00 GiB available after weights" in deployment_line(bare)


def test_a_model_without_index_keys_has_no_index_key_legend():
    nemotron = _texts(token_bytes(make_plan("nemotron-h-56b-base-8k")))
    assert "index-key" not in nemotron and "index" not in nemotron
    glm = _texts(token_bytes(make_plan(kv_cache_dtype="fp8_e4m3")))
    assert "hatched = index-key bytes actually written" in glm


def test_gqa_coverage_says_k_and_v_not_latent():
    qwen = _texts(hicache_cover(make_plan("qwen3-next-80b-a3b-instruct")))
    assert "GQA K+V" in qwen and "latent KV" not in qwen
    assert "latent KV" in _texts(hicache_cover(make_plan(kv_cache_dtype="fp8_e4m3")))


def test_the_report_carries_every_plan_table_the_check_version_command_and_date(tmp_path):
    page = tmp_path / "r.html"
    args = ["report", "--out", str(page), "--requests", "512", "--context", "8000",
            "--enable-hierarchical-cache", "--rules", "sglang-0.5.23"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    html = page.read_text()
    # report --requests was silently ignored; now the workload check is on the page
    assert "Workload: 512 × 8,000 tokens (512 per rank) — does NOT fit" in html
    assert "Host tier (HiCache) per rank" in html and "What the host tier covers" in html
    assert "<th>sglang-0.5.23</th>" in html  # the column is the release --rules names
    assert f"kvledger {__version__}; written 20" in html
    assert "command: kvledger report --out" in html and "--rules sglang-0.5.23" in html
    for caption in ("per token", "per state slot", "per request", "Capacity per rank"):
        assert caption in html
