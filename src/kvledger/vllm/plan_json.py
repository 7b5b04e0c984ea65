"""The `kvledger plan --engine vllm --json` document.

Schema `kvledger.vllm-plan/1`, inside the common envelope (`core.envelope`: schema,
kvledger_version, ignored_flags, notes), then engine "vllm", model{name, family}, rules, gpu,
deployment{every VllmDeployment field, defaults resolved}, layout{max_model_len,
prefix_caching, mamba_cache_mode, attention_bytes_per_token, mamba_real_page_bytes,
granule_tokens, block_tokens, page_bytes, mamba_padding_bytes, groups[{kind, num_layers}],
bytes_per_block, indexer_page_bytes, indexer_layers, kpool_tail, dcp_size,
rank_tokens_per_request}, ledgers{memory, per_block, per_request, lost_per_request, lost_per_rank},
capacity{available_bytes, num_blocks, blocks_per_request, max_concurrency, logged_tokens,
attention_token_slots, max_num_seqs, binding, lost_bytes}, totals{ranks, workers,
running_requests, tokens, token_pool_bytes, state_pool_bytes, verify_bytes, side_bytes},
context_fit{context_tokens, requests, per_worker, workers, binding, binding_label} (requests of
the workload's context — else max_model_len — that fit at once over the DP engines: the same
key as SGLang's plan document, like for like), workload|null{requests|null,
context_tokens|null, fits}, pipeline|null{binding_stage, num_blocks, stages[{pp_rank,
start_layer, end_layer, groups[{kind, num_layers}], bytes_per_block, own_num_blocks,
num_blocks, pool_bytes, trimmed_blocks, ledgers{per_block, per_request, lost_per_request,
lost_per_rank}}]} (with --pipeline-parallel-size > 1; layout,
ledgers and capacity are then the binding stage's). `totals`, `context_fit`, `workload`,
`pipeline` and the layout's `dcp_size` / `rank_tokens_per_request` were added within major 1.
"""

from __future__ import annotations

from dataclasses import fields
from enum import Enum
from typing import TYPE_CHECKING, Any

from kvledger.core.envelope import envelope, schema_name
from kvledger.core.ledger import ledger_json
from kvledger.vllm.context_parallel import local_tokens

if TYPE_CHECKING:
    from kvledger.vllm.plan import VllmPlan

SCHEMA = schema_name("vllm-plan")


def vllm_plan_json(plan: VllmPlan, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    lay, cap, led = plan.layout, plan.capacity, plan.ledgers
    dep = lay.deployment
    al = lay.alignment
    return envelope("vllm-plan", {
        "engine": "vllm",
        "model": {"name": plan.model.name, "family": plan.model.family.value},
        "rules": lay.rules.name, "gpu": plan.gpu.name if plan.gpu else None,
        "deployment": {f.name: (v.value if isinstance(v := getattr(dep, f.name), Enum) else v)
                       for f in fields(dep)},
        "layout": {
            "max_model_len": lay.max_model_len, "prefix_caching": lay.prefix_caching,
            "mamba_cache_mode": lay.mamba_cache_mode.value if lay.mamba_cache_mode else None,
            "attention_bytes_per_token": lay.attention.bytes_per_token,
            "mamba_real_page_bytes": lay.mamba.real_page_bytes if lay.mamba else None,
            "granule_tokens": al.granule_tokens if al else None,
            "block_tokens": lay.block_tokens, "page_bytes": lay.page_bytes,
            "mamba_padding_bytes": al.mamba_padding_bytes if al else 0,
            "groups": [{"kind": g.kind, "num_layers": g.num_layers} for g in lay.groups],
            "indexer_page_bytes": lay.indexer.page_bytes if lay.indexer else None,
            "indexer_layers": lay.num_indexer_layers, "kpool_tail": lay.kpool_tail,
            "bytes_per_block": lay.bytes_per_block, "dcp_size": lay.dcp_size,
            "rank_tokens_per_request": local_tokens(lay.max_model_len, lay.dcp_size),
        },
        "ledgers": {"memory": ledger_json(led.memory), "per_block": ledger_json(led.per_block),
                    "per_request": ledger_json(led.per_request),
                    "lost_per_request": ledger_json(led.lost_per_request),
                    "lost_per_rank": ledger_json(led.lost_per_rank)},
        "capacity": {
            "available_bytes": cap.available_bytes, "num_blocks": cap.num_blocks,
            "blocks_per_request": cap.blocks_per_request,
            "max_concurrency": cap.max_concurrency, "logged_tokens": cap.logged_tokens,
            "attention_token_slots": cap.num_blocks * lay.block_tokens,
            "max_num_seqs": cap.max_num_seqs, "binding": cap.binding,
            "lost_bytes": plan.lost_bytes,
        },
        "totals": {f.name: getattr(plan.totals, f.name) for f in fields(plan.totals)},
        "context_fit": plan.fit_at().to_json(),
        "workload": {"requests": plan.requests, "context_tokens": plan.context_tokens_asked,
                     "fits": plan.fits(None, None)} if plan.asked else None,
        "pipeline": _pipeline(plan),
    }, ignored_flags=ignored_flags, notes=plan.notes)


def _pipeline(plan: VllmPlan) -> dict[str, Any] | None:
    pipe = plan.pipeline
    if pipe is None:
        return None
    return {"binding_stage": pipe.binding_stage, "num_blocks": pipe.num_blocks, "stages": [{
        "pp_rank": s.stage.pp_rank, "start_layer": s.stage.start_layer,
        "end_layer": s.stage.end_layer,
        "groups": [{"kind": g.kind, "num_layers": g.num_layers} for g in s.layout.groups],
        "bytes_per_block": s.capacity.bytes_per_block,
        "own_num_blocks": s.capacity.own_num_blocks, "num_blocks": s.capacity.num_blocks,
        "pool_bytes": s.pool_bytes, "trimmed_blocks": s.capacity.trimmed_blocks,
        "ledgers": {name: ledger_json(getattr(s.ledgers, name)) for name in (
            "per_block", "per_request", "lost_per_request", "lost_per_rank")}}
        for s in pipe.stages]}
