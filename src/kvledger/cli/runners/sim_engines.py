"""`simulate --engine vllm` and `--engine sglang,vllm`: vLLM's serving run, alone or beside
SGLang's on the same trace and deployment memory.

Both plans come from one set of flags (`kvledger.sizing.flag_plans`, as `plan --engine
sglang,vllm`): the same model, GPU and memory terms. Both runs are timed by one step-time
model, SGLang simulate's (`sim.setup.step_timer` over the SGLang plan of that model and
deployment), so their latencies compare; with `--engine vllm` alone that SGLang plan is
planned from vLLM's flags only to build the timer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kvledger.cli.app import console, emit_json, err_console
from kvledger.cli.runners.simulation import load_inputs
from kvledger.core.engines import Engine

if TYPE_CHECKING:
    from kvledger.cli.options.plan import PlanInputs
    from kvledger.cli.options.sim import SimInputs
    from kvledger.sglang.plan import SglangPlan
    from kvledger.sim.vllm_summary import VllmSimSummary
    from kvledger.sim.workload import Workload
    from kvledger.vllm.plan import VllmPlan


def _plans(inputs: PlanInputs, engine: str, extra: list[str]
           ) -> tuple[tuple[Engine, ...], SglangPlan, VllmPlan, tuple[str, ...]]:
    from kvledger.cli.options.plan import choose_engines
    from kvledger.core.terms import MemoryTerms
    from kvledger.sizing.flag_plans import PLANNERS, PlanAsk, plans_from_flags
    from kvledger.sizing.translate import sglang_from_vllm

    choice = choose_engines(engine, inputs.rules, extra)
    engines = tuple(Engine(e) for e in choice.engines)
    if len(engines) > 1 and inputs.gpu is None:
        raise ValueError("--gpu: --engine sglang,vllm needs the GPU (one deployment's memory "
                         "for both engines; --available-gib means a different figure to each)")
    ask = PlanAsk(model=inputs.model, family=inputs.family, gpu=inputs.gpu,
                  gpu_memory_gib=inputs.gpu_memory_gib,
                  terms=MemoryTerms(weights_gib=inputs.weights_gib,
                                    available_gib=inputs.available_gib),
                  sglang_rules=choice.sglang_rules, vllm_rules=choice.vllm_rules,
                  host_state_share=inputs.hicache_state_share)
    plans, ignored = plans_from_flags(extra, engines, ask)
    by_engine = {p.engine: p for p in plans}
    vplan = by_engine[Engine.VLLM]
    splan = by_engine.get(Engine.SGLANG)
    if splan is None:  # the timer only: the same model on the same TP
        splan = PLANNERS[Engine.SGLANG](vplan.model, sglang_from_vllm(vplan.deployment),
                                        PlanAsk(gpu=inputs.gpu, sglang_rules=choice.sglang_rules))
    return engines, splan, vplan, ignored


def serve_vllm(vplan: VllmPlan, workload: Workload, *, timer, timing: str,
               max_num_batched_tokens: int | None, steps_in_flight: int) -> VllmSimSummary:
    from kvledger.sim.vllm_serving import vllm_serve
    from kvledger.sim.vllm_setup import vllm_sim_setup
    from kvledger.sim.vllm_summary import vllm_summary

    setup = vllm_sim_setup(vplan, timer=timer, max_num_batched_tokens=max_num_batched_tokens,
                           steps_in_flight=steps_in_flight)
    cfg = setup.config
    start = time.perf_counter()
    result = vllm_serve(workload.requests, cfg)
    return vllm_summary(result, workload=workload.name, num_requests=len(workload.requests),
                        block_tokens=cfg.groups[0].block_size_tokens,
                        attention_group=setup.attention_group,
                        num_blocks=cfg.num_blocks, num_mamba_groups=setup.num_mamba_groups,
                        max_num_seqs=cfg.max_num_seqs,
                        max_num_batched_tokens=cfg.max_num_batched_tokens,
                        bytes_per_block=setup.bytes_per_block, timing=timing,
                        wall_s=time.perf_counter() - start, notes=setup.notes)


def run_engines(inputs: PlanInputs, work: SimInputs, extra: list[str], *, engine: str,
                max_num_batched_tokens: int | None, steps_in_flight: int, json: bool,
                progress: bool) -> None:
    from rich.progress import Progress, SpinnerColumn, TimeElapsedColumn

    from kvledger.core.envelope import envelope
    from kvledger.report import hit_rates
    from kvledger.report.sim_json import sim_body
    from kvledger.report.vllm_sim_json import sglang_row, vllm_row, vllm_sim_body
    from kvledger.report.vllm_sim_view import engines_table, vllm_sim_table
    from kvledger.sim.replay import simulate
    from kvledger.sim.setup import step_timer

    work.check()
    engines, splan, vplan, ignored = _plans(inputs, engine, extra)
    config = work.config(splan)
    timer, timing = step_timer(splan, config)
    bar = Progress(SpinnerColumn(), "[progress.description]{task.description}",
                   TimeElapsedColumn(), console=err_console, transient=True,
                   disable=not progress)
    with bar:
        task = bar.add_task("loading the workload", total=None)
        workload = load_inputs(work)
        sglang = None
        if Engine.SGLANG in engines:
            bar.update(task, description=f"SGLang on {workload.name}")
            sglang_run = simulate(splan, workload, config)
            sglang = sglang_run.summary
        bar.update(task, description=f"vLLM on {workload.name}")
        vllm = serve_vllm(vplan, workload, timer=timer, timing=timing,
                          max_num_batched_tokens=max_num_batched_tokens,
                          steps_in_flight=steps_in_flight)
    notes = [*vplan.notes, *vllm.notes]
    if sglang is None:
        if json:
            emit_json(envelope("simulate-vllm", vllm_sim_body(vllm), ignored_flags=ignored,
                               notes=[*notes, hit_rates.SIMULATE_VLLM]))
            return
        console.print(vllm_sim_table(vllm))
    else:
        from kvledger.sim.fleet.capacity import queue_grows

        rows = [sglang_row(sglang, saturated=queue_grows(sglang_run.requests)), vllm_row(vllm)]
        if json:
            from dataclasses import asdict

            body = {"engines": {"sglang": sim_body(sglang), "vllm": vllm_sim_body(vllm)},
                    "comparison": [asdict(r) for r in rows]}
            emit_json(envelope("simulate-engines", body, ignored_flags=ignored,
                               notes=[*splan.notes, *sglang.notes, *notes, hit_rates.SIMULATE,
                                      hit_rates.SIMULATE_VLLM]))
            return
        console.print(engines_table(rows, workload=workload.name, timing=timing))
    for note in notes:
        console.print(f"[dim]{note}[/]")
    for flag in ignored:
        console.print(f"[yellow]ignored flag: {flag}[/]")
