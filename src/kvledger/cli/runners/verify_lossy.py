"""`kvledger verify --lossy-checkpoints int8|fp8`: what 8-bit cached states cost in logits.

A measurement, not a proof: the reference engine runs each device-only workload with its
cached checkpoints read back through int8 or fp8 (`kvledger.engine.lossy`) and cache-free,
and reports the largest logit difference and how many generated tokens changed. Outputs are
not bit-identical by construction, so the exit status is 0 whatever the numbers; the
bit-identical proof is `verify` without the flag.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from rich.table import Table

from kvledger.cli.app import console, emit_json

if TYPE_CHECKING:
    from kvledger.cache.policies import StateAdmission, StateEviction
    from kvledger.cache.policies.lossy_states import LossyCheckpoints

NOT_A_PROOF = "measurement, not a proof: outputs are not bit-identical"


def lossy_names(names: tuple[str, ...], *, named: bool) -> tuple[tuple[str, ...], list[str]]:
    """The device-only workloads among `names` and the skipped ones; a workload named on its
    own that the what-if cannot run is an input error."""
    from kvledger.engine.lossy import lossy_workload
    from kvledger.engine.workloads import WORKLOADS

    if named:
        return tuple(lossy_workload(n).name for n in names), []
    ok = tuple(n for n in names if WORKLOADS[n].host is None and WORKLOADS[n].store is None)
    return ok, [n for n in names if n not in ok]


def run_lossy_verify(names: tuple[str, ...], *, named: bool, kind: LossyCheckpoints,
                     admission: StateAdmission, eviction: StateEviction, json: bool) -> None:
    from kvledger.cache.policies.lossy_states import label
    from kvledger.core.envelope import envelope
    from kvledger.engine.lossy import lossy_difference

    runnable, skipped = lossy_names(names, named=named)
    diffs = [lossy_difference(n, kind, admission=admission, eviction=eviction)
             for n in runnable]
    policies = f"{admission.value} + {eviction.value}"
    if json:
        rows = []
        for d in diffs:
            row = asdict(d)
            row.update(kind=d.kind.value, max_logit_difference=round(d.max_logit_difference, 6))
            rows.append(row)
        emit_json(envelope("verify-lossy-checkpoints", {
            "label": label(kind), "lossy": True, "bit_exact": False, "proof": False,
            "checkpoints": kind.value, "state_policies": policies, "workloads": rows,
            "skipped_workloads": skipped}, notes=[NOT_A_PROOF]))
        return
    table = Table(title=f"{label(kind)}: cached vs cache-free outputs, tiny GLM-5.3-shaped "
                  f"model (state policies {policies})",
                  caption=NOT_A_PROOF)
    table.add_column("workload", no_wrap=True)
    for col in ("requests", "cached prompt", "largest logit diff", "changed requests",
                "changed tokens"):
        table.add_column(col, justify="right")
    for d in diffs:
        table.add_row(d.workload, str(d.requests), f"{d.cached_prompt_tokens:,}",
                      f"{d.max_logit_difference:.4g}", str(d.changed_requests),
                      f"{d.changed_tokens} / {d.generated_tokens}")
    console.print(table)
    if skipped:
        console.print(f"skipped (host or store tier; the what-if covers device states): "
                      f"{', '.join(skipped)}")
    console.print(f"[yellow]{NOT_A_PROOF}; `kvledger verify` without --lossy-checkpoints is "
                  "the bit-identical check[/]")
