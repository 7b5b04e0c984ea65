"""N's context heuristic scales tokens per context *before* truncating, as SGLang does.

SGLang, python/sglang/srt/mem_cache/kv_cache_configurator.py,
`KVCacheConfigurator.resolve_max_num_reqs` (the older model_runner.py `init_memory_pool`
has the same expression)::

    estimated = int(token_capacity / self.model_config.context_len * 512)
    estimated = max(min(estimated, 4096), 2048)

A true division, times 512, then `int`: T = 908,257 tokens at a 131,072-token context is
6.930 contexts, 3,547.9 → 3,547 requests. Flooring the contexts first (6 × 512 = 3,072)
would pass every ledger test; the goldens below catch it.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.model.config import load_model
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.requestlimits import Limit, request_limits
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES

runner = CliRunner()

# model, T (the plan's max_total_tokens on one H200, mem_fraction_static 0.903 with the
# breakable prefill graphs' 464 MiB reserved), context, N = int(T / context · 512)
GOLDEN = [
    # int(908,257 / 131,072 · 512) = int(3,547.88) = 3,547 (floored first: 6 · 512 = 3,072)
    ("llama-3.1-8b", 908_257, 131_072, 3_547),
    # int(265,442 / 40,960 · 512) = int(3,318.03) = 3,318 (floored first: 6 · 512 = 3,072)
    ("qwen3-32b", 265_442, 40_960, 3_318),
]


@pytest.mark.parametrize("model, tokens, context, n", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_plan_on_h200_runs_the_context_heuristic_unfloored(model, tokens, context, n):
    result = runner.invoke(app, ["plan", "--model", model, "--gpu", "H200", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    cap = doc["capacity"]
    assert (cap["max_total_tokens"], doc["deployment"]["context_tokens"]) == (tokens, context)
    assert cap["limits"]["context_heuristic"] == n == int(tokens / context * 512)
    assert cap["max_running_requests"] == n and cap["binding"] == "context_heuristic"
    assert n != tokens // context * 512  # the floored-first heuristic would differ here


def test_the_plan_table_shows_n():
    result = runner.invoke(app, ["plan", "--model", "llama-3.1-8b", "--gpu", "H200"],
                           terminal_width=200)
    assert result.exit_code == 0, result.output
    heuristic = next(line for line in result.stdout.splitlines()
                     if "N limit: SGLang default" in line)
    assert "3,547" in heuristic and "binds" in heuristic
    running = next(line for line in result.stdout.splitlines() if "N running requests" in line)
    assert "3,547" in running


def _layout(context_length: int | None = None):
    return resolve(load_model("llama-3.1-8b"), Deployment(context_length=context_length),
                   RULES["sglang-0.5.21"])


@pytest.mark.parametrize("tokens, want", [
    (912_823, 3_565),  # 6.96 contexts: truncated after scaling
    (524_288, 2_048),  # exactly 4 contexts: 2,048, the floor
    (393_216, 2_048),  # 3 contexts: 1,536, raised to the 2,048 floor
    (1_048_575, 4_095),  # just under 8 contexts: 4,095.996 → 4,095, under the cap
    (1_048_576, 4_096),  # 8 contexts: 4,096, the cap
    (2_000_000, 4_096),  # 15.3 contexts: capped at 4,096
])
def test_the_context_heuristic_scales_then_truncates_then_clamps(tokens, want):
    lay = _layout()
    assert lay.context_tokens == 131_072
    assert request_limits(lay, tokens=tokens, state_slots=None)[Limit.CONTEXT_HEURISTIC] == want


def test_the_heuristic_follows_the_context_length():
    # int(912,823 / 100,000 · 512) = int(4,673.65): capped at 4,096
    lay = _layout(context_length=100_000)
    assert request_limits(lay, tokens=912_823, state_slots=None)[Limit.CONTEXT_HEURISTIC] == 4_096
    # int(912,823 / 120,000 · 512) = int(3,894.71) = 3,894 (floored first: 7 · 512 = 3,584)
    lay = _layout(context_length=120_000)
    assert request_limits(lay, tokens=912_823, state_slots=None)[Limit.CONTEXT_HEURISTIC] == 3_894
