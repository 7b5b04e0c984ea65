"""The documented Python API (`kvledger.plan`, `simulate`, `sweep`, `compare`, `recommend`)
and the docs' example page, which must run as written."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import kvledger
from kvledger.sglang.plan import make_plan

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_plan_takes_sglang_flags_as_the_cli_does():
    p = kvledger.plan("glm-5.3-flash", "--tp 8 --dp 8 --enable-dp-attention", gpu="H200")
    dep = p.layout.deployment
    assert (dep.tp_size, dep.attn_dp_size, p.gpu.name) == (8, 8, "H200")
    same = make_plan("glm-5.3-flash", dep, gpu="H200")
    assert p.capacity.totals == same.capacity.totals
    pasted = kvledger.plan(flags="python -m sglang.launch_server --model-path "
                                 "zai-org/GLM-5.3-Flash --tp 8")
    assert pasted.model.name == "zai-org/GLM-5.3-Flash" and pasted.layout.deployment.tp_size == 8


def test_bad_input_names_the_flag():
    with pytest.raises(ValueError, match="--tpp: unknown flag"):
        kvledger.plan("glm-5.3-flash", "--tpp 8")
    with pytest.raises(ValueError, match="contradicts --model-path"):
        kvledger.plan("qwen3-32b", "--model-path glm-5.3-flash")


def test_sweep_axes_take_values_lists_or_comma_strings():
    listed = kvledger.sweep(gpu=["H200"], tp=[8], dp=[1, 8])
    comma = kvledger.sweep(gpu="H200", tp="8", dp="1,8")
    assert [r.totals for r in listed] == [r.totals for r in comma]
    assert [r.totals.workers for r in listed] == [1, 8]


def test_the_docs_example_runs_as_written():
    failures, tried = doctest.testfile(str(DOCS / "example.md"), module_relative=False,
                                       optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried > 20 and failures == 0


def test_recommend_searches_vllm_layouts_when_asked():
    rec = kvledger.recommend("jamba-1.5-mini", requests=32, context=8_192, gpu="H200", top=1,
                             engine="vllm")
    # as tests/cli/test_sweep_engines.py::test_recommend_jamba_from_vllm_layouts (vllm-0.33)
    assert rec.best.engine == "vllm" and rec.best.row.totals.running_requests == 411
    with pytest.raises(ValueError, match="engine 'trt'"):
        kvledger.recommend(requests=1, context=1_024, gpu="H200", engine="trt")
