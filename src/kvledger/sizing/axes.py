"""The sweep grid: each axis a tuple of values, every combination one deployment point.

Axes mirror SGLang's flags: `--gpu`, `--nodes` (of GPUS_PER_NODE GPUs; sets --tp-size when
--tp is not swept; with replicas, the nodes of one replica), `--tp`, `--dp` (attention data
parallelism: dp > 1 turns on --enable-dp-attention, as DP sizes are swept on one set of
GPUs), `--replicas` (SGLang's --dp-size without --enable-dp-attention: independent copies of
the tp group, tp × replicas GPUs), `--pp-size` (pipeline stages, tp × pp GPUs a replica),
`--dcp-size` (decode context parallelism over the tp ranks: no GPUs of its own),
`--disaggregation-mode` (the server's prefill/decode role, `null` for an aggregated one),
`--kv-cache-dtype`, `--mamba-ssm-dtype`. SGLang has one --dp-size, so a point with both dp > 1
and replicas > 1 is refused. A combination SGLang would refuse is not dropped: it becomes a
point with the reason, in SGLang's words (kvledger.sglang.deploy quotes its checks).

>>> axes = Axes(tp=(8,), dp=parse_axis("--dp", "1,8", int))
>>> [(p.deployment.tp_size, p.deployment.dp_size, p.deployment.enable_dp_attention)
...  for p in axes.points()]
[(8, 1, False), (8, 8, True)]
>>> [p.skipped for p in Axes(tp=(8,), dp=(3,)).points()]
['--dp-size 3: must divide --tp-size 8 (DP attention)']
>>> [(p.deployment.dp_size, p.deployment.enable_dp_attention, p.nodes)
...  for p in Axes(tp=(4,), replicas=(1, 4)).points()]
[(1, False, 1), (4, False, 2)]
>>> [(p.deployment.pp_size, p.nodes) for p in Axes(tp=(8,), pp=(1, 2, 4)).points()]
[(1, 1), (2, 2), (4, 4)]
>>> [p.skipped for p in Axes(tp=(8,), dcp=(3,)).points()][0].split(" (")[0]
'--dcp-size 3: SGLang needs it to divide --tp-size 8'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from itertools import product
from typing import TypeVar

from kvledger.core.limits import show_value
from kvledger.sglang.deploy import Deployment, DisaggMode, KVDtype, StateDtype

# An HGX/DGX node; --nodes N means N × 8 GPUs under one tensor-parallel group.
GPUS_PER_NODE = 8

T = TypeVar("T")


def parse_axis(flag: str, text: str, parse: Callable[[str], T]) -> tuple[T, ...]:
    """A comma list (`"1,2,8"`) parsed value by value; errors name the flag and the value."""
    values = []
    for word in (w.strip() for w in text.split(",")):
        if not word:
            raise ValueError(f"{flag} {text!r}: empty value in the comma list")
        try:
            values.append(parse(word))
        except ValueError as exc:
            raise ValueError(f"{flag} {show_value(word)}: {exc}") from None
    if len(set(values)) != len(values):
        raise ValueError(f"{flag} {text!r}: a value is listed twice")
    return tuple(values)


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """One deployment of the grid, or why the grid's combination is not one."""

    gpu: str | None
    nodes: int
    deployment: Deployment | None
    skipped: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Axes:
    gpus: tuple[str | None, ...] = (None,)
    nodes: tuple[int | None, ...] = (None,)
    tp: tuple[int | None, ...] = (None,)
    dp: tuple[int, ...] = (1,)
    replicas: tuple[int, ...] = (1,)
    pp: tuple[int | None, ...] = (None,)  # None: the base deployment's
    dcp: tuple[int | None, ...] = (None,)
    role: tuple[DisaggMode | None, ...] = (None,)
    kv_cache_dtype: tuple[KVDtype | None, ...] = (None,)
    mamba_ssm_dtype: tuple[StateDtype | None, ...] = (None,)

    def size(self) -> int:
        return (len(self.gpus) * len(self.nodes) * len(self.tp) * len(self.dp)
                * len(self.replicas) * len(self.pp) * len(self.dcp) * len(self.role)
                * len(self.kv_cache_dtype) * len(self.mamba_ssm_dtype))

    def points(self, base: Deployment | None = None) -> Iterator[Point]:
        """Every combination over `base` (the other flags given), in axis order."""
        base = base or Deployment()
        for gpu, nodes, tp, dp, reps, pp, dcp, role, kv, ssm in product(
                self.gpus, self.nodes, self.tp, self.dp, self.replicas, self.pp, self.dcp,
                self.role, self.kv_cache_dtype, self.mamba_ssm_dtype):
            layout = {"pp_size": pp, "dcp_size": dcp, "disaggregation_mode": role,
                      "kv_cache_dtype": kv, "mamba_ssm_dtype": ssm}
            yield _point(base, gpu, nodes, tp, dp, reps,
                         {k: v for k, v in layout.items() if v is not None})


def _point(base: Deployment, gpu: str | None, nodes: int | None, tp: int | None, dp: int,
           reps: int, layout: dict[str, object]) -> Point:
    """One point; `layout`: the other fields the axes set (pp, dcp, role, dtypes)."""
    pp = layout.get("pp_size", base.pp_size)
    assert isinstance(pp, int)
    if tp is None:
        tp = nodes * GPUS_PER_NODE // pp if nodes is not None else base.tp_size
    if nodes is None:
        nodes = -(-tp * pp * reps // GPUS_PER_NODE)
    elif tp * pp != nodes * GPUS_PER_NODE:
        return Point(gpu=gpu, nodes=nodes, deployment=None,
                     skipped=f"--tp-size {tp} × --pp-size {pp}: {nodes} node(s) hold "
                     f"{nodes * GPUS_PER_NODE} GPUs" if pp > 1 else
                     f"--tp-size {tp}: {nodes} node(s) hold {nodes * GPUS_PER_NODE} GPUs")
    else:
        nodes *= reps
    if dp > 1 and reps > 1:
        return Point(gpu=gpu, nodes=nodes, deployment=None,
                     skipped=f"--dp-size: {dp} (DP attention) and {reps} replicas; SGLang has "
                             "one --dp-size")
    if dp > 1 and tp % dp:
        return Point(gpu=gpu, nodes=nodes, deployment=None,
                     skipped=f"--dp-size {dp}: must divide --tp-size {tp} (DP attention)")
    fields = {"tp_size": tp, "dp_size": max(dp, reps), "enable_dp_attention": dp > 1,
              **layout}
    try:
        return Point(gpu=gpu, nodes=nodes, deployment=replace(base, **fields))
    except ValueError as exc:  # DeploymentError: the flag at fault
        return Point(gpu=gpu, nodes=nodes, deployment=None, skipped=str(exc))
