"""`kvledger replay`: a trace replayed request by request through SGLang's tree rules, or with
`--engine vllm` through vLLM 0.33's block-hash prefix cache (`cli.runners.replay_vllm`)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any

import typer

from kvledger.cli.app import command, console, emit_json, err_console, user_errors
from kvledger.cli.options.groups import option_group
from kvledger.cli.options.plan import JsonOpt, PlanInputs, plan_from
from kvledger.cli.runners.replay_vllm import VllmReplayOptions, vllm_replay_spec
from kvledger.core.engines import Engine
from kvledger.report.hit_rates import REPLAY as REPLAY_NOTE
from kvledger.report.hit_rates import REPLAY_VLLM
from kvledger.sequential.spec import Checkpoints, Components, MatchKey, ReplaySpec
from kvledger.sequential.vllm_spec import Scheduler
from kvledger.sglang.rules import DEFAULT_RULES


def _spec(inputs: PlanInputs, extra: list[str], *, pool_tokens: int | None,
          state_slots: int | None, page_size: int | None, components: Components | None,
          checkpoints: Checkpoints | None,
          match_key: MatchKey) -> tuple[ReplaySpec, list[str]]:
    """Pool sizes from --pool-tokens/--state-slots, or from the plan of the given flags."""
    notes: list[str] = []
    options = {"match_key": match_key}
    if pool_tokens is not None:
        planned = _planned(inputs)
        if planned or extra:
            given = ", ".join(planned + extra[:1])
            raise ValueError(f"--pool-tokens: give the pool sizes or a plan's flags, not both "
                             f"(also got {given})")
        kind = components or Components.FULL_MAMBA
        if kind is Components.FULL_MAMBA and state_slots is None:
            raise ValueError("--state-slots: a full+mamba replay with --pool-tokens needs the "
                             "state pool's size too")
        spec = ReplaySpec(page_tokens=64 if page_size is None else page_size,
                          pool_tokens=pool_tokens, state_slots=state_slots, components=kind,
                          checkpoints=_checkpoints(checkpoints, kind), rules=inputs.rules,
                          **options)
        return spec, notes
    if state_slots is not None:
        raise ValueError("--state-slots: needs --pool-tokens (without it both come from the plan)")
    args = list(extra) + ([] if page_size is None else ["--page-size", str(page_size)])
    plan, ignored = plan_from(inputs, args)
    lay, cap = plan.layout, plan.capacity
    notes += [f"ignored flag: {flag}" for flag in ignored]
    if page_size is not None and lay.page_tokens != page_size:
        notes.append(f"--page-size {page_size}: the plan uses {lay.page_tokens}-token pages "
                     f"for {lay.model.name}")
    hybrid = lay.model.is_hybrid
    kind = components or (Components.FULL_MAMBA if hybrid else Components.FULL)
    if kind is Components.FULL_MAMBA and not hybrid:
        raise ValueError(f"--components full+mamba: {lay.model.name} has no linear-attention "
                         "layers (use --components full)")
    spec = ReplaySpec(page_tokens=lay.page_tokens, pool_tokens=cap.max_total_tokens,
                      state_slots=cap.state_slots if kind is Components.FULL_MAMBA else None,
                      components=kind, checkpoints=_checkpoints(checkpoints, kind),
                      rules=lay.rules.name, **options)
    notes.append(f"plan: {lay.model.name}, {cap.max_total_tokens:,} KV tokens"
                 + (f", {cap.state_slots:,} state slots" if spec.has_state else ""))
    return spec, notes


def _planned(inputs: PlanInputs) -> list[str]:
    """The plan options given (the rule set has a default, so it never counts)."""
    return ["--" + f.name.replace("_", "-") for f in fields(inputs)
            if f.name != "rules" and getattr(inputs, f.name) is not None]


def _checkpoints(asked: Checkpoints | None, kind: Components) -> Checkpoints:
    if asked is not None:
        return asked
    return Checkpoints.BRANCH if kind is Components.FULL_MAMBA else Checkpoints.END


def _render(doc: dict[str, Any], notes: list[str]) -> None:
    from rich.table import Table

    rules = f"{doc['rules']} tree rules" if "rules" in doc else "vLLM 0.33 block cache"
    table = Table(title=f"sequential replay {doc['run']} ({rules})")
    table.add_column("field")
    table.add_column("value", justify="right")
    for key, value in doc.items():
        if key in ("run", "rules", "engine") or value is None:
            continue
        shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
        table.add_row(key.replace("_", " "), shown)
    console.print(table)
    for note in notes:
        console.print(f"[yellow]{note}[/]")


@command(help="Replay a Mooncake trace request by request (in file order, prompts only, no "
         "concurrency) through the prefix tree under SGLang's tree rules, as SGLang's own "
         "RadixCache / UnifiedRadixCache would on one request at a time, or with --engine vllm "
         "through vLLM 0.33's block-hash prefix cache (one block pool for every group): "
         "per-request hit lengths, evictions, and the sha1 of the hit array. SGLang's pools "
         "come from --pool-tokens / --state-slots or from a plan's flags (as for `kvledger "
         "plan`); vLLM's from --pool-tokens and --block-size.")
@option_group(PlanInputs, "inputs")
def replay(ctx: typer.Context, inputs: PlanInputs,
           trace: Annotated[Path, typer.Option(
               "--trace", help="Mooncake FAST'25 JSONL trace.", exists=True, dir_okay=False)],
           engine: Annotated[Engine, typer.Option(
               "--engine", help="sglang: the radix tree under --rules; vllm: vLLM 0.33's "
               "block-hash prefix cache.")] = Engine.SGLANG,
           pool_tokens: Annotated[int | None, typer.Option(
               "--pool-tokens", help="KV pool size in tokens (SGLang's max_total_tokens; "
               "default: the plan's). With --engine vllm: T // B + 1 blocks shared by every "
               "group, one block per cached state.")] = None,
           state_slots: Annotated[int | None, typer.Option(
               "--state-slots", help="State pool slots (with --pool-tokens).")] = None,
           page_size: Annotated[int | None, typer.Option(
               "--page-size", help="Tokens per page (default 64 with --pool-tokens, else the "
               "plan's).")] = None,
           components: Annotated[Components | None, typer.Option(
               "--components", help="full (RadixCache, KV only) or full+mamba (default for "
               "hybrid models).")] = None,
           checkpoints: Annotated[Checkpoints | None, typer.Option(
               "--checkpoints", help="end: one state at each prompt's aligned end; branch "
               "(default with full+mamba): also SGLang's branching checkpoint.")] = None,
           match_key: Annotated[MatchKey | None, typer.Option(
               "--match-key", help="Match the whole prompt (default), or all but its last "
               "token (as SGLang's scheduler does).")] = None,
           block_size: Annotated[int | None, typer.Option(
               "--block-size", help="--engine vllm: tokens per block, every group (default "
               "64).")] = None,
           checkpoint_blocks: Annotated[int | None, typer.Option(
               "--checkpoint-blocks", help="--engine vllm: num_prefill_checkpoint_blocks, 1 "
               "(default: the state at ⌊(L−1)/B⌋·B is exported mid-chunk) or 0 (the scheduler "
               "stops a chunk there).")] = None,
           retention: Annotated[str | None, typer.Option(
               "--retention", help="--engine vllm: prefix_cache_retention_interval in tokens "
               "(default 0: states only at the replay boundary and the junction), or dense "
               "(every state block).")] = None,
           scheduler: Annotated[Scheduler | None, typer.Option(
               "--scheduler", help="--engine vllm: async (default, two steps in flight) or "
               "sync.")] = None,
           mamba_groups: Annotated[int | None, typer.Option(
               "--mamba-groups", help="--engine vllm: Mamba KV-cache groups; a cached state "
               "costs one block in each (default 1, as the reference cells; GLM-5.3-Flash's "
               "layout has 4).")] = None,
           out: Annotated[Path | None, typer.Option(
               "--out", help="Write the per-request hit lengths (int32 .npy) here.",
               dir_okay=False)] = None,
           no_progress: Annotated[bool, typer.Option(
               "--no-progress", help="No progress bar on stderr.")] = False,
           json: JsonOpt = False) -> None:
    import numpy as np
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from kvledger.core.inputs import bounded_lines, check_regular
    from kvledger.sequential.replay import replay as run_replay
    from kvledger.sequential.summary import summary
    from kvledger.sim.trace import parse_trace_lines

    with user_errors():
        if out is not None and out.suffix != ".npy":
            raise ValueError(f"--out {out}: expected a .npy file name")
        vllm_options = {"--block-size": block_size, "--checkpoint-blocks": checkpoint_blocks,
                        "--retention": retention, "--scheduler": scheduler,
                        "--mamba-groups": mamba_groups}
        if engine is Engine.VLLM:
            from kvledger.sequential.vllm_replay import vllm_replay
            from kvledger.sequential.vllm_summary import vllm_summary

            spec = vllm_replay_spec(
                VllmReplayOptions(block_size=block_size, pool_tokens=pool_tokens,
                                  components=components, checkpoint_blocks=checkpoint_blocks,
                                  retention=retention, scheduler=scheduler,
                                  mamba_groups=mamba_groups),
                sglang_options={"--state-slots": state_slots, "--page-size": page_size,
                                "--checkpoints": checkpoints, "--match-key": match_key,
                                "--rules": None if inputs.rules == DEFAULT_RULES else inputs.rules},
                planned=_planned(inputs), extra=ctx.args)
            notes, run, summarize = [REPLAY_VLLM], vllm_replay, vllm_summary
        else:
            for flag, value in vllm_options.items():
                if value is not None:
                    raise ValueError(f"{flag}: a vLLM replay option; needs --engine vllm "
                                     "(SGLang's replay takes --page-size)")
            spec, notes = _spec(inputs, ctx.args, pool_tokens=pool_tokens,
                                state_slots=state_slots, page_size=page_size,
                                components=components, checkpoints=checkpoints,
                                match_key=match_key or MatchKey.PROMPT)
            run, summarize = run_replay, summary
            notes.append(REPLAY_NOTE)
        check_regular(f"--trace {trace}", trace)  # a FIFO would block, /dev/zero never end
        with trace.open(encoding="utf-8") as handle:
            requests = parse_trace_lines(bounded_lines(handle, trace.name), source=trace.name)
        if not requests:
            raise ValueError(f"--trace {trace}: no requests")
        if no_progress:
            result = run(requests, spec)
        else:
            bar = Progress("[progress.description]{task.description}", BarColumn(),
                           MofNCompleteColumn(), TimeElapsedColumn(), console=err_console,
                           transient=True)
            with bar:
                task = bar.add_task(f"replaying {trace.name}", total=len(requests))
                result = run(requests, spec, progress=[
                    lambda done, total: bar.update(task, completed=done)])
        doc = {"engine": engine.value} | summarize(result)
        if out is not None:
            np.save(out, result.hits.astype("<i4"))
    doc["trace"] = str(trace)
    doc["out"] = str(out) if out else None
    if json:
        from kvledger.core.envelope import envelope

        ignored = [n.removeprefix("ignored flag: ") for n in notes if n.startswith("ignored flag: ")]
        emit_json(envelope("replay", doc, ignored_flags=ignored,
                           notes=[n for n in notes if not n.startswith("ignored flag: ")]))
        return
    _render(doc, notes)
