"""Every assumption in every command's notes and JSON, and every term a user may know better
settable everywhere (issue 21): plan, sweep, compare, recommend and the Python API.

vLLM's profiled terms (`--activation-gib`, `--non-torch-gib`, `--cudagraph-gib`) and its
budget (`--gpu-memory-utilization`) enter `available = total × utilization − weights −
activations − non_torch − graphs` (vllm/v1/worker/gpu_worker.py, determine_available_memory);
the byte figures below are kvledger's own vLLM planner's.
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.core.gpus import get_gpu
from kvledger.core.units import GiB
from kvledger.model.config import load_model

runner = CliRunner()
ZERO = "--activation-gib, --non-torch-gib, --cudagraph-gib not given: taken as 0"
MAX_SEQS = "--max-num-seqs not given: vLLM's default 1,024 on H200"


def invoke(*args: str, code: int = 0):
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def test_recommend_prints_and_documents_its_assumptions():
    args = ("recommend", "--requests", "64", "--context", "32768", "--gpu", "H200", "--top", "2")
    doc = json.loads(invoke(*args, "--json").stdout)
    # the fits are SGLang's, but each carries vLLM's command: vLLM's assumptions count too
    assert any(n.startswith(ZERO) for n in doc["notes"])
    assert any(n.startswith("--mem-fraction-static not given") for n in doc["notes"])
    out = invoke(*args).stdout
    assert f"note: {ZERO}" in out
    assert all(f["context_fit"]["context_tokens"] == 32_768 for f in doc["fits"])


def test_compare_prints_and_documents_both_sides_assumptions():
    args = ("compare", "--a", "--tp 8 --gpu H200", "--b", "--tp 8 --gpu H200 --engine vllm")
    doc = json.loads(invoke(*args, "--json").stdout)
    assert f"b: {MAX_SEQS}" in doc["notes"]
    assert any(n.startswith(f"b: {ZERO}") for n in doc["notes"])
    assert any(n.startswith("a: weights per rank estimated") for n in doc["notes"])
    assert f"note: b: {MAX_SEQS}" in invoke(*args).stdout
    rows = {r["quantity"]: r for r in doc["rows"]}
    # like for like: requests of the context length held at once, on each side
    assert rows["fit_context_tokens"]["a"] == rows["fit_context_tokens"]["b"] == 1_048_576
    assert (rows["fit_requests"]["a"], rows["fit_requests"]["b"]) == (3, 8)


def _vllm_side(doc: dict) -> dict:
    return {r["quantity"]: r["b"] for r in doc["rows"]}


def test_compare_and_recommend_take_vllms_terms():
    base = ("compare", "--a", "--tp 8 --gpu H200", "--b", "--tp 8 --gpu H200 --engine vllm",
            "--json")
    plain = _vllm_side(json.loads(invoke(*base).stdout))
    doc = json.loads(invoke(*base, "--activation-gib", "2", "--non-torch-gib", "1",
                            "--cudagraph-gib", "0.5", "--gpu-memory-utilization", "0.85").stdout)
    tuned = _vllm_side(doc)
    assert not any(ZERO in n for n in doc["notes"])  # every term given, none assumed
    # 3.5 GiB less per rank and a 0.85 budget: fewer blocks, as the formula says
    # bytes per block of GLM-5.3-Flash at tp 8 on an H200: 11 × (640 × 1,024 + 160 × 132)
    # raised to a multiple of 33,792 (the block stride; vLLM 0.33's planning gives the same)
    block = 7_468_032
    h200 = get_gpu("H200").memory_bytes
    weights = load_model("glm-5.3-flash").weight_bytes // 8  # the config's estimate per rank
    available = math.ceil(h200 * 0.85) - weights - int(3.5 * GiB)  # 0.33 ceils the request
    assert tuned["num_gpu_blocks"] == available // block == 11_406 < plain["num_gpu_blocks"]
    rec = json.loads(invoke("recommend", "--requests", "8", "--context", "8192", "--gpu",
                            "H200", "--top", "1", "--engine", "vllm", "--activation-gib", "2",
                            "--gpu-memory-utilization", "0.85", "--weights-gib", "40",
                            "--json").stdout)
    assert "--gpu-memory-utilization 0.85" in rec["fits"][0]["command"]
    assert not any(n.startswith("weights estimated") for n in rec["notes"])


@pytest.mark.parametrize("command", [
    ("sweep", "--gpu", "H200", "--tp", "8"),
    ("compare", "--a", "--tp 8 --gpu H200", "--b", "--tp 8 --dp 8 --enable-dp-attention --gpu H200"),
    ("plan", "--gpu", "H200", "--", "--tp", "8"),
])
@pytest.mark.parametrize("term", ["--activation-gib", "--gpu-memory-utilization"])
def test_a_vllm_term_without_vllm_is_one_error(command, term):
    *head, = command
    if "--" in head:  # kvledger's options go before a pasted command
        i = head.index("--")
        head = [*head[:i], term, "0.5", *head[i:]]
    else:
        head = [*head, term, "0.5"]
    result = invoke(*head, code=2)
    assert result.output.count("error:") == 1 and term in result.output
    assert "--mem-fraction-static" in result.output and "Traceback" not in result.output


def test_vllm_plan_says_its_defaults():
    doc = json.loads(invoke("plan", "--engine", "vllm", "--gpu", "H200", "--model",
                            "qwen3-next-80b-a3b-instruct", "-tp", "2", "--json").stdout)
    assert "--gpu-memory-utilization not given: vllm-0.33's default 0.92" in doc["notes"]
    assert MAX_SEQS in doc["notes"] and any(n.startswith(ZERO) for n in doc["notes"])
    given = json.loads(invoke("plan", "--engine", "vllm", "--gpu", "H200", "--model",
                              "qwen3-next-80b-a3b-instruct", "-tp", "2",
                              "--gpu-memory-utilization", "0.8", "--json").stdout)
    assert given["deployment"]["gpu_memory_utilization"] == 0.8
    assert not any("gpu-memory-utilization" in n for n in given["notes"])


@pytest.mark.parametrize("flag, value", [("--activation-gib", "nan"), ("--non-torch-gib", "-1"),
                                         ("--cudagraph-gib", "inf"),
                                         ("--gpu-memory-utilization", "1.5"),
                                         ("--gpu-memory-utilization", "0")])
def test_a_bad_term_is_one_error_before_any_plan(flag, value):
    for command in (("sweep", "--gpu", "H200", "--tp", "8", "--engine", "vllm"),
                    ("recommend", "--requests", "1", "--context", "1024", "--gpu", "H200"),
                    ("compare", "--a", "--tp 8 --gpu H200", "--b",
                     "--tp 8 --gpu H200 --engine vllm"),
                    ("plan", "--engine", "vllm", "--gpu", "H200")):
        result = invoke(*command, flag, value, code=2)
        assert result.output.count("error:") == 1 and f"{flag} {value}" in result.output
