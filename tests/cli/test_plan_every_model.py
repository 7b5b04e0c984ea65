"""Every embedded model through `plan --engine vllm` and `--engine sglang,vllm` (real CLI).

On 8 × H200 each either plans (JSON with the vLLM capacity) or is refused with one `error:`
line naming what to change; never a traceback. GLM-5.2's bf16 checkpoint (78 layers, ~744 B
parameters) is the one model whose weights do not fit 8 ranks.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from factories import REFUSED_BY_SGLANG
from kvledger.cli import app
from kvledger.model.config import embedded_names

runner = CliRunner()
REFUSED_AT_TP8 = {"glm-5.2": "weights of 173.08 GiB per rank do not fit"}
# A side-by-side plan of a model SGLang refuses stops at the SGLang half (vLLM plans it alone).


def plan(*args: str):
    return runner.invoke(app, ["plan", "--json", "--gpu", "h200", *args])


def check(result, model: str, *, side_by_side: bool) -> None:
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        f"{model}: {result.exception!r}")
    refused = {**REFUSED_AT_TP8, **(REFUSED_BY_SGLANG if side_by_side else {})}
    if model in refused:
        assert result.exit_code != 0
        assert refused[model] in result.output and "Traceback" not in result.output
        return
    assert result.exit_code == 0, f"{model}: {result.output}"
    doc = json.loads(result.stdout)
    vllm = doc["vllm"] if side_by_side else doc
    assert vllm["model"]["name"] == model
    assert vllm["capacity"]["num_blocks"] > 1 and vllm["capacity"]["max_concurrency"] > 0
    if side_by_side:
        assert doc["sglang"] is not None and doc["rows"]


@pytest.mark.parametrize("model", embedded_names())
def test_vllm_engine(model):
    check(plan("--engine", "vllm", "--model", model, "--tensor-parallel-size", "8"), model,
          side_by_side=False)


@pytest.mark.parametrize("model", embedded_names())
def test_side_by_side(model):
    check(plan("--engine", "sglang,vllm", "--model", model, "--tp", "8"), model,
          side_by_side=True)


def test_default_model_plans_under_vllm():
    r = plan("--engine", "vllm", "--tensor-parallel-size", "8")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["model"]["family"] == "glm5_next"
    assert doc["layout"]["indexer_layers"] == 11 and doc["layout"]["kpool_tail"] is True
    assert doc["layout"]["block_tokens"] == 640  # 128 × cdiv(542,720, 128 × 1,024) at TP 8


def test_sglang_spelling_under_vllm_reads_as_vllms_where_it_means_the_same():
    # One spelling policy: --tp is vLLM's --tensor-parallel-size; --dp means attention-DP
    # groups to SGLang, so under vLLM it is refused naming vLLM's flag.
    same = plan("--engine", "vllm", "--model", "llama-3.1-8b", "--tp", "8")
    spelled = plan("--engine", "vllm", "--model", "llama-3.1-8b",
                   "--tensor-parallel-size", "8")
    assert same.exit_code == 0, same.output
    assert json.loads(same.stdout)["layout"] == json.loads(spelled.stdout)["layout"]
    other = plan("--engine", "vllm", "--model", "llama-3.1-8b", "--tp", "8", "--dp", "2")
    assert other.exit_code == 2
    assert "--dp: SGLang's spelling; vLLM takes --data-parallel-size / -dp" in other.output
