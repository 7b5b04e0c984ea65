"""The cheapest deployments that fit a workload, and why the others do not.

Search space: every GPU asked for (default: the whole catalogue), tp 1, 2, 4, 8 and 16
(two nodes), every attention-DP size that divides tp, KV dtype auto and fp8_e4m3. A layout
fits when the plan's workload check passes (`--requests R` concurrent requests of
`--context C` tokens: token KV, state slots and running requests on every worker).
Cheapest first: fewest GPUs, then most headroom (the smallest capacity ÷ need over the
check's ledgers). Each comes with the SGLang command that launches it, and with vLLM's
(`vllm serve …`, the same GPUs: `kvledger.sizing.vllm_point`) when vLLM's plan of the layout
with `--max-model-len C` holds R concurrent requests; otherwise `vllm_why` says why not (vLLM's
refusal, or its concurrency short of R).

>>> rec = recommend("glm-5.3-flash", requests=256, context_tokens=32_768, gpus=("H200",))
>>> best = rec.fits[0]
>>> best.row.totals.ranks, best.row.plan.layout.deployment.enable_dp_attention
(8, True)
>>> best.command.startswith("python -m sglang.launch_server --model-path zai-org/GLM-5.3-Flash")
True
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kvledger.deploy import Deployment, KVDtype
from kvledger.gpus import CATALOGUE
from kvledger.model.arch import ModelArch
from kvledger.model.config import REPO_IDS, load_model
from kvledger.rules import DEFAULT_RULES
from kvledger.sizing.axes import Axes
from kvledger.sizing.launch_line import sglang_command, vllm_command
from kvledger.sizing.run import SweepRow, sweep
from kvledger.sizing.vllm_point import vllm_deployment, vllm_totals
from kvledger.vllm.plan import make_vllm_plan

TP_SIZES = (1, 2, 4, 8, 16)
KV_DTYPES = (KVDtype.AUTO, KVDtype.FP8_E4M3)


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    row: SweepRow
    headroom: float  # smallest capacity ÷ need of the workload check (≥ 1 when it fits)
    command: str  # SGLang launch command
    vllm_command: str | None = None  # vLLM's, when its plan of the layout fits
    vllm_why: str | None = None  # why vLLM's plan does not fit


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendations:
    requests: int
    context_tokens: int
    fits: tuple[Recommendation, ...]  # cheapest first
    failures: tuple[tuple[str, int], ...]  # (why, how many layouts), most common first
    searched: int  # layouts planned

    @property
    def best(self) -> Recommendation | None:
        return self.fits[0] if self.fits else None


def headroom(row: SweepRow) -> float:
    work = row.plan.workload if row.plan else None
    assert work is not None, "headroom needs a workload check"
    return min(r.capacity / r.need for r in work.rows if r.need)


def _why(row: SweepRow) -> str:
    if row.plan is None:
        return row.error or "not planned"
    over = row.plan.workload.first_overflow
    return f"{over.ledger} overflow" if over else "fits"


def _vllm(arch: ModelArch, ref: str, row: SweepRow, requests: int,
          context_tokens: int) -> dict[str, str | None]:
    """vLLM's command for the layout when its plan holds the workload, else why not."""
    vdep = vllm_deployment(row.point.deployment, context_tokens)
    try:
        plan = make_vllm_plan(arch, vdep, gpu=row.gpu)
    except ValueError as exc:  # vLLM would refuse to start: its reason
        return {"vllm_command": None, "vllm_why": str(exc)}
    running = vllm_totals(plan).running_requests
    if running < requests:
        return {"vllm_command": None,
                "vllm_why": f"vLLM holds {running:,} concurrent requests of {context_tokens:,} "
                            f"tokens here, not {requests:,}"}
    return {"vllm_command": vllm_command(ref, vdep), "vllm_why": None}


def _search_axes(gpus: tuple[str, ...]) -> list[Axes]:
    dp_sizes = sorted({dp for tp in TP_SIZES for dp in range(1, tp + 1) if tp % dp == 0})
    return [Axes(gpus=gpus, tp=(tp,), dp=tuple(d for d in dp_sizes if tp % d == 0),
                 kv_cache_dtype=KV_DTYPES) for tp in TP_SIZES]


def recommend(model: str | ModelArch, *, requests: int, context_tokens: int,
              gpus: tuple[str, ...] | None = None, base: Deployment | None = None,
              rules: str = DEFAULT_RULES, top: int = 5) -> Recommendations:
    """The `top` cheapest fitting layouts over the search space (module doc)."""
    arch = load_model(model) if isinstance(model, str) else model
    chosen = tuple(gpus) if gpus else tuple(CATALOGUE)
    rows: list[SweepRow] = []
    for axes in _search_axes(chosen):
        rows += sweep(arch, axes, base, rules=rules, requests=requests,
                      context_tokens=context_tokens)
    # `auto` and the dtype it resolves to on a GPU are one layout: keep the first spelling.
    fitting = list({(r.gpu, r.plan.layout.deployment): r for r in reversed(rows)
                    if r.fits}.values())[::-1]
    ref = REPO_IDS.get(arch.name, arch.name)
    ranked = sorted(fitting, key=lambda r: (r.totals.ranks, -headroom(r)))
    fits = tuple(Recommendation(row=r, headroom=headroom(r),
                                # the flags as chosen, not the plan's resolved autos: SGLang
                                # resolves them the same way on the GPU
                                command=sglang_command(ref, r.point.deployment,
                                                       nodes=r.point.nodes),
                                **_vllm(arch, ref, r, requests, context_tokens))
                 for r in ranked[:top])
    failures = Counter(_why(r) for r in rows if not r.fits)
    return Recommendations(requests=requests, context_tokens=context_tokens, fits=fits,
                           failures=tuple(failures.most_common()), searched=len(rows))
