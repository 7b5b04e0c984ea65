"""Prefill/decode roles (`--disaggregation-mode`): what each role changes before sizing.

Followed: arg_groups/pd_disaggregation_hook.py, `handle_pd_disaggregation` (sglang 0.5.21 and
0.5.23 wheels), which runs early in arg_groups/pipeline.py `run_resolution_pipeline`: before
the memory hook and before the speculative hook fills in --max-running-requests 48.

1. Decode: the radix cache is forced off ("KV cache is forced as chunk cache for decode
   server"; 0.5.23: "Radix cache is disabled for decode server") unless
   --disaggregation-decode-enable-radix-cache, so a hybrid's planning ratio
   (`_calculate_mamba_ratio`) drops to 1 and the ratio's K caps N at K itself.
   0.5.21 refuses the decode radix cache with speculative decoding other than DSPARK
   (rule field `decode_radix_refuses_speculative`); 0.5.23 dropped that check.
2. Decode: extra request rows for requests still in transfer
   (`disaggregation_decode_extra_slots`): when unset, 2 × the per-worker limit if the
   --max-running-requests given (not the speculative default, set later) is at most 32 per
   worker, else 0. Per worker is the limit // --dp-size (0.5.21, 0 below the DP size; 0.5.23
   floors it at 1 and divides by the DP ranks, replicas × attention-DP groups, one of them 1:
   `RuleSet.decode_extra_slots_floor_one`).
3. Prefill: nothing changes before sizing; the speculative verify scratch is a rule-set
   question at sizing time (`RuleSet.prefill_reserves_verify_scratch`).

>>> from kvledger.sglang.rules import RULES
>>> from kvledger.sglang.deploy import DisaggMode
>>> dep, notes = resolve_role(Deployment(disaggregation_mode=DisaggMode.DECODE,
...                           max_running_requests=16), RULES["sglang-0.5.21"])
>>> dep.disable_radix_cache, dep.disaggregation_decode_extra_slots
(True, 32)
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.sglang.deploy import Deployment, DeploymentError, SpecAlgorithm
from kvledger.sglang.rules import RuleSet

# handle_pd_disaggregation: per-worker limits up to this reserve 2× as extra decode rows.
DECODE_EXTRA_SLOTS_MAX_PER_WORKER = 32
DECODE_EXTRA_SLOTS_FACTOR = 2


def default_extra_slots(max_running_requests: int | None, dp_size: int, *,
                        floor_one: bool = False) -> int:
    """SGLang's default `disaggregation_decode_extra_slots` for a decode server;
    `floor_one`: the rule set floors the per-worker limit at 1.

    >>> default_extra_slots(64, 2), default_extra_slots(256, 1), default_extra_slots(None, 1)
    (64, 0, 0)
    >>> default_extra_slots(4, 8), default_extra_slots(4, 8, floor_one=True)
    (0, 2)
    """
    if max_running_requests is None:
        return 0
    per_worker = max_running_requests // max(1, dp_size)
    if floor_one:
        per_worker = max(1, per_worker)
    return per_worker * DECODE_EXTRA_SLOTS_FACTOR if (
        per_worker <= DECODE_EXTRA_SLOTS_MAX_PER_WORKER) else 0


def resolve_role(dep: Deployment, rules: RuleSet) -> tuple[Deployment, list[str]]:
    """The deployment as the role leaves it, and notes saying what changed.

    Runs before the speculative default of 48 requests is applied, as in SGLang."""
    notes: list[str] = []
    if not dep.disaggregation_mode.is_decode:
        return dep, notes
    if dep.enable_hierarchical_cache:
        raise DeploymentError("--enable-hierarchical-cache with --disaggregation-mode decode: "
                              "decode-side KV offload is a different SGLang feature "
                              "(--disaggregation-decode-enable-offload-kvcache) that kvledger "
                              "does not model")
    if dep.disaggregation_decode_enable_radix_cache:
        if (rules.decode_radix_refuses_speculative and dep.speculative_algorithm is not None
                and dep.speculative_algorithm is not SpecAlgorithm.DSPARK):
            raise DeploymentError(
                "--disaggregation-decode-enable-radix-cache: SGLang "
                f"({rules.name}) refuses it with speculative decoding: \"--disaggregation-"
                "decode-enable-radix-cache is incompatible with speculative decoding "
                f"(--speculative-algorithm {dep.speculative_algorithm.value})\"")
        notes.append("decode role: radix cache kept on (--disaggregation-decode-enable-radix-cache)")
    elif not dep.disable_radix_cache:
        notes.append("decode role: SGLang forces the radix cache off (handle_pd_disaggregation), "
                     "so one state slot per request")
        dep = replace(dep, disable_radix_cache=True)
    if dep.disaggregation_decode_extra_slots is None:
        extra = default_extra_slots(dep.max_running_requests, dep.dp_size,
                                    floor_one=rules.decode_extra_slots_floor_one)
        dep = replace(dep, disaggregation_decode_extra_slots=extra)
        if extra:
            notes.append(f"decode role: {extra} extra request rows pre-allocated for requests "
                         "in transfer (2 × the per-worker --max-running-requests ≤ 32)")
    return dep, notes


def charged_draft_tokens(dep: Deployment, rules: RuleSet) -> int:
    """Draft tokens the state budget reserves verify scratch for: none on a prefill server
    under a rule set whose budget skips it (0.5.23 `_pd_prefill_skips_mamba_spec_state`).

    >>> from kvledger.sglang.rules import RULES
    >>> from kvledger.sglang.deploy import DisaggMode
    >>> prefill = Deployment(disaggregation_mode=DisaggMode.PREFILL,
    ...                      speculative_num_draft_tokens=4, max_running_requests=48)
    >>> charged_draft_tokens(prefill, RULES["sglang-0.5.21"]), charged_draft_tokens(prefill, RULES["sglang-0.5.23"])
    (4, 0)
    """
    if dep.disaggregation_mode.is_prefill and not rules.prefill_reserves_verify_scratch:
        return 0
    return dep.speculative_num_draft_tokens
