"""Answers that compare: both engines' requests of one length side by side, the binding
constraint of the workload asked, and tables that never cut a number (issue 21).

The exact numbers are kvledger's own planners' (Qwen3-Next-80B and GLM-5.3-Flash on H200s);
each is also derived in the test from the plan's own pool sizes, by the formula it stands for.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
QWEN = ("--model", "qwen3-next-80b-a3b-instruct", "--gpu", "H200")


def invoke(*args: str):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def _rows(doc: dict) -> dict[str, tuple[str, str]]:
    return {r["quantity"]: (r["sglang"], r["vllm"]) for r in doc["rows"]}


def test_side_by_side_puts_requests_of_one_length_beside_each_other():
    doc = json.loads(invoke("plan", "--engine", "sglang,vllm", *QWEN, "--tp", "2",
                            "--json").stdout)
    s, v = doc["sglang"], doc["vllm"]
    # without --context each engine's own context length: 262,144 for both here
    length = s["deployment"]["context_tokens"]
    assert length == v["layout"]["max_model_len"] == 262_144
    # SGLang: T // C per worker (K // slots and N admit more); vLLM: ⌊num_gpu_blocks / blocks
    # per request⌋, its logged Maximum concurrency floored
    assert s["capacity"]["max_total_tokens"] // length == 9
    assert int(v["capacity"]["max_concurrency"]) == 17
    rows = _rows(doc)
    assert rows["requests at the context length, at once (per worker)"] == (
        "9 × 262,144 tokens", "17 × 262,144 tokens")
    assert rows["first to run out at the context length"] == ("token KV", "KV-cache blocks")
    # the engines' own limits stay beside it: SGLang's 135 running requests are of any length
    # (state slots at mem_fraction_static 0.902, the breakable prefill graphs' 464 MiB reserved)
    assert rows["concurrent requests"][0] == "135"
    assert s["context_fit"] == {"context_tokens": 262_144, "requests": 9, "per_worker": 9,
                                "workers": 1, "binding": "tokens", "binding_label": "token KV"}
    assert v["context_fit"]["requests"] == 17 and v["context_fit"]["binding"] == "kv_blocks"


def test_context_and_requests_check_both_engines():
    args = ("plan", "--engine", "sglang,vllm", *QWEN, "--tp", "2", "--context", "32768")
    doc = json.loads(invoke(*args, "--requests", "100", "--json").stdout)
    s, v = doc["sglang"], doc["vllm"]
    assert s["capacity"]["max_total_tokens"] // 32_768 == 72 == s["context_fit"]["per_worker"]
    # vLLM: 8,338 blocks; a 32,768-token request takes cdiv(32,768, 576) = 57 attention blocks
    # and three state blocks in each of the three Mamba groups (align mode, one of them the
    # FlashInfer GDN prefill checkpoint of vLLM 0.33): 66
    assert v["capacity"]["num_blocks"] // 66 == 126 == v["context_fit"]["per_worker"]
    assert _rows(doc)["workload fits (100 × 32,768 tokens)"] == ("NO", "yes")
    assert v["workload"] == {"requests": 100, "context_tokens": 32_768, "fits": True}
    unfit = runner.invoke(app, [*args, "--requests", "200", "--check"])
    assert unfit.exit_code == 1 and "NO" in unfit.stdout  # neither holds 200


def test_the_footer_binding_follows_the_workload():
    # issue 21: the footer said state slots while the workload table said token KV overflows
    out = invoke("plan", "--gpu", "H200", "--requests", "64", "--context", "200000", "--",
                 "--tp", "8").stdout
    assert "does NOT fit: token KV overflows first" in out
    assert ("binding constraint for 200,000-token requests: token KV (18 per worker); "
            "request limit: state slots") in out
    plain = invoke("plan", "--gpu", "H200", "--", "--tp", "8").stdout
    assert "binding constraint: state slots" in plain
    vllm = invoke("plan", "--engine", "vllm", *QWEN, "-tp", "2", "--context", "32768").stdout
    assert "binding constraint for 32,768-token requests: KV-cache blocks (126 per worker)" \
        in vllm


def test_sweep_rows_carry_requests_at_the_context_for_both_engines():
    doc = json.loads(invoke("sweep", *QWEN, "--tp", "2,4", "--engine", "sglang,vllm",
                            "--json").stdout)
    assert doc["rules"] == "sglang-0.5.21,vllm-0.33"
    for row in doc["rows"]:
        fit, tot, per = row["context_fit"], row["totals"], row["per_worker"]
        assert fit["context_tokens"] == 262_144
        if row["engine"] == "sglang":
            assert fit["requests"] == per["max_total_tokens"] // 262_144 * tot["workers"]
        else:  # at max_model_len vLLM's like-for-like figure is its running requests
            assert fit["requests"] == tot["running_requests"]
    # the 136 against 18 running requests (135 since the fraction reserves SGLang's
    # breakable prefill graphs, 17 with vLLM 0.33's checkpoint block) read 9 against 17 like
    # for like
    first = doc["rows"][:2]
    assert [r["totals"]["running_requests"] for r in first] == [135, 17]
    assert [r["context_fit"]["requests"] for r in first] == [9, 17]


def _terminal(*args: str, columns: int = 120) -> str:
    """The CLI's output on a terminal `columns` wide (a pseudo-terminal, COLUMNS set)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "TERM": "dumb",
           "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kvledger", *args], stdout=follower,
                            stderr=follower, env=env, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    text = b"".join(chunks).decode()
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")


def test_a_120_column_sweep_cuts_no_number_and_keeps_reasons_out_of_the_cells():
    args = ("sweep", "--gpu", "H200", "--tp", "4,8", "--dp", "1,4", "--engine", "sglang,vllm")
    out = _terminal(*args)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert "…" not in out
    doc = json.loads(invoke(*args, "--json").stdout)
    table = [line for line in lines if line.startswith("│")]
    for i, row in enumerate(doc["rows"], 1):
        cells = [c.strip() for c in table[i - 1].strip("│").split("│")]
        assert cells[0] == str(i)
        if not row["ok"]:  # the reason is below the table, whole, not in a cell
            assert cells[-2] == "not planned"
            assert f"#{i} not planned: {row['error'][:40]}" in out
            continue
        tot = row["totals"]
        assert cells[5:9] == [f"{tot['ranks']:,}", f"{tot['running_requests']:,}",
                              f"{row['context_fit']['requests']:,}", f"{tot['tokens']:,}"]
    assert sum(not r["ok"] for r in doc["rows"]) == 2  # vLLM's tp 4 dp 4 and tp 8 dp 4


def test_120_columns_cut_nothing_in_compare_recommend_and_the_side_by_side():
    for args in (("compare", "--a", "--tp 8 --gpu H200", "--b", "--tp 8 --gpu H200 --engine vllm"),
                 ("recommend", "--requests", "64", "--context", "32768", "--gpu", "H200",
                  "--engine", "sglang,vllm", "--top", "2"),
                 ("plan", "--engine", "sglang,vllm", "--gpu", "H200", "--tp", "8")):
        out = _terminal(*args)
        assert "…" not in out, args
        # tables fit; only pasteable launch commands may run past the edge (soft wrap)
        assert all(len(line) <= 120 for line in out.splitlines()
                   if not line.startswith("#")), args
