"""`kvledger verify`: run reference-engine workloads with the cache and cache-free; compare."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from kvledger.cache.policies.choice import StateAdmission, StateEviction
from kvledger.cache.policies.lossy_states import LossyCheckpoints
from kvledger.cli.app import command, console, emit_json, user_errors
from kvledger.cli.options.plan import JsonOpt
from kvledger.cli.options.sim import AdmissionOpt, EvictionOpt, StateBackupOpt
from kvledger.host.state_backup import HostStateBackup

if TYPE_CHECKING:
    from kvledger.engine.verify import VerifyReport

ALL = "all"
VerifyWorkloadOpt = Annotated[str | None, typer.Option(
    "--workload", help="A named workload (see the table's first column), or 'all'. "
    "Default: one workload per memory path.")]

LossyOpt = Annotated[LossyCheckpoints | None, typer.Option(
    "--lossy-checkpoints", help="Lossy what-if instead of the proof: read cached checkpoints "
    "back through int8 or fp8 (e4m3), one float32 scale per row, and report the largest "
    "logit difference and the tokens changed per device-only workload. A measurement, not a "
    "proof: exit status 0.")]


def _names(workload: str | None) -> tuple[str, ...]:
    from kvledger.engine.workloads import DEFAULT_WORKLOADS, WORKLOADS

    if workload is None:
        return DEFAULT_WORKLOADS
    if workload == ALL:
        return tuple(WORKLOADS)
    if workload not in WORKLOADS:
        raise ValueError(f"--workload {workload!r}: expected {ALL} or one of "
                         f"{', '.join(WORKLOADS)}")
    return (workload,)


def _row(r: VerifyReport) -> dict:
    doc = asdict(r)
    doc["mismatched"] = list(r.mismatched)
    doc.update(hit_rate=round(r.hit_rate, 4), all_match=r.all_match,
               cached_seconds=round(r.cached_seconds, 3), fresh_seconds=round(r.fresh_seconds, 3))
    return doc


# No deployment flags: the reference engine's sizes are its own, so `verify --tp 2` is an
# unknown option (exit 2), not an argument silently ignored.
@command(help="Run reference-engine workloads twice — through the full cache system (prefix "
         "tree, device pools, host tier) and cache-free — and check that every generated "
         "token and logit is bit for bit the same. Exit status 1 if any output differs.",
         deployment=False)
def verify(workload: VerifyWorkloadOpt = None,
           state_admission: AdmissionOpt = StateAdmission.ENGINE,
           state_eviction: EvictionOpt = StateEviction.LRU,
           host_state_backup: StateBackupOpt = None,
           lossy_checkpoints: LossyOpt = None, json: JsonOpt = False) -> None:
    from kvledger.core.envelope import envelope
    from kvledger.core.extras import MEMORY

    with user_errors():
        MEMORY.require("kvledger verify (the reference engine)")
    import torch

    from kvledger.engine.verify import verify as run_verify

    # Hundreds of tiny ops per token: a second thread only adds synchronisation.
    torch.set_num_threads(1)
    if lossy_checkpoints is not None:  # a labelled measurement, exit 0: never a proof
        from kvledger.cli.runners.verify_lossy import run_lossy_verify

        if host_state_backup is not None:
            with user_errors():
                raise ValueError(f"--host-state-backup {host_state_backup.value}: part of the "
                                 "bit-identical proof, not of --lossy-checkpoints")

        with user_errors():
            run_lossy_verify(_names(workload), named=workload not in (None, ALL),
                             kind=lossy_checkpoints, admission=state_admission,
                             eviction=state_eviction, json=json)
        return
    with user_errors():
        backup = host_state_backup or HostStateBackup.ALL
        reports = [run_verify(name, admission=state_admission, eviction=state_eviction,
                              host_state_backup=backup) for name in _names(workload)]
    matched = all(r.all_match for r in reports)
    if json:
        emit_json(envelope("verify", {
            "all_match": matched, "workloads": [_row(r) for r in reports],
            "state_policies": f"{state_admission.value} + {state_eviction.value}",
            "host_state_backup": backup.value}))
    else:
        table = Table(title="Cached vs cache-free outputs, tiny GLM-5.3-shaped model (state "
                      f"policies {state_admission.value} + {state_eviction.value}, host state "
                      f"backup {backup.value})",
                      caption="prompt, loadback and evicted in tokens; loadback tokens / states")
        table.add_column("workload", no_wrap=True)
        for col in ("requests", "prompt", "hit rate", "loadback", "evicted"):
            table.add_column(col, justify="right")
        table.add_column("outputs", no_wrap=True)
        for r in reports:
            table.add_row(r.workload, str(r.requests), f"{r.prompt_tokens:,}", f"{r.hit_rate:.1%}",
                          f"{r.loadback_tokens:,} / {r.loadback_states}", f"{r.evicted_tokens:,}",
                          "[green]match[/]" if r.all_match
                          else f"[red]differ: {list(r.mismatched)}[/]")
        console.print(table)
        for r in reports:
            if r.store_groups_written or r.store_restored_tokens:
                console.print(f"{r.workload}: {r.store_restored_tokens:,} prompt tokens restored "
                              f"from the store tier, {r.store_groups_written} groups written")
        console.print("[green]every output matched[/]" if matched
                      else "[red]some outputs differ[/]")
    if not matched:
        raise typer.Exit(1)
