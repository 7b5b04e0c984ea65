"""`kvledger replay --engine vllm`: the vLLM replay's spec from its options.

Each option maps to one `VllmReplaySpec` field: --block-size (B), --pool-tokens (T: T // B + 1
blocks shared by every group, one block per cached state, as the oracle cells define it),
--components, --checkpoint-blocks (num_prefill_checkpoint_blocks), --retention
(prefix_cache_retention_interval: a token count or `dense`), --scheduler and --mamba-groups
(how many blocks one cached state costs: one per Mamba group). The options of
SGLang's replay, and SGLang's deployment flags, are refused by name.

>>> parse_retention("dense"), parse_retention("0"), parse_retention("1024")
(None, 0, 1024)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kvledger.sequential.spec import Components
from kvledger.sequential.vllm_spec import Scheduler, VllmReplaySpec

DEFAULT_BLOCK_TOKENS = 64  # the oracle's attention block; vLLM's own default is 16


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmReplayOptions:
    block_size: int | None
    pool_tokens: int | None
    components: Components | None
    checkpoint_blocks: int | None
    retention: str | None
    scheduler: Scheduler | None
    mamba_groups: int | None = None


def parse_retention(word: str) -> int | None:
    if word.strip().lower() == "dense":
        return None
    try:
        value = int(word)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"--retention {word!r}: expected 0, a positive multiple of the block "
                         "size (tokens) or dense")
    return value


def vllm_replay_spec(options: VllmReplayOptions, *, sglang_options: Mapping[str, object],
                     planned: Sequence[str], extra: Sequence[str]) -> VllmReplaySpec:
    """The spec; ``sglang_options`` are SGLang's replay options (flag → value, None when not
    given), ``planned`` the plan options given, ``extra`` the deployment flags given."""
    for flag, value in sglang_options.items():
        if value is not None:
            raise ValueError(f"{flag}: an SGLang replay option; --engine vllm takes --block-size,"
                             " --pool-tokens, --components, --checkpoint-blocks, --retention, "
                             "--scheduler and --mamba-groups (states take blocks from the one "
                             "pool)")
    if planned or extra:
        given = (list(planned) + list(extra))[0]
        raise ValueError(f"{given}: --engine vllm replays a pool given by --pool-tokens and "
                         "--block-size; a pool from a plan's flags is not supported yet")
    if options.pool_tokens is None:
        raise ValueError("--pool-tokens: --engine vllm needs the pool size in tokens "
                         "(T // B + 1 blocks shared by every group)")
    kind = options.components or Components.FULL_MAMBA
    state: dict[str, object] = {}
    if kind is Components.FULL_MAMBA:
        if options.checkpoint_blocks is not None:
            state["checkpoint_blocks"] = options.checkpoint_blocks
        if options.retention is not None:
            state["retention_tokens"] = parse_retention(options.retention)
        if options.scheduler is not None:
            state["scheduler"] = options.scheduler
        if options.mamba_groups is not None:
            state["mamba_groups"] = options.mamba_groups
    else:
        for flag, value in (("--checkpoint-blocks", options.checkpoint_blocks),
                            ("--retention", options.retention),
                            ("--scheduler", options.scheduler),
                            ("--mamba-groups", options.mamba_groups)):
            if value is not None:
                raise ValueError(f"{flag}: a Mamba-group option; needs --components full+mamba")
    block = DEFAULT_BLOCK_TOKENS if options.block_size is None else options.block_size
    return VllmReplaySpec(block_tokens=block, pool_tokens=options.pool_tokens, components=kind,
                          **state)
