"""The Mamba scheduler strategy and the state slots a running request reserves and holds.

SGLang's rules (server_args.py / arg_groups/mamba_hook.py, mem_cache/memory_pool.py):
- `--mamba-scheduler-strategy auto` is extra_buffer with the triton linear-attention backend
  (where the rule set has it), otherwise no_buffer, which turns the overlap scheduler off;
  no_buffer needs page 1, which DSA models cannot use.
- extra_buffer's track interval (256) must hold whole pages and the draft tokens, and FLA's
  64-token chunks and the page must divide one another.
- Slots per request: 1 with the radix cache off; extra_buffer 3 + track slots (2 with the
  overlap scheduler, 1 without); no_buffer 3.
- `SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK` (an environment switch in 0.5.21 and 0.5.23,
  `EnvBool(False)` in environ.py) is not read: off, as it is by default, it changes nothing
  here. On, `KVCacheConfigurator._calculate_mamba_ratio` (mem_cache/kv_cache_configurator.py)
  drops the base ratio 3 to 2 (`MAMBA_CACHE_BASE_RATIO_DROP_ON_SKIP`), so extra_buffer
  reserves 4 instead of 5 (3 instead of 4 without the overlap scheduler), and no_buffer adds
  the 1 back (`MAMBA_CACHE_V2_ADDITIONAL_RATIO_NO_BUFFER`: still 3); and
  `UnifiedRadixCache.cache_unfinished_req` (0.5.21; `checkpoint_into_tree` in 0.5.23) locks a
  decoding request's last node without its MAMBA component (`skip_lock_components`), which
  kvledger.tree's locks do not model either.

>>> state_slots_per_request(Deployment(mamba_strategy=MambaStrategy.EXTRA_BUFFER,
...                                    disable_overlap_schedule=True))
(4, 2)
"""

from __future__ import annotations

from dataclasses import replace

from kvledger.model.arch import AttnKind, ModelArch
from kvledger.sglang.deploy import Deployment, DeploymentError, LinearBackend, MambaStrategy
from kvledger.sglang.rules import RuleSet


def resolve_strategy(model: ModelArch, dep: Deployment, rules: RuleSet, notes: list[str]) -> Deployment:
    if not model.is_hybrid:
        return dep
    strategy = dep.mamba_strategy
    if strategy is MambaStrategy.AUTO:
        strategy = (
            MambaStrategy.EXTRA_BUFFER
            if dep.linear_attn_backend is LinearBackend.TRITON and rules.auto_strategy_extra_buffer
            else MambaStrategy.NO_BUFFER
        )
        if strategy is MambaStrategy.NO_BUFFER and not dep.disable_overlap_schedule:
            notes.append("mamba strategy auto → no_buffer: overlap scheduler turned off")
            dep = replace(dep, disable_overlap_schedule=True)
    # An explicit no_buffer with overlap on never gets here: Deployment refuses it.
    if strategy is MambaStrategy.NO_BUFFER and model.attn is AttnKind.DSA:
        raise DeploymentError(
            "--mamba-scheduler-strategy no_buffer: needs page size 1, which DSA models cannot use"
        )
    return replace(dep, mamba_strategy=strategy)



# arg_groups/mamba_hook.validate_mamba_extra_buffer (ServerArgs in older releases): the
# checkpoint interval must hold whole pages and the draft tokens; FLA kernels chunk by 64.
MAMBA_TRACK_INTERVAL = 256  # --mamba-track-interval default
FLA_CHUNK_SIZE = 64


def check_extra_buffer(page: int, draft_tokens: int) -> None:
    strategy = "--mamba-scheduler-strategy extra_buffer"
    if MAMBA_TRACK_INTERVAL % page:
        raise DeploymentError(f"--page-size {page}: {strategy} needs it to divide the track "
                              f"interval (SGLang: \"mamba_track_interval {MAMBA_TRACK_INTERVAL} "
                              f"must be divisible by page_size {page}\")")
    if max(FLA_CHUNK_SIZE, page) % min(FLA_CHUNK_SIZE, page):
        raise DeploymentError(f"--page-size {page}: {strategy} (SGLang: \"For SSM models with "
                              "extra buffer, either FLA_CHUNK_SIZE or page_size must be divisible "
                              f"by the other, got FLA_CHUNK_SIZE={FLA_CHUNK_SIZE}, "
                              f"self.page_size={page}\")")
    if draft_tokens > MAMBA_TRACK_INTERVAL:
        raise DeploymentError(f"--speculative-num-draft-tokens {draft_tokens}: {strategy} "
                              f"(SGLang: \"mamba_track_interval {MAMBA_TRACK_INTERVAL} must be "
                              f"greater than or equal to speculative_num_draft_tokens "
                              f"{draft_tokens}\")")


def state_slots_per_request(dep: Deployment, *, track_follows_overlap: bool = True
                            ) -> tuple[int, int]:
    """(reserved, held) state slots per running request of a hybrid model under `dep`
    (its mamba strategy resolved).

    Held is what a running request physically owns, as SGLang's HybridReqToTokenPool hands
    it out (mem_cache/memory_pool.py, HybridReqToTokenPool.alloc): one working slot
    (``mamba_pool_idx``) and, with extra_buffer, the ``mamba_ping_pong_track_buffer`` of
    ``mamba_ping_pong_track_buffer_size`` slots — 2 with the overlap scheduler, 1 without.
    Reserved is the planning ratio the pool is sized with (3 + track slots; no_buffer 3).
    `track_follows_overlap` False: 0.5.8/0.5.9's track slots, 2 without speculative decoding
    and 1 with it (`RuleSet.track_slots_follow_overlap`).

    >>> state_slots_per_request(Deployment(mamba_strategy=MambaStrategy.EXTRA_BUFFER))
    (5, 3)
    """
    if dep.disable_radix_cache:
        return 1, 1
    single_track = (dep.disable_overlap_schedule if track_follows_overlap
                    else dep.speculative)
    track_slots = 1 if single_track else 2  # ping-pong checkpoint slots
    if dep.mamba_strategy is MambaStrategy.EXTRA_BUFFER:
        return 3 + track_slots, 1 + track_slots
    return 3, 1


def state_slots(model: ModelArch, dep: Deployment, rules: RuleSet) -> tuple[int, int]:
    if not model.is_hybrid:
        return 0, 0
    return state_slots_per_request(dep, track_follows_overlap=rules.track_slots_follow_overlap)
