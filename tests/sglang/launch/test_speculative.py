"""Speculative flags: SGLang's draft-token rules (arg_groups/speculative_hook.py)."""

from __future__ import annotations

import pytest

from kvledger.sglang.deploy import DeploymentError, SpecAlgorithm
from kvledger.sglang.launch import parse_flags

EAGLE_AUTO_NOTE = ("--speculative-num-steps unset: SGLang picks 3 steps, topk 1, 4 draft tokens "
                   "(5, 4, 8 for LlamaForCausalLM and Grok-1)")
CAP_NOTE = "speculative decoding: SGLang sets --max-running-requests 48 when it is not given"


def test_nextn_is_eagle_with_the_auto_choice_and_the_48_request_cap():
    # _auto_choose_speculative_params: (3, 1, 4) for all but Llama/Grok; handlers reset
    # max_running_requests to 48 when unset.
    parsed = parse_flags(["--speculative-algorithm", "NEXTN"])
    d = parsed.deployment
    assert (d.speculative_algorithm, d.speculative_num_draft_tokens) == (SpecAlgorithm.EAGLE, 4)
    assert d.max_running_requests == 48
    assert parsed.notes == (EAGLE_AUTO_NOTE, CAP_NOTE)
    assert {"speculative_algorithm", "speculative_num_draft_tokens"} <= parsed.set_fields
    assert "max_running_requests" not in parsed.set_fields


def test_explicit_request_limit_is_kept():
    parsed = parse_flags(["--speculative-algorithm", "eagle", "--max-running-requests", "64"])
    assert parsed.deployment.max_running_requests == 64
    assert parsed.notes == (EAGLE_AUTO_NOTE,)


@pytest.mark.parametrize(
    ("flags", "draft_tokens", "notes"),
    [
        # topk 1: SGLang forces draft tokens = steps + 1
        (["--speculative-num-steps", "3", "--speculative-eagle-topk", "1"], 4, ()),
        (["--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
          "--speculative-num-draft-tokens", "8"], 4,
         ("--speculative-num-draft-tokens 8: SGLang uses steps + 1 = 4 draft tokens with topk 1",)),
        (["--speculative-num-steps", "5", "--speculative-eagle-topk", "4",
          "--speculative-num-draft-tokens", "8"], 8, ()),
    ],
)
def test_eagle_parameters(flags, draft_tokens, notes):
    parsed = parse_flags(["--speculative-algorithm", "EAGLE3", "--max-running-requests", "8",
                          *flags])
    assert parsed.deployment.speculative_num_draft_tokens == draft_tokens
    assert parsed.notes == notes


def test_standalone_auto_choice_has_no_llama_exception():
    parsed = parse_flags(["--speculative-algorithm", "STANDALONE"])
    assert parsed.deployment.speculative_num_draft_tokens == 4
    assert parsed.notes == (CAP_NOTE,)


def test_ngram_dflash_dspark_defaults():
    ngram = parse_flags(["--speculative-algorithm", "NGRAM"])
    assert ngram.deployment.speculative_num_draft_tokens == 12  # _handle_ngram
    assert ngram.notes[0] == "NGRAM: SGLang's default of 12 draft tokens"
    dflash = parse_flags(["--speculative-algorithm", "DFLASH"])
    assert dflash.deployment.speculative_num_draft_tokens == 16  # _handle_dflash fallback
    assert dflash.notes[0].startswith("DFLASH: SGLang reads the block size from the draft")
    dspark = parse_flags(["--speculative-algorithm", "DSPARK", "--speculative-num-draft-tokens",
                          "5"])
    assert dspark.deployment.speculative_num_draft_tokens == 5


ERRORS = [
    (["--speculative-num-draft-tokens", "4"],
     "--speculative-num-draft-tokens 4: has no effect without --speculative-algorithm"),
    (["--speculative-algorithm", "MEDUSA"], "--speculative-algorithm 'MEDUSA': expected one of "
     "EAGLE, EAGLE3, STANDALONE, NGRAM, DFLASH, DSPARK, NEXTN"),
    (["--speculative-algorithm", "EAGLE", "--speculative-eagle-topk", "4"],
     "--speculative-eagle-topk 4: needs --speculative-num-steps too (SGLang picks all three "
     "itself when steps is unset)"),
    (["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"],
     "--speculative-num-steps 3: needs --speculative-eagle-topk too"),
    (["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
      "--speculative-eagle-topk", "4"], "--speculative-eagle-topk 4: with topk > 1 SGLang needs "
     "--speculative-num-draft-tokens too"),
    (["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "0",
      "--speculative-eagle-topk", "1"], "--speculative-num-steps 0: expected a positive integer"),
    (["--speculative-algorithm", "DFLASH", "--speculative-dflash-block-size", "8",
      "--speculative-num-draft-tokens", "16"], "--speculative-dflash-block-size 8: must equal "
     "--speculative-num-draft-tokens 16 for DFLASH"),
    (["--speculative-algorithm", "DSPARK"], "--speculative-algorithm DSPARK: SGLang reads gamma "
     "from the draft checkpoint, which kvledger cannot; pass --speculative-dspark-block-size"),
    (["--speculative-algorithm", "DSPARK", "--speculative-dspark-block-size", "3",
      "--speculative-num-draft-tokens", "5"],
     "--speculative-num-draft-tokens 5: DSPARK needs gamma + 1 = 4 draft tokens"),
    (["--speculative-algorithm", "DSPARK", "--speculative-num-draft-tokens", "1"],
     "--speculative-num-draft-tokens 1: DSPARK needs at least 2 (gamma + 1)"),
    (["--speculative-algorithm", "EAGLE", "--speculative-dflash-block-size", "8"],
     "--speculative-dflash-block-size 8: applies to --speculative-algorithm DFLASH only, "
     "not EAGLE"),
]


@pytest.mark.parametrize(("argv", "message"), ERRORS)
def test_speculative_errors_name_the_flag(argv, message):
    with pytest.raises(DeploymentError) as caught:
        parse_flags(argv)
    assert str(caught.value) == message
