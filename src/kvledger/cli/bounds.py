"""The range of every numeric option of every command, in one table (`kvledger.core.limits`).

A command's values are checked against the table right after parsing, before any work starts,
so `--l3-instances 0`, `--flops-efficiency 1e-310` or `--state-slots <400 digits>` end as one
`error: FLAG VALUE: expected …` line and exit status 2 in every command alike — never as a
number echoed back, an infinite time or a row that says `ok`. A command's own checks may be
tighter (`--num-requests` of a generated workload); none is looser. `tests/cli` holds every
int or float option of every command to having a row here. (Comma lists of `sweep`, such as
`--replicas 1,2`, are text; `cli.commands.sweep` bounds each value the same way.)

Token counts marked `human` are read as SGLang reads --context-length (`kvledger.core.values.
human_int`: 32k = 32,000, 32K = 32,768). `--gpu` and `--time-gpu` name catalogue GPUs (each
name of a comma list).

>>> BOUNDS["--l3-instances"].check("--l3-instances", 0)
Traceback (most recent call last):
...
ValueError: --l3-instances 0: expected a positive integer (at most 1,048,576)
>>> BOUNDS["--flops-efficiency"].check("--flops-efficiency", 1e-310)
Traceback (most recent call last):
...
ValueError: --flops-efficiency 1e-310: expected a finite number in [0.001, 1]
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kvledger.core.gpus import CATALOGUE, get_gpu
from kvledger.core.limits import (
    MAX_COUNT,
    MAX_GIB,
    MAX_GPUS,
    MAX_JOBS,
    MAX_RATE_PER_S,
    MAX_SEED,
    MAX_STEP_MS,
    MAX_TIME_SCALE,
    MIN_EFFICIENCY,
    MIN_RATE_PER_S,
    MIN_STEP_MS,
    check_count,
    check_int,
    check_number,
    show_value,
)
from kvledger.core.values import human_int
from kvledger.sglang.hicache_share import check_share


class Kind(Enum):
    COUNT = "count"  # a positive integer
    INT = "int"  # an integer in [low, high]
    NUMBER = "number"  # a finite float in [low, high] (or (low, high] with low_open)
    SHARE = "share"  # a fraction in (0, 1), as the library checks it (`check_share`)


@dataclass(frozen=True, slots=True, kw_only=True)
class Bound:
    kind: Kind
    high: float
    low: float = 0
    low_open: bool = False
    human: bool = False  # a token count that takes 32k / 32K

    def check(self, flag: str, value: object) -> None:
        match self.kind:
            case Kind.COUNT:
                check_count(flag, value, high=int(self.high))
            case Kind.INT:
                check_int(flag, value, low=int(self.low), high=int(self.high))
            case Kind.NUMBER:
                check_number(flag, value, low=self.low, high=self.high, low_open=self.low_open)
            case Kind.SHARE:
                check_share(value)


def _count(high: int = MAX_COUNT, *, human: bool = False) -> Bound:
    return Bound(kind=Kind.COUNT, high=high, human=human)


def _gib(*, positive: bool) -> Bound:
    return Bound(kind=Kind.NUMBER, high=MAX_GIB, low_open=positive)


_MS = Bound(kind=Kind.NUMBER, high=MAX_STEP_MS)
_EFFICIENCY = Bound(kind=Kind.NUMBER, low=MIN_EFFICIENCY, high=1)

BOUNDS: dict[str, Bound] = {
    # workload checks and searches
    "--requests": _count(), "--context": _count(human=True), "--top": _count(),
    # memory, GiB per rank
    "--available-gib": _gib(positive=True), "--gpu-memory-gib": _gib(positive=True),
    "--weights-gib": _gib(positive=False), "--activation-gib": _gib(positive=False),
    "--non-torch-gib": _gib(positive=False), "--cudagraph-gib": _gib(positive=False),
    # vLLM's own flag, in bytes (VllmDeployment bounds it alike)
    "--kv-cache-memory-bytes": Bound(kind=Kind.COUNT, high=int(MAX_GIB) << 30),
    # vLLM checks the fraction itself (`CacheConfig.gpu_memory_utilization`: in (0, 1])
    "--gpu-memory-utilization": Bound(kind=Kind.NUMBER, low=0, high=1, low_open=True),
    "--hicache-state-share": Bound(kind=Kind.SHARE, high=1),
    # the store tier
    "--l3-size": _gib(positive=True), "--l3-instances": _count(MAX_GPUS),
    "--l3-node-pages": _count(),
    # replay pools
    "--pool-tokens": _count(human=True), "--state-slots": _count(), "--page-size": _count(),
    # vLLM's replay: the block, num_prefill_checkpoint_blocks (0 or 1), Mamba groups
    "--block-size": _count(), "--checkpoint-blocks": Bound(kind=Kind.INT, high=1),
    "--mamba-groups": _count(),
    # generated workloads and the step-time model
    "--num-requests": _count(), "--seed": Bound(kind=Kind.INT, high=MAX_SEED),
    "--rate": Bound(kind=Kind.NUMBER, low=MIN_RATE_PER_S, high=MAX_RATE_PER_S),
    "--time-scale": Bound(kind=Kind.NUMBER, high=MAX_TIME_SCALE, low_open=True),
    "--chunked-prefill-size": _count(), "--mamba-track-interval": _count(),
    "--max-num-batched-tokens": _count(),
    "--step-overhead-ms": Bound(kind=Kind.NUMBER, low=MIN_STEP_MS, high=MAX_STEP_MS),
    "--prefill-ms-per-token": _MS, "--decode-ms-per-token": _MS,
    "--roofline-overhead-ms": _MS,
    "--flops-efficiency": _EFFICIENCY, "--hbm-efficiency": _EFFICIENCY,
    # fleets: `simulate --replicas` also holds itself to kvledger.sim.fleet.run.MAX_REPLICAS
    "--replicas": _count(MAX_GPUS),
    "--prefill-replicas": _count(MAX_GPUS), "--decode-replicas": _count(MAX_GPUS),
    # `recommend --nodes N`: layouts of exactly N nodes of 8 GPUs
    "--nodes": _count(MAX_GPUS // 8),
    "--rate-scale": Bound(kind=Kind.NUMBER, high=MAX_TIME_SCALE, low_open=True),
    # SLO sizing (`recommend --trace`): latency targets; replicas of one layout searched
    "--ttft-p95-ms": Bound(kind=Kind.NUMBER, high=MAX_STEP_MS, low_open=True),
    "--tpot-p95-ms": Bound(kind=Kind.NUMBER, high=MAX_STEP_MS, low_open=True),
    "--max-replicas": _count(MAX_GPUS),
    # independent runs in parallel (`kvledger.cli.options.jobs`)
    "--jobs": _count(MAX_JOBS),
}
HUMAN_FLAGS = frozenset(flag for flag, bound in BOUNDS.items() if bound.human)
GPU_FLAGS = frozenset({"--gpu", "--time-gpu"})


def human_value(flag: str, text: str) -> str:
    """A human token count (`32k`) of a HUMAN_FLAGS option as digits; other text unchanged
    (the option's own parser then says what it expected)."""
    if flag not in HUMAN_FLAGS:
        return text
    try:
        return str(human_int(text))
    except ValueError:
        return text


def check_gpus(flag: str, text: str) -> None:
    """Every name of a GPU option's comma list is a catalogue GPU."""
    for name in text.split(","):
        if not name.strip():
            raise ValueError(f"{flag} {show_value(text)}: expected a GPU name (see `kvledger "
                             "gpus`)")
        try:
            get_gpu(name.strip())
        except ValueError:
            raise ValueError(f"{flag} {show_value(name.strip())}: not in the catalogue; choose "
                             f"one of {', '.join(CATALOGUE)}") from None


def check_option(flag: str, value: object) -> None:
    """Hold one parsed option value to its row (no row: nothing to hold it to)."""
    if value is None:
        return
    if flag in GPU_FLAGS and isinstance(value, str):
        check_gpus(flag, value)
    elif (bound := BOUNDS.get(flag)) is not None and not isinstance(value, str):
        # a text axis of the same name (`sweep --replicas 1,2`) bounds each of its values
        bound.check(flag, value)
