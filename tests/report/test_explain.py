"""`explain` derives the workload check too, and writes a count times a size unambiguously."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.report.explain import explain
from kvledger.sglang.plan import make_plan

runner = CliRunner()


def test_the_workload_is_derived_ledger_by_ledger():
    # SPEC §5: T = 7,780,672, K = 343, 5 slots per request → at most 68 requests; 100 × 32k
    # tokens = 3.2M tokens fit the token pool, 500 slots do not fit K.
    lines = explain(make_plan(kv_cache_dtype="fp8_e4m3", requests=100, context_tokens=32_000))
    text = "\n".join(lines)
    assert "workload: 100 requests × 32,000 tokens; per rank = ceil(100 / attn_dp 1) = 100" in text
    assert ("token KV: 100 requests × 32,000 tokens = 3,200,000 tokens (23,232,000,000 B) "
            "≤ T 7,780,672: fits (at most 7,780,672 // 32,000 = 243 requests)") in text
    assert "state slots: 100 requests × 5 slots = 500 slots > K 343: NO" in text
    assert lines[-1] == ("workload does NOT fit: state slots overflows first (at most 68 "
                         "requests per rank)")
    assert not any(line.startswith("workload") for line in explain(make_plan()))


def test_cli_explain_takes_the_workload():
    r = runner.invoke(app, ["explain", "--requests", "10", "--context", "32000", "--json"])
    assert r.exit_code == 0, r.output
    lines = json.loads(r.stdout)["lines"]
    assert lines[-1] == "workload fits"
    assert any(line.startswith("running requests: 10 ≤ N ") for line in lines)


def test_no_dtype_reads_as_a_power():
    # "(69, 1,048,580) int32 × 69" read as int32 to the 69th; the count comes first now
    lines = explain(make_plan())
    side = [line for line in lines if line.startswith("req_to_token:")]
    assert side == ["req_to_token: 69 × 4,194,320 B = 289,408,080 B (276.00 MiB) per rank; "
                    "tensor (69, 1,048,580) int32"]
    assert 69 * 1_048_580 * 4 == 289_408_080
    assert not [line for line in lines if re.search(r"(int32|bfloat16|float32) × \d", line)]
