"""The rule registry that SGLang's and vLLM's release tables share."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kvledger.core.registry import RuleRegistry
from kvledger.sglang.rules import RULES, RuleSet, get_rules
from kvledger.vllm.rules import RULES as VLLM_RULES
from kvledger.vllm.rules import VllmRules, get_vllm_rules


@dataclass(frozen=True)
class Toy:
    name: str


def test_both_engines_tables_are_registries_with_their_default():
    assert RULES.names == ("sglang-0.5.8", "sglang-0.5.9", "sglang-0.5.21", "sglang-0.5.23")
    assert RULES.default == "sglang-0.5.21" and RULES.default_rules is RULES["sglang-0.5.21"]
    assert VLLM_RULES.names == ("vllm-0.13", "vllm-0.24", "vllm-0.27", "vllm-0.32", "vllm-0.33")
    assert VLLM_RULES.default == "vllm-0.33"
    assert isinstance(get_rules("sglang-0.5.23"), RuleSet)
    assert isinstance(get_vllm_rules("vllm-0.13"), VllmRules)
    assert "vllm-0.13" in VLLM_RULES and "vllm-0.13" not in RULES


def test_unknown_release_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"^--rules 'sglang-9': expected one of sglang-0\.5\.8, "
                                         r"sglang-0\.5\.9, sglang-0\.5\.21, sglang-0\.5\.23$"):
        get_rules("sglang-9")
    with pytest.raises(ValueError, match=r"^--rules 'vllm-9': expected one of vllm-0\.13, "
                                         r"vllm-0\.24, vllm-0\.27, vllm-0\.32, vllm-0\.33 "
                                         r"for --engine vllm$"):
        get_vllm_rules("vllm-9")


def test_a_repeated_name_or_a_missing_default_fails_at_declaration():
    with pytest.raises(ValueError, match="'a' declared twice"):
        RuleRegistry((Toy("a"), Toy("a")), default="a")
    with pytest.raises(ValueError, match="default rule set 'c' is not among a, b"):
        RuleRegistry((Toy("a"), Toy("b")), default="c")


def test_it_reads_as_a_mapping_in_declaration_order():
    reg = RuleRegistry((Toy("b"), Toy("a")), default="a")
    assert list(reg) == ["b", "a"] and len(reg) == 2
    assert dict(reg) == {"b": Toy("b"), "a": Toy("a")}
    with pytest.raises(KeyError):
        reg["c"]
