"""What the release's budget charges per token and per state slot, where that is not what the
pools allocate (SGLang 0.5.8 and 0.5.9).

0.5.21 and 0.5.23 size T from the bytes the pools hold per token: C_token, the token ledger
plus the MTP draft's layers when speculating. 0.5.8 and 0.5.9 size it from
`ModelRunnerKVCacheMixin.get_cell_size_per_token` (model_executor/model_runner_kv_cache_mixin.py):

- an MLA layer counts (kv_lora_rank + qk_rope_head_dim) × the KV itemsize, so a scaled fp8
  DSA row (512 fp8 + 16 scale bytes + 64 bf16 RoPE = 656 B for DeepSeek-V3.2) is charged 576 B
  although NSATokenToKVPool allocates 656 (`RuleSet.dsa_budget_cell_is_row`); the index key's
  128 + 4 B is counted as allocated;
- the draft model's layers are not counted: the target sizes T from its own layers and the
  draft worker allocates its pool for the same T (`RuleSet.budget_counts_draft_layers`).

Either way the pools outgrow the budget and the excess comes out of the (1 − mem_fraction_static)
slack, as the token pool's padding page does. The state pool likewise: 0.5.8 and 0.5.9 charge
K slots for the K + 1 MambaPool allocates (`kvledger.sglang.statebudget`).

DeepSeek-V3.2 in scaled fp8: 61 layers × (576 + 132) = 43,188 B charged per token, 61 × (656 +
132) = 48,068 B allocated.

>>> from kvledger.model.config import load_model
>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> from kvledger.sglang.resolve import resolve
>>> from kvledger.sglang.rules import RULES
>>> dep = Deployment(kv_cache_dtype=KVDtype.FP8_E4M3)
>>> lay = resolve(load_model("deepseek-v3.2"), dep, RULES["sglang-0.5.8"])
>>> budget_token_bytes(lay), allocated_token_bytes(lay)
(43188, 48068)
>>> lay21 = resolve(load_model("deepseek-v3.2"), dep, RULES["sglang-0.5.21"])
>>> budget_token_bytes(lay21) == allocated_token_bytes(lay21) == 48068
True
"""

from __future__ import annotations

from kvledger.sglang.ledger import draft_token_ledger, token_ledger
from kvledger.sglang.resolve import CacheLayout
from kvledger.sglang.rules import RuleSet
from kvledger.sglang.specs import LatentRowSpec, RowLayout
from kvledger.sglang.statebudget import StateBudgetRules


def allocated_token_bytes(lay: CacheLayout) -> int:
    """C_token: what the token pools hold per token (target layers + the MTP draft's)."""
    draft = draft_token_ledger(lay)
    return token_ledger(lay).total_bytes + (draft.total_bytes if draft else 0)


def budget_token_bytes(lay: CacheLayout) -> int:
    """The cell T is sized with (module doc)."""
    rules = lay.rules
    cell = token_ledger(lay).total_bytes
    row = lay.kv_row
    if (not rules.dsa_budget_cell_is_row and isinstance(row, LatentRowSpec)
            and row.layout is RowLayout.FP8_SCALED):
        unscaled = (row.kv_lora_rank + row.qk_rope_head_dim) * 1  # fp8, B
        cell -= lay.model.num_full_layers * (row.row_bytes - unscaled)
    if rules.budget_counts_draft_layers and (draft := draft_token_ledger(lay, budgeted=True)):
        cell += draft.total_bytes
    return cell


def state_budget_rules(rules: RuleSet) -> StateBudgetRules:
    """The state-budget fields of a rule set, for `kvledger.sglang.statebudget`."""
    return StateBudgetRules(charges_padding_slot=rules.state_budget_charges_padding_slot,
                            scratch_solved_with_state=rules.verify_scratch_solved_with_state,
                            radix_off_default_slots=rules.radix_off_default_state_slots)
