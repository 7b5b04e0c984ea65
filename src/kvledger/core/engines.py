"""The serving engines kvledger plans for: a closed set, named as each engine names itself.

>>> Engine("vllm").display, [e.value for e in Engine]
('vLLM', ['sglang', 'vllm'])
"""

from __future__ import annotations

from enum import Enum


class Engine(Enum):
    SGLANG = "sglang"
    VLLM = "vllm"

    @property
    def display(self) -> str:
        """The name as the engine's own docs spell it."""
        match self:
            case Engine.SGLANG:
                return "SGLang"
            case Engine.VLLM:
                return "vLLM"
