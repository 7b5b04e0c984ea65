"""One plan on the terminal, whichever engine made it: that engine's own tables.

Each engine's plan has its own view (`plan_view` for SGLang's ledgers and K/T/N, `vllm_view`
for vLLM's groups and blocks); `render_any` picks it by the plan's `engine`, so a command
renders a plan without asking which engine made it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rich.console import Console

from kvledger.core.engines import Engine
from kvledger.core.plan import EnginePlan
from kvledger.report.plan_view import render_plan
from kvledger.report.vllm_view import render_vllm_plan

RENDERERS: Mapping[Engine, Callable[..., None]] = {
    Engine.SGLANG: render_plan, Engine.VLLM: render_vllm_plan}


def render_any(plan: EnginePlan, console: Console, ignored: tuple[str, ...] = ()) -> None:
    RENDERERS[plan.engine](plan, console, ignored)
