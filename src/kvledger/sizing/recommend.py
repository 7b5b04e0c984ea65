"""The cheapest deployments that fit a workload, and why the others do not.

Search space: every GPU asked for (default: the whole catalogue), tp 1, 2, 4, 8 and 16
(two nodes), every attention-DP size that divides tp, every DCP size (2, 4, 8) that divides
tp (without DP attention), pipeline stages 1, 2 and 4 on whole nodes (tp 8: a stage a node),
KV dtype auto and fp8_e4m3. With `nodes` (`--nodes N`: "8 nodes of B200, which split?") the
space is every layout of exactly N × 8 GPUs instead: tp 8 or 16, pp any divisor of what is
left, SGLang replicas (--dp-size without DP attention) for the rest, with the same DP and DCP
choices; other flags (`--disaggregation-mode decode`) apply to every layout. A layout
fits when the plan's workload check passes (`--requests R` concurrent requests of
`--context C` tokens: token KV, state slots and running requests on every worker).
Cheapest first: fewest GPUs, then most headroom (the smallest capacity ÷ need over the
check's ledgers), then the most requests of C tokens held at once. Each comes with the
SGLang command that launches it, and with vLLM's (`vllm serve …`, the same GPUs:
`kvledger.sizing.vllm_point`) when vLLM's plan of the layout
with `--max-model-len C` holds R concurrent requests; otherwise `vllm_why` says why not (vLLM's
refusal, or its concurrency short of R).

With `engines` naming vLLM the search plans every layout under vLLM's rules too, as its own
candidate (`kvledger.sizing.vllm_point`: the same GPUs in vLLM's flags, `--max-model-len C`):
a vLLM layout fits when R concurrent requests of C tokens fit over its DP engines, and its
headroom is DP × min(max_num_seqs, max_concurrency) ÷ R. Both engines' layouts are then ranked
together, so a model SGLang refuses (Jamba) still gets vLLM's recommendation.

>>> rec = recommend("glm-5.3-flash", requests=256, context_tokens=32_768, gpus=("H200",))
>>> best = rec.fits[0]
>>> best.row.totals.ranks, best.row.plan.layout.deployment.dcp_size
(8, 4)
>>> best.command.startswith("python -m sglang.launch_server --model-path zai-org/GLM-5.3-Flash")
True
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from kvledger.core.engines import Engine
from kvledger.core.gpus import CATALOGUE
from kvledger.core.plan import EnginePlan
from kvledger.core.runner import SERIAL, Runner, RunObserver
from kvledger.core.terms import MemoryTerms
from kvledger.model.arch import ModelArch
from kvledger.model.config import REPO_IDS, load_model
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.rules import DEFAULT_RULES
from kvledger.sizing.axes import GPUS_PER_NODE, Axes
from kvledger.sizing.documents import recommend_json
from kvledger.sizing.engines import plan_point
from kvledger.sizing.run import SweepRow, plan_rows
from kvledger.vllm.rules import DEFAULT_VLLM_RULES

VLLM = Engine.VLLM  # the engine whose command every fit carries beside its own

TP_SIZES = (1, 2, 4, 8, 16)
PP_SIZES = (1, 2, 4)  # pipeline stages, searched on whole nodes (tp 8): one stage a node
DCP_SIZES = (2, 4, 8)  # decode context parallelism over the tp ranks (it must divide tp)
NODE_TP_SIZES = (8, 16)  # with --nodes: a node's GPUs, or two nodes', in one tp group
KV_DTYPES = (KVDtype.AUTO, KVDtype.FP8_E4M3)


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    row: SweepRow
    headroom: float  # smallest capacity ÷ need of the workload check (≥ 1 when it fits)
    command: str  # the launch command of the row's engine (SGLang's, or `vllm serve …`)
    vllm_command: str | None = None  # vLLM's, when its plan of the layout fits
    vllm_why: str | None = None  # why vLLM's plan does not fit
    notes: tuple[str, ...] = ()  # every assumption of the row's plan and of vLLM's

    @property
    def engine(self) -> str:
        return self.row.engine


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendations:
    model: str  # as given
    requests: int
    context_tokens: int
    fits: tuple[Recommendation, ...]  # cheapest first
    failures: tuple[tuple[str, int], ...]  # (why, how many layouts), most common first
    searched: int  # layouts planned

    notes: tuple[str, ...] = ()  # every assumption behind the answer, each once

    @property
    def best(self) -> Recommendation | None:
        return self.fits[0] if self.fits else None

    def to_json(self, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
        """The `kvledger recommend --json` document (`kvledger.sizing.documents`)."""
        return recommend_json(self, ignored_flags=ignored_flags)


def headroom(row: SweepRow) -> float:
    requests, context_tokens = row.workload
    assert row.plan is not None and requests, "headroom needs a planned workload check"
    return row.plan.headroom(requests, context_tokens)


def _short(plan: EnginePlan, requests: int, context_tokens: int) -> str | None:
    """Why the plan does not hold the workload; None when it does."""
    fit = plan.fit_at(context_tokens)
    if plan.fits(requests, context_tokens):
        return None
    return (f"{plan.engine.display} holds {fit.requests:,} concurrent requests of "
            f"{context_tokens:,} tokens here, not {requests:,}")


def _why(row: SweepRow) -> str:
    """What runs out first at the workload's length, in the engine's words (SGLang: token KV,
    state slots, running requests or the context length; vLLM: KV-cache blocks,
    --max-num-seqs or max_model_len)."""
    if row.plan is None:
        return row.error or "not planned"
    if row.fits:
        return "fits"
    return f"{row.plan.fit_at(row.workload[1]).binding.label} overflow"


def _vllm(arch: ModelArch, ref: str, row: SweepRow, requests: int, context_tokens: int,
          vllm_rules: str, terms: MemoryTerms) -> dict[str, object]:
    """vLLM's command for the layout when its plan holds the workload, else why not (a vLLM
    row's own plan is planned again alike), and the notes of both plans."""
    try:
        plan = plan_point(VLLM, arch, row.point, rules=vllm_rules, terms=terms,
                          workload=(requests, context_tokens))
    except ValueError as exc:  # vLLM would refuse to start: its reason
        return {"vllm_command": None, "vllm_why": str(exc), "notes": row.notes}
    notes = tuple(dict.fromkeys((*row.notes, *plan.notes)))
    if why := _short(plan, requests, context_tokens):
        return {"vllm_command": None, "vllm_why": why, "notes": notes}
    return {"vllm_command": plan.launch_command(ref), "vllm_why": None, "notes": notes}


def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def _tp_axes(gpus: tuple[str, ...], tp: int, pp: tuple[int, ...], replicas: int = 1
             ) -> list[Axes]:
    """tp with every attention-DP size dividing it, then every DCP size (2, 4, 8) dividing it
    without DP attention (DCP shards the tp ranks' KV), each over the pipeline sizes `pp`."""
    dcp = tuple(d for d in DCP_SIZES if tp % d == 0)
    dp = _divisors(tp) if replicas == 1 else (1,)
    return [Axes(gpus=gpus, tp=(tp,), dp=dp, pp=pp, replicas=(replicas,),
                 kv_cache_dtype=KV_DTYPES),
            *([Axes(gpus=gpus, tp=(tp,), dcp=dcp, pp=pp, replicas=(replicas,),
                    kv_cache_dtype=KV_DTYPES)] if dcp else [])]


def _search_axes(gpus: tuple[str, ...], nodes: int | None = None) -> list[Axes]:
    """The search space (module doc): without `nodes`, TP_SIZES with PP_SIZES on whole nodes
    (tp 8); with `nodes`, every layout of exactly nodes × 8 GPUs: tp 8 or 16 × pp × replicas."""
    if nodes is None:
        return [a for tp in TP_SIZES
                for a in _tp_axes(gpus, tp, PP_SIZES if tp == GPUS_PER_NODE else (1,))]
    total = nodes * GPUS_PER_NODE
    out = []
    for tp in (t for t in NODE_TP_SIZES if total % t == 0):
        for pp in _divisors(total // tp):
            out += _tp_axes(gpus, tp, (pp,), replicas=total // tp // pp)
    return out


def recommend(model: str | ModelArch, *, requests: int, context_tokens: int,
              gpus: tuple[str, ...] | None = None, base: Deployment | None = None,
              rules: str = DEFAULT_RULES, top: int = 5,
              engines: tuple[str, ...] = ("sglang",),
              vllm_rules: str = DEFAULT_VLLM_RULES,
              terms: MemoryTerms | None = None, runner: Runner = SERIAL,
              observer: RunObserver | None = None,
              nodes: int | None = None) -> Recommendations:
    """The `top` cheapest fitting layouts over the search space, of every engine in `engines`
    (module doc); `terms` are the memory terms a user knows (weights, vLLM's profiled
    terms), as for `sweep`; `nodes`: only layouts of exactly that many nodes. Every layout's plan is an independent run on `runner`
    (`kvledger.core.runner`); the answer is the serial one."""
    terms = terms or MemoryTerms()
    arch = load_model(model) if isinstance(model, str) else model
    chosen = tuple(gpus) if gpus else tuple(CATALOGUE)
    points = [p for axes in _search_axes(chosen, nodes) for p in axes.points(base)]
    rows = plan_rows(arch, points, engines, {Engine.SGLANG: rules, Engine.VLLM: vllm_rules},
                     terms, (requests, context_tokens), runner, observer)
    # `auto` and the dtype it resolves to on a GPU are one layout: keep the first spelling.
    fitting = list({(r.engine, r.gpu, r.plan.deployment): r for r in reversed(rows)
                    if r.fits}.values())[::-1]
    ref = REPO_IDS.get(arch.name, arch.name)
    # ties (headroom capped alike, e.g. by the context length) go to the layout that holds
    # the most requests of C tokens at once
    ranked = sorted(fitting, key=lambda r: (r.totals.ranks, -headroom(r),
                                            -r.plan.fit_at(context_tokens).requests))
    fits = tuple(Recommendation(row=r, headroom=headroom(r),
                                command=r.plan.launch_command(ref, nodes=r.point.nodes),
                                **_vllm(arch, ref, r, requests, context_tokens, vllm_rules,
                                        terms))
                 for r in ranked[:top])
    failures = Counter(_why(r) for r in rows if not r.fits)
    # the assumptions behind the answer: the fits' plans' (theirs and vLLM's), else, when
    # nothing fits, those of every layout planned
    behind = [n for f in fits for n in f.notes] if fits else [n for r in rows for n in r.notes]
    return Recommendations(model=model if isinstance(model, str) else arch.name,
                           requests=requests, context_tokens=context_tokens, fits=fits,
                           failures=tuple(failures.most_common()), searched=len(rows),
                           notes=tuple(dict.fromkeys(behind)))
