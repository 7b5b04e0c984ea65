"""Speculative decoding from flags: which algorithm, and how many draft tokens per step.

SGLang turns speculative decoding on when --speculative-algorithm is given and fills in the
draft parameters in arg_groups/speculative_hook.py; these are its rules:
- EAGLE family (EAGLE, NEXTN = EAGLE, EAGLE3, STANDALONE): with --speculative-num-steps unset,
  `_auto_choose_speculative_params` picks (steps, topk, draft tokens) = (3, 1, 4), except
  (5, 4, 8) for LlamaForCausalLM and Grok-1 under EAGLE (flags cannot tell; noted), and it
  asserts topk and draft tokens are unset too. With topk 1 the draft tokens are steps + 1
  whatever was given.
- NGRAM: 12 draft tokens unless given.
- DFLASH: the block size (--speculative-dflash-block-size, which must equal
  --speculative-num-draft-tokens when both are given), else the draft checkpoint's, else 16.
- DSPARK: gamma + 1, gamma = --speculative-dspark-block-size; else the checkpoint's gamma,
  which kvledger cannot read, so one of the two flags is required.

>>> speculation({"speculative_algorithm": SpecAlgorithm.EAGLE}, {}).draft_tokens
4
>>> spec = {"speculative_algorithm": SpecAlgorithm.EAGLE, "speculative_num_steps": 2,
...         "speculative_eagle_topk": 1}
>>> speculation(spec, {}).draft_tokens
3
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kvledger.sglang.deploy import DeploymentError, SpecAlgorithm

STEPS = "speculative_num_steps"
TOPK = "speculative_eagle_topk"
DRAFT = "speculative_num_draft_tokens"
DFLASH_BLOCK = "speculative_dflash_block_size"
DSPARK_BLOCK = "speculative_dspark_block_size"
PARAMETERS = (STEPS, TOPK, DRAFT, DFLASH_BLOCK, DSPARK_BLOCK)

NGRAM_DRAFT_TOKENS = 12  # _handle_ngram
DFLASH_FALLBACK_BLOCK = 16  # _handle_dflash, when the draft config has no block size
MAX_RUNNING_REQUESTS = 48  # every speculative handler, when --max-running-requests is unset


@dataclass(frozen=True, slots=True)
class Speculation:
    algorithm: SpecAlgorithm | None
    draft_tokens: int  # 0: off
    notes: tuple[str, ...] = ()


Given = Mapping[str, object]
Spelled = Mapping[str, str]


def _flag(key: str, spelled: Spelled) -> str:
    return spelled.get(key, "--" + key.replace("_", "-"))


def _eagle(given: Given, spelled: Spelled, notes: list[str]) -> int:
    steps, topk, draft = given.get(STEPS), given.get(TOPK), given.get(DRAFT)
    if steps is None:
        for key in (TOPK, DRAFT):
            if key in given:
                raise DeploymentError(f"{_flag(key, spelled)}: needs --speculative-num-steps "
                                      "too (SGLang picks all three itself when steps is unset)")
        if given["speculative_algorithm"] is not SpecAlgorithm.STANDALONE:
            notes.append("--speculative-num-steps unset: SGLang picks 3 steps, topk 1, 4 draft "
                         "tokens (5, 4, 8 for LlamaForCausalLM and Grok-1)")
        return 4
    if topk is None:
        raise DeploymentError(f"{_flag(STEPS, spelled)}: needs --speculative-eagle-topk too")
    if topk == 1:
        if draft is not None and draft != steps + 1:
            notes.append(f"{_flag(DRAFT, spelled)}: SGLang uses steps + 1 = {steps + 1} draft "
                         "tokens with topk 1")
        return steps + 1
    if draft is None:
        raise DeploymentError(f"{_flag(TOPK, spelled)}: with topk > 1 SGLang needs "
                              "--speculative-num-draft-tokens too")
    return draft


def _ngram(given: Given, spelled: Spelled, notes: list[str]) -> int:
    if DRAFT not in given:
        notes.append(f"NGRAM: SGLang's default of {NGRAM_DRAFT_TOKENS} draft tokens")
    return given.get(DRAFT, NGRAM_DRAFT_TOKENS)


def _dflash(given: Given, spelled: Spelled, notes: list[str]) -> int:
    block, draft = given.get(DFLASH_BLOCK), given.get(DRAFT)
    if block is not None and draft is not None and block != draft:
        raise DeploymentError(f"{_flag(DFLASH_BLOCK, spelled)}: must equal "
                              f"{_flag(DRAFT, spelled)} for DFLASH")
    if block is None and draft is None:
        notes.append("DFLASH: SGLang reads the block size from the draft checkpoint; assumed "
                     f"its fallback {DFLASH_FALLBACK_BLOCK} (pin it with "
                     "--speculative-dflash-block-size)")
        return DFLASH_FALLBACK_BLOCK
    return block if block is not None else draft


def _dspark(given: Given, spelled: Spelled, notes: list[str]) -> int:
    gamma, draft = given.get(DSPARK_BLOCK), given.get(DRAFT)
    if gamma is not None:
        if draft is not None and draft != gamma + 1:
            raise DeploymentError(f"{_flag(DRAFT, spelled)}: DSPARK needs gamma + 1 = "
                                  f"{gamma + 1} draft tokens")
        return gamma + 1
    if draft is None:
        raise DeploymentError("--speculative-algorithm DSPARK: SGLang reads gamma from the draft "
                              "checkpoint, which kvledger cannot; pass "
                              "--speculative-dspark-block-size")
    if draft < 2:
        raise DeploymentError(f"{_flag(DRAFT, spelled)}: DSPARK needs at least 2 (gamma + 1)")
    return draft


_DRAFT_TOKENS: dict[SpecAlgorithm, Callable[[Given, Spelled, list[str]], int]] = {
    SpecAlgorithm.EAGLE: _eagle,
    SpecAlgorithm.EAGLE3: _eagle,
    SpecAlgorithm.STANDALONE: _eagle,
    SpecAlgorithm.NGRAM: _ngram,
    SpecAlgorithm.DFLASH: _dflash,
    SpecAlgorithm.DSPARK: _dspark,
}
_ONLY_FOR = {DFLASH_BLOCK: SpecAlgorithm.DFLASH, DSPARK_BLOCK: SpecAlgorithm.DSPARK}


def speculation(given: Given, spelled: Spelled) -> Speculation:
    """Algorithm and draft tokens from the parsed speculative flags (keys: SGLang's field
    names); `spelled` maps a key to the flag as the user wrote it, for errors."""
    algorithm = given.get("speculative_algorithm")
    for key in PARAMETERS:
        value = given.get(key)
        if value is not None and value < 1:
            raise DeploymentError(f"{_flag(key, spelled)}: expected a positive integer")
    if algorithm is None:
        stray = [key for key in PARAMETERS if key in given]
        if stray:
            raise DeploymentError(f"{_flag(stray[0], spelled)}: has no effect without "
                                  "--speculative-algorithm")
        return Speculation(None, 0)
    for key, only in _ONLY_FOR.items():
        if key in given and algorithm is not only:
            raise DeploymentError(f"{_flag(key, spelled)}: applies to --speculative-algorithm "
                                  f"{only.value} only, not {algorithm.value}")
    notes: list[str] = []
    draft_tokens = _DRAFT_TOKENS[algorithm](given, spelled, notes)
    return Speculation(algorithm, draft_tokens, tuple(notes))
