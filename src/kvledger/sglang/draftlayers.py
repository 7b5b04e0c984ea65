"""How many draft layers share the token slots under speculative decoding, and how many the
token budget counts: what `--speculative-draft-model-path` changes.

SGLang 0.5.21 and 0.5.23 agree here (read in both wheels):
- The target's cell counts `eagle_draft_num_layers` more layers of its own per-layer KV, for
  EAGLE, EAGLE3 and STANDALONE only (model_executor/pool_configurator.py
  `DefaultPoolConfigurator.__init__`: `cell × (1 + draft / num_layers)`; the DSA branch adds
  the draft's KV and its index keys). NGRAM has no draft model and no draft layers (DeepSeek-V3
  at TP 8: 61 × 1,152 = 70,272 B a token, against 62 × 1,152 under EAGLE); DFLASH and DSPARK
  size their draft from the draft checkpoint (kvledger counts the model's MTP layers for them,
  as before).
- `eagle_draft_num_layers` (model_runner_components/spec_aux_hidden_state.py
  `_resolve_eagle_aux_hidden_state`): with a draft path, the draft's config read in draft
  mode (`ModelConfig._config_draft_model`): its `num_nextn_predict_layers`, which the rewrite
  sets to 1 for Qwen3-Next, Qwen3.5, Nemotron-H and GLM-5.3-Flash, else every layer of the
  draft (`max(num_hidden_layers, num_attention_layers)`), so a dense model given as its own
  draft doubles its cell. Without one, the target's config as is: its
  `num_nextn_predict_layers` or nothing (Qwen3.5 names its MTP layer `mtp_num_hidden_layers`).
- DeepSeek-V3, DeepSeek-V3.2 and GLM-5.2 get the model's path as the draft path when none is
  given (arg_groups/speculative_hook.py `_handle_eagle_family`).
- The draft worker allocates its own pool for the same T either way
  (managers/tp_worker.py `_init_model_config`: `ModelConfig.from_server_args` falls back to
  the model's path), with the draft-mode layers; where the budget counts fewer, the pool
  outgrows the budget, as under `RuleSet.budget_counts_draft_layers` False.
A draft path other than the model's is a checkpoint kvledger cannot read: the model's own
MTP layers are counted as before, and a note says so.

Measured with SGLang's own configurator (oracle/sglang/sizing.py, H200, TP 8, bf16): Qwen3.5
10,240 B a token without the path, 11,264 with it; Llama-3.1-8B 16,384 and 32,768.

>>> from kvledger.model.config import load_model
>>> from kvledger.sglang.deploy import Deployment, DraftModel, SpecAlgorithm
>>> eagle = Deployment(speculative_num_draft_tokens=4, speculative_algorithm=SpecAlgorithm.EAGLE)
>>> qwen = load_model("qwen3.5-35b-a3b")
>>> budgeted_draft_layers(qwen, eagle), allocated_draft_layers(qwen, eagle)
(0, 1)
>>> from dataclasses import replace
>>> same = replace(eagle, speculative_draft_model=DraftModel.TARGET)
>>> budgeted_draft_layers(load_model("llama-3.1-8b"), same)
32
"""

from __future__ import annotations

from kvledger.model.arch import Family, ModelArch
from kvledger.sglang.deploy import Deployment, DraftModel, SpecAlgorithm

# _handle_eagle_family: the model's path is the draft path when none is given
PATH_DEFAULTS_TO_MODEL = frozenset({Family.DEEPSEEK_V3, Family.DEEPSEEK_V32, Family.GLM_MOE_DSA})
# _config_draft_model sets num_nextn_predict_layers = 1 in draft mode
DRAFT_MODE_ONE_LAYER = frozenset({Family.QWEN3_NEXT, Family.QWEN3_5, Family.NEMOTRON_H,
                                  Family.GLM5_NEXT})
# configs whose MTP layers are `num_nextn_predict_layers` (kvledger reads that key): the
# rest either name them otherwise (Qwen: mtp_num_hidden_layers) or have none
NEXTN_KEY = frozenset({Family.DEEPSEEK_V3, Family.DEEPSEEK_V32, Family.GLM_MOE_DSA,
                       Family.GLM5_NEXT, Family.KIMI_LINEAR, Family.KIMI_K3, Family.NEMOTRON_H})
# SpeculativeAlgorithm.is_eagle() or is_standalone(); an unnamed algorithm (None) and the
# others keep the model's own MTP layers
EAGLE_BUDGET = frozenset({SpecAlgorithm.EAGLE, SpecAlgorithm.EAGLE3, SpecAlgorithm.STANDALONE})


def _draft_path(model: ModelArch, dep: Deployment) -> DraftModel | None:
    """Where SGLang's draft comes from; None: kvledger counts the model's MTP layers."""
    if dep.speculative_algorithm not in EAGLE_BUDGET:
        return None
    path = dep.speculative_draft_model
    if path is DraftModel.UNSET and model.family in PATH_DEFAULTS_TO_MODEL:
        return DraftModel.TARGET
    return None if path is DraftModel.OTHER else path


def _draft_mode_layers(model: ModelArch) -> int:
    """`num_nextn_predict_layers` of the model's config read in draft mode, else all layers."""
    if model.family in DRAFT_MODE_ONE_LAYER:
        return 1
    if model.family in NEXTN_KEY:
        return model.num_draft_layers
    return model.num_layers


def allocated_draft_layers(model: ModelArch, dep: Deployment) -> int:
    """Layers of the draft worker's KV pool, T slots each."""
    if not dep.speculative or dep.speculative_algorithm is SpecAlgorithm.NGRAM:
        return 0
    path = _draft_path(model, dep)
    if path is DraftModel.TARGET or (path is DraftModel.UNSET
                                     and model.family in DRAFT_MODE_ONE_LAYER):
        return _draft_mode_layers(model)
    return model.num_draft_layers


def budgeted_draft_layers(model: ModelArch, dep: Deployment) -> int:
    """Draft layers the target's cell counts (`eagle_draft_num_layers`), before the rule set's
    `budget_counts_draft_layers`."""
    if not dep.speculative or dep.speculative_algorithm is SpecAlgorithm.NGRAM:
        return 0
    path = _draft_path(model, dep)
    if path is DraftModel.TARGET:
        return _draft_mode_layers(model)
    if path is DraftModel.UNSET and model.family not in NEXTN_KEY:
        return 0
    return model.num_draft_layers


def draft_notes(model: ModelArch, dep: Deployment) -> list[str]:
    if not dep.speculative or dep.speculative_draft_model is not DraftModel.OTHER:
        return []
    return [f"--speculative-draft-model-path names another checkpoint: kvledger cannot read its "
            f"layers and counts {model.name}'s own {model.num_draft_layers} MTP layer(s)"]
