"""kvledger.sglang.draftlayers: the draft layers --speculative-draft-model-path puts in the cell.

SGLang 0.5.21 and 0.5.23, model_runner_components/spec_aux_hidden_state.py
`_resolve_eagle_aux_hidden_state` (the count), model_executor/pool_configurator.py
`DefaultPoolConfigurator.__init__` (the cell), configs/model_config.py `_config_draft_model`
(draft mode), arg_groups/speculative_hook.py `_handle_eagle_family` (the DeepSeek default path).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kvledger.model.config import load_model
from kvledger.sglang.deploy import Deployment, DraftModel, SpecAlgorithm
from kvledger.sglang.draftlayers import allocated_draft_layers, budgeted_draft_layers
from kvledger.sglang.launch.parse import parse_flags
from kvledger.sglang.plan import make_plan

EAGLE = Deployment(speculative_num_draft_tokens=4, speculative_algorithm=SpecAlgorithm.EAGLE,
                   speculative_eagle_topk=1)
TARGET, UNSET, OTHER = DraftModel.TARGET, DraftModel.UNSET, DraftModel.OTHER


@pytest.mark.parametrize(("model", "path", "budgeted", "allocated"), [
    ("llama-3.1-8b", TARGET, 32, 32),  # no num_nextn_predict_layers: every layer again
    ("llama-3.1-8b", UNSET, 0, 0),
    ("qwen3.5-35b-a3b", TARGET, 1, 1),  # draft mode sets num_nextn_predict_layers = 1
    ("qwen3.5-35b-a3b", UNSET, 0, 1),  # mtp_num_hidden_layers is not read; the pool is there
    ("qwen3-next-80b-a3b-instruct", TARGET, 1, 1),
    ("nemotron-h-56b-base-8k", TARGET, 1, 1),
    ("glm-5.3-flash", UNSET, 1, 1),  # its text config has num_nextn_predict_layers 1
    ("deepseek-v3", UNSET, 1, 1),  # _handle_eagle_family: the model's path
    ("kimi-linear-48b-a3b-instruct", TARGET, 0, 0),  # num_nextn_predict_layers 0
])
def test_draft_layers_per_path(model, path, budgeted, allocated):
    dep = replace(EAGLE, speculative_draft_model=path)
    arch = load_model(model)
    assert (budgeted_draft_layers(arch, dep), allocated_draft_layers(arch, dep)) == (
        budgeted, allocated)


def test_the_cell_with_and_without_the_path():
    """H200, TP 8, bf16 (the numbers of tests/data/oracle/sglang-draft-path.jsonl)."""
    def cell(model, path):
        plan = make_plan(model, replace(EAGLE, tp_size=8, speculative_draft_model=path),
                         rules="sglang-0.5.23", gpu="H200", weights_gib=10)
        return plan.capacity.budget_token_bytes or plan.capacity.token_bytes, plan
    assert cell("llama-3.1-8b", TARGET)[0] == 32_768 and cell("llama-3.1-8b", UNSET)[0] == 16_384
    budget, plan = cell("qwen3.5-35b-a3b", UNSET)
    # the budget leaves the MTP layer out; the draft worker still allocates it for T tokens
    assert (budget, plan.capacity.token_bytes) == (10 * 1_024, 11 * 1_024)


def test_another_checkpoint_is_noted_not_read():
    arch = load_model("deepseek-v3")
    dep = replace(EAGLE, speculative_draft_model=OTHER)
    assert budgeted_draft_layers(arch, dep) == allocated_draft_layers(arch, dep) == 1
    plan = make_plan("deepseek-v3", replace(dep, tp_size=8), gpu="H200", weights_gib=80)
    assert any("names another checkpoint" in note for note in plan.layout.notes)


@pytest.mark.parametrize(("words", "expected"), [
    ("--speculative-draft-model-path meta-llama/Llama-3.1-8B/", TARGET),
    ("--speculative-draft-model yuhuili/EAGLE-LLaMA3.1-Instruct-8B", OTHER),
    ("", UNSET),
])
def test_the_flag_is_compared_with_the_model_path(words, expected):
    parsed = parse_flags("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B "
                         f"--speculative-algorithm EAGLE {words}")
    assert parsed.deployment.speculative_draft_model is expected
    assert "--speculative-draft-model-path" not in parsed.ignored


def test_ngram_has_no_draft_layers():
    """DeepSeek-V3 at TP 8 on an H200: SGLang's cell 70,272 = 61 × 1,152 B under NGRAM
    (tests/data/oracle/sglang-draft-path.jsonl, the `|ngram` rows), 71,424 = 62 × 1,152 under
    EAGLE: only is_eagle() or is_standalone() count eagle_draft_num_layers."""
    ngram = Deployment(tp_size=8, speculative_num_draft_tokens=4,
                       speculative_algorithm=SpecAlgorithm.NGRAM)
    arch = load_model("deepseek-v3")
    assert budgeted_draft_layers(arch, ngram) == allocated_draft_layers(arch, ngram) == 0
    plan = make_plan("deepseek-v3", ngram, rules="sglang-0.5.21", gpu="H200", weights_gib=80)
    assert plan.capacity.token_bytes == 61 * 1_152 and plan.ledgers.draft_token is None
