"""`kvledger simulate --engine vllm --compare`: vLLM's cache knobs and kvledger's state
policies on one trace and one deployment memory (`kvledger.sim.vllm_compare`), timed by the
same step-time model as `simulate --engine vllm` (`sim_engines`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.cli.app import console, emit_json, err_console
from kvledger.cli.runners.simulation import load_inputs

if TYPE_CHECKING:
    from kvledger.cli.options.plan import PlanInputs
    from kvledger.cli.options.sim import SimInputs
    from kvledger.core.runner import Runner


def run_vllm_compare(inputs: PlanInputs, work: SimInputs, extra: list[str], *,
                     max_num_batched_tokens: int | None, steps_in_flight: int, json: bool,
                     progress: bool, runner: Runner) -> None:
    from kvledger.cli.runners.run_bar import RunBar
    from kvledger.cli.runners.sim_engines import _plans
    from kvledger.core.envelope import envelope
    from kvledger.report import hit_rates
    from kvledger.report.vllm_compare_view import (
        comparison_body,
        comparison_table,
        default_checkpoint_blocks,
    )
    from kvledger.sim.setup import step_timer
    from kvledger.sim.vllm_compare import compare_vllm_settings, default_settings
    from kvledger.sim.vllm_setup import vllm_sim_setup

    work.check()
    _, splan, vplan, ignored = _plans(inputs, "vllm", extra)
    timer, timing = step_timer(splan, work.config(splan))
    setup = vllm_sim_setup(vplan, timer=timer, max_num_batched_tokens=max_num_batched_tokens,
                           steps_in_flight=steps_in_flight)
    settings = default_settings(setup)
    workload = load_inputs(work)
    with RunBar(f"vLLM settings on {workload.name}", console=err_console,
                enabled=progress) as bar:
        comparison = compare_vllm_settings(
            setup, workload, available_bytes=vplan.capacity.available_bytes, timing=timing,
            settings=settings, runner=runner, observer=bar)
    notes = [*vplan.notes, *setup.notes]
    if json:
        body = comparison_body(comparison,
                               checkpoint_default=default_checkpoint_blocks(setup.config.groups))
        emit_json(envelope("simulate-vllm-compare", body, ignored_flags=ignored,
                           notes=[*notes, hit_rates.SIMULATE_VLLM]))
        return
    console.print(comparison_table(comparison))
    for note in notes:
        console.print(f"[dim]{note}[/]")
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")
