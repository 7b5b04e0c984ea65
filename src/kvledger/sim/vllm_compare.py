"""`simulate --engine vllm --compare`: vLLM's cache knobs and kvledger's state policies on
one trace and one deployment memory, and the setting to pick.

Every row is a full serving run (`kvledger.sim.vllm_serving`) of the same requests on the
same pool bytes (the plan's available KV memory), changing one thing from vLLM's default:

- vLLM's knobs, settable today: the block size (``--block-size k·B``: vLLM 0.33's
  `Platform._align_hybrid_block_size` keeps a user block that is a multiple of the aligned
  block ``B`` and pads the Mamba page up to it, so each block costs ``k`` times the bytes and
  the pool holds ``available // (k · bytes per block)`` blocks); the retention interval
  (``--prefix-cache-retention-interval``: 0, vLLM's default; ``None``, dense; ``R > 0``, also
  every ``R`` tokens, `MambaManager.reachable_block_mask`); the prefill checkpoint block
  (`MambaSpec.num_prefill_checkpoint_blocks`, the prefill kernel's: 0 makes the scheduler
  stop a chunk at the replay boundary instead);
- kvledger's state policies on that cache (`kvledger.blocks.policy`), on vLLM's default
  knobs: junction-only admission, ghost-junction admission, dead-first eviction, and
  ghost-junction on a 4-block retention interval. vLLM does not implement them: they say
  what a policy would buy, not a flag to set. (The prefill checkpoint is placed by the
  admission: a checkpoint block is reserved only where an admitted state falls.)

The recommendation is among vLLM's rows (what a user can set): vLLM's default unless another
row beats its usable hit by more than `NEAR_HIT`; otherwise, among the rows within `NEAR_HIT`
of the highest usable hit, the lowest TTFT p95. A row that leaves requests unfinished is never
recommended. A FULL-only model has no state knobs: only its block-size rows run.

>>> s = VllmSetting(block_scale=2, retention_blocks=4)
>>> s.label(block_tokens=1152), s.flags(block_tokens=1152)
('block 2304, retention 9216', '--block-size 2304 --prefix-cache-retention-interval 9216')
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kvledger.blocks import FullAttentionSpec, MambaAlignSpec
from kvledger.blocks.policy import VLLM_POLICY, BlockEviction, BlockPolicy, StateAdmission
from kvledger.core.runner import SERIAL, Runner, RunObserver, Task
from kvledger.sim.vllm_serving import VllmServeConfig, vllm_serve
from kvledger.sim.vllm_setup import VllmSimSetup
from kvledger.sim.vllm_summary import VllmSimSummary, vllm_summary
from kvledger.sim.workload import Workload

NEAR_HIT = 0.005  # usable-hit rates closer than this are a tie, broken by TTFT p95
DENSE = None  # retention_blocks for vLLM's prefix_cache_retention_interval None


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmSetting:
    """One row: vLLM's knobs (relative to the plan's aligned block) and a kvledger policy."""

    block_scale: int = 1  # the block is this many aligned blocks
    retention_blocks: int | None = 0  # 0: vLLM's default; None: dense; R: every R blocks
    checkpoint_blocks: int | None = None  # None: what the prefill kernel gives
    policy: BlockPolicy = VLLM_POLICY

    @property
    def is_vllm(self) -> bool:
        """Settable in vLLM (no kvledger policy)."""
        return self.policy.is_vllm

    @property
    def is_default(self) -> bool:
        return self == VllmSetting()

    def _knobs(self, block_tokens: int) -> list[tuple[str, str]]:
        """(label, vLLM flag) per knob that differs from vLLM's default."""
        out = []
        block = block_tokens * self.block_scale
        if self.block_scale != 1:
            out.append((f"block {block}", f"--block-size {block}"))
        if self.retention_blocks is None:
            out.append(("retention dense", "--prefix-cache-retention-interval None"))
        elif self.retention_blocks:
            tokens = self.retention_blocks * block
            out.append((f"retention {tokens}", f"--prefix-cache-retention-interval {tokens}"))
        if self.checkpoint_blocks is not None:
            out.append((f"checkpoint blocks {self.checkpoint_blocks}",
                        f"a prefill kernel with {self.checkpoint_blocks} checkpoint blocks"))
        return out

    def label(self, *, block_tokens: int) -> str:
        parts = [name for name, _ in self._knobs(block_tokens)]
        if not self.policy.is_vllm:
            parts.append(self.policy.label)
        return ", ".join(parts) or "vLLM default"

    def flags(self, *, block_tokens: int) -> str:
        """The vLLM flags for this row ("" for the default; kvledger policies have none)."""
        return " ".join(flag for _, flag in self._knobs(block_tokens))


def _policy(admission: StateAdmission, eviction: BlockEviction) -> VllmSetting:
    return VllmSetting(policy=BlockPolicy(admission, eviction))


# vLLM's knobs, then kvledger's policies on vLLM's default knobs.
VLLM_SETTINGS: tuple[VllmSetting, ...] = (
    VllmSetting(),
    VllmSetting(retention_blocks=DENSE),
    VllmSetting(retention_blocks=4),
    VllmSetting(retention_blocks=16),
    VllmSetting(block_scale=2),
    VllmSetting(block_scale=4),
)
POLICY_SETTINGS: tuple[VllmSetting, ...] = (
    _policy(StateAdmission.JUNCTION_ONLY, BlockEviction.LRU),
    _policy(StateAdmission.VLLM, BlockEviction.DEAD_FIRST),
    _policy(StateAdmission.GHOST_JUNCTION, BlockEviction.LRU),
    _policy(StateAdmission.GHOST_JUNCTION, BlockEviction.DEAD_FIRST),
    # kvledger's admission on vLLM's periodic retention: do the two add up?
    VllmSetting(retention_blocks=4,
                policy=BlockPolicy(StateAdmission.GHOST_JUNCTION, BlockEviction.LRU)),
)


def default_settings(setup: VllmSimSetup) -> tuple[VllmSetting, ...]:
    """The table's rows for this deployment: the checkpoint row flips what the kernel gives;
    a FULL-only model runs its block sizes only."""
    if not setup.num_mamba_groups:
        return tuple(s for s in VLLM_SETTINGS if s.retention_blocks == 0)
    mamba = next(g for g in setup.config.groups if isinstance(g, MambaAlignSpec))
    flip = VllmSetting(checkpoint_blocks=1 - mamba.num_prefill_checkpoint_blocks)
    return (*VLLM_SETTINGS[:4], flip, *VLLM_SETTINGS[4:], *POLICY_SETTINGS)


def setting_config(setup: VllmSimSetup, setting: VllmSetting, *,
                   available_bytes: int) -> VllmServeConfig:
    """The serving config of one row on ``available_bytes`` of KV memory."""
    base = setup.config
    block = base.groups[0].block_size_tokens * setting.block_scale
    retention = (None if setting.retention_blocks is None
                 else setting.retention_blocks * block)
    groups = []
    for group in base.groups:
        match group:
            case FullAttentionSpec():
                groups.append(FullAttentionSpec(block_size_tokens=block))
            case MambaAlignSpec():
                checkpoint = (group.num_prefill_checkpoint_blocks
                              if setting.checkpoint_blocks is None else setting.checkpoint_blocks)
                groups.append(MambaAlignSpec(block_size_tokens=block,
                                             num_prefill_checkpoint_blocks=checkpoint,
                                             retention_interval_tokens=retention))
    num_blocks = (base.num_blocks if setting.block_scale == 1
                  else available_bytes // (setup.bytes_per_block * setting.block_scale))
    return replace(base, groups=tuple(groups), num_blocks=num_blocks, policy=setting.policy)


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmCompareRow:
    setting: VllmSetting
    label: str
    flags: str  # vLLM's flags for it ("" for the default and for kvledger's policies)
    summary: VllmSimSummary

    @property
    def ttft_p95_ms(self) -> float:
        lat = self.summary.latency
        return lat.ttft_ms.p95 if lat is not None else float("inf")

    @property
    def complete(self) -> bool:
        return not self.summary.unfinished


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmComparison:
    workload: str
    rows: tuple[VllmCompareRow, ...]  # in the order run; the first is vLLM's default

    @property
    def default(self) -> VllmCompareRow:
        return self.rows[0]

    def best(self, *, vllm_only: bool) -> VllmCompareRow:
        """The rule in the module doc, over vLLM's rows or over every row."""
        rows = [r for r in self.rows if r.complete and (r.setting.is_vllm or not vllm_only)]
        base = self.default
        if not rows:
            return base
        top = max(r.summary.usable_hit_rate for r in rows)
        if base.complete and base.summary.usable_hit_rate >= top - NEAR_HIT:
            return base  # nothing beats the default by more than a tie
        near = [r for r in rows if r.summary.usable_hit_rate >= top - NEAR_HIT]
        return min(near, key=lambda r: (r.ttft_p95_ms, -r.summary.usable_hit_rate))

    def recommendation(self) -> str:
        """One line: the vLLM setting to pick, and what kvledger's best policy would add."""
        pick, base = self.best(vllm_only=True), self.default
        s = pick.summary
        if pick is base:
            line = (f"recommend for {self.workload}: vLLM's defaults (usable hit "
                    f"{s.usable_hit_rate:.3f}; no knob beats it by more than {NEAR_HIT})")
        else:
            line = (f"recommend for {self.workload}: {pick.flags} (usable hit "
                    f"{s.usable_hit_rate:.3f} vs {base.summary.usable_hit_rate:.3f} at "
                    f"vLLM's defaults, TTFT p95 {pick.ttft_p95_ms:,.0f} ms vs "
                    f"{base.ttft_p95_ms:,.0f} ms)")
        policy = self.best(vllm_only=False)
        if not policy.setting.is_vllm:
            line += (f"; kvledger's {policy.label} would reach "
                     f"{policy.summary.usable_hit_rate:.3f} (a policy vLLM does not ship)")
        return line


def serve_setting(setup: VllmSimSetup, workload: Workload, setting: VllmSetting,
                  available_bytes: int, timing: str) -> VllmCompareRow:
    """One row: the serving run of ``setting`` on ``workload`` (wall_s is its own time)."""
    base_block = setup.config.groups[0].block_size_tokens
    cfg = setting_config(setup, setting, available_bytes=available_bytes)
    start = time.perf_counter()
    result = vllm_serve(workload.requests, cfg)
    summary = vllm_summary(
        result, workload=workload.name, num_requests=len(workload.requests),
        block_tokens=cfg.groups[0].block_size_tokens, num_blocks=cfg.num_blocks,
        num_mamba_groups=setup.num_mamba_groups, max_num_seqs=cfg.max_num_seqs,
        max_num_batched_tokens=cfg.max_num_batched_tokens,
        bytes_per_block=setup.bytes_per_block * setting.block_scale, timing=timing,
        wall_s=time.perf_counter() - start, attention_group=setup.attention_group)
    return VllmCompareRow(setting=setting, label=setting.label(block_tokens=base_block),
                          flags=setting.flags(block_tokens=base_block), summary=summary)


def compare_vllm_settings(setup: VllmSimSetup, workload: Workload, *, available_bytes: int,
                          timing: str, settings: Sequence[VllmSetting] | None = None,
                          runner: Runner = SERIAL,
                          observer: RunObserver | None = None) -> VllmComparison:
    """Run every setting (vLLM's default first) on ``workload``, each an independent run on
    ``runner`` (`kvledger.core.runner`; the rows are the serial run's)."""
    settings = tuple(settings or default_settings(setup))
    if not settings or not settings[0].is_default:
        raise ValueError("vLLM comparison: the first setting must be vLLM's default")
    base_block = setup.config.groups[0].block_size_tokens
    tasks = [Task(fn=serve_setting, args=(setup, workload, s, available_bytes, timing),
                  label=s.label(block_tokens=base_block)) for s in settings]
    rows = runner.run(tasks, observer)
    return VllmComparison(workload=workload.name, rows=tuple(rows))
