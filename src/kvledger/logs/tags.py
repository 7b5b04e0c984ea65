"""The rank tag a boot-log line carries: which pipeline stage (and DP, TP, EP rank) printed it.

SGLang (`run_scheduler_process`, managers/scheduler.py, 0.5.21 and 0.5.23): a scheduler's
logger prefix is built from its ranks, each part only when that dimension is used — ` DP{d}`
(attention DP or replicas), ` PP{p}` (pp_size > 1), ` ATTN_CP{c}`, ` MOE_DP{m}`, ` TP{t}`
(tp_size > 1), ` EP{e}` (ep_size > 1) — and `configure_logger` (utils/common.py) puts it after
the time inside the brackets: `[2026-01-01 00:00:10 DP0 PP1 TP0] KV Cache is allocated …`.

vLLM (`WorkerProc`, v1/executor/multiproc_executor.py, 0.33.0): a worker's process name is
`Worker` then `_DP{d}` `_PP{p}` `_PCP{c}` `_TP{t}` `_DCP{k}` `_EP{e}`, each only when that size
is above 1 (EP when enabled), and `decorate_logs` prefixes each line with it and the pid:
`(Worker_PP1_TP0 pid=4242) INFO … Available KV cache memory: 18.22 GiB`. A worker's line may
come through its engine core's output as well, `(EngineCore_DP0 pid=7) (Worker_PP1 pid=9) …`:
the worker's tag is the one read.

A line with no stage part belongs to no stage (stage None): the API server's and engine core's
lines, or a server without pipeline parallelism.

>>> tag_of("[2026-01-01 00:00:10 DP0 PP1 TP3] KV Cache is allocated.")
RankTag(pp=1, dp=0, tp=3)
>>> tag_of("(EngineCore_DP0 pid=7) (Worker_PP2_TP1 pid=9) INFO Available KV cache memory")
RankTag(pp=2, dp=None, tp=1)
>>> tag_of("[2026-01-01 00:00:10 TP0] Load weight end.").pp is None
True
>>> tag_of("INFO 07-09 [gpu_worker.py:508] Available KV cache memory: 6.01 GiB") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SGLANG = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?((?: [A-Z_]+\d+)+)\]")
_VLLM = re.compile(r"\(Worker((?:_[A-Z]+\d+)*) pid=\d+\)")
_PART = re.compile(r"([A-Z_]*?[A-Z]+)(\d+)")


@dataclass(frozen=True, slots=True)
class RankTag:
    """The ranks a line's prefix names (None: that part is absent)."""
    pp: int | None
    dp: int | None
    tp: int | None


def _parts(text: str) -> dict[str, int]:
    return {name.strip("_"): int(rank) for name, rank in _PART.findall(text)}


def tag_of(line: str) -> RankTag | None:
    """The rank tag of a line; None when it has no rank prefix at all."""
    match = _VLLM.search(line) or _SGLANG.match(line.lstrip())
    if match is None:
        return None
    parts = _parts(match.group(1))
    return RankTag(pp=parts.get("PP"), dp=parts.get("DP"), tp=parts.get("TP"))


def stage_of(line: str) -> int | None:
    """The pipeline stage a line names, or None."""
    tag = tag_of(line)
    return tag.pp if tag is not None else None


def check_stage_count(tagged: list[int], pp_size: int, flag: str) -> None:
    """A log whose lines name more stages than the deployment has was read with the wrong
    deployment: say which flag to give (LogError's base, ValueError)."""
    if pp_size == 1 and len(tagged) > 1:
        raise ValueError(f"the log's lines name {len(tagged)} pipeline stages "
                         f"({', '.join(f'PP{r}' for r in tagged)}) but the deployment it states "
                         f"has one; pass -- {flag} {max(tagged) + 1}")
