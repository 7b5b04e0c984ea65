"""`kvledger explain`: every number of a plan as one derivation line, like the article.

A count times a size is written count first, the size with its unit, the shape after it
(`69 × 4,194,320 B`, not `int32 × 69`, which reads as a power). With a workload
(`--requests`/`--context`) the check is derived too, ledger by ledger.

>>> from kvledger.sglang.plan import make_plan
>>> lines = explain(make_plan(kv_cache_dtype="fp8_e4m3"))
>>> "528 B × 11 layers = 5,808 B/token" in "\\n".join(lines)
True
>>> lines = explain(make_plan(kv_cache_dtype="fp8_e4m3", requests=100, context_tokens=32_000))
>>> [line for line in lines if line.startswith("state slots:")][0]
'state slots: 100 requests × 5 slots = 500 slots > K 343: NO (at most 343 // 5 = 68 requests)'
"""

from __future__ import annotations

from kvledger.report.show import show_size
from kvledger.sglang.plan import SglangPlan
from kvledger.sglang.specs import (
    FP8_SCALE_BYTES,
    FP8_SCALE_GROUP,
    GqaRowSpec,
    LatentRowSpec,
    RowLayout,
)
from kvledger.sglang.statebudget import StateSource


def _row_formula(spec: LatentRowSpec | GqaRowSpec) -> str:
    match spec:
        case GqaRowSpec():
            return (f"K+V row = 2 × {spec.kv_heads_per_rank} kv heads × {spec.head_dim} × "
                    f"{spec.itemsize} B = {spec.row_bytes:,} B")
        case LatentRowSpec(layout=RowLayout.FP8_SCALED):
            return (f"latent row = {spec.kv_lora_rank} × 1 B fp8 + {spec.kv_lora_rank}/"
                    f"{FP8_SCALE_GROUP} × {FP8_SCALE_BYTES} B scales + {spec.qk_rope_head_dim} "
                    f"rope × 2 B = {spec.row_bytes:,} B")
        case LatentRowSpec():
            size = 2 if spec.layout is RowLayout.BF16 else 1
            return (f"latent row = ({spec.kv_lora_rank} + {spec.qk_rope_head_dim} rope) × "
                    f"{size} B ({spec.layout.value}) = {spec.row_bytes:,} B")


def explain(plan: SglangPlan) -> list[str]:
    lay, cap, dep = plan.layout, plan.capacity, plan.layout.deployment
    lines = [f"attn_tp = tp {dep.tp_size} / attn_dp {dep.attn_dp_size} / cp {dep.attn_cp_size} "
             f"= {dep.attn_tp_size}", _row_formula(lay.kv_row)]
    for row in plan.ledgers.token.rows + plan.ledgers.token.memo:
        lines.append(f"{row.component}: {row.unit_bytes:,} B × {row.count} layers = "
                     f"{row.total_bytes:,} B/token")
    lines.append(f"per token = {' + '.join(f'{r.total_bytes:,}' for r in plan.ledgers.token.rows)}"
                 f" = {plan.ledgers.token.total_bytes:,} B/token")
    if key := lay.index_key:
        lines.append(f"indexer key = {key.key_bytes} B fp8 + {key.head_dim}/{FP8_SCALE_GROUP} × "
                     f"{FP8_SCALE_BYTES} B scale = {key.row_bytes} B; reserved {key.reserved_bytes} "
                     f"B/token ({lay.rules.name}); page = {key.page_tokens} tokens × "
                     f"{key.reserved_bytes} B = {key.page_bytes:,} B")
    if st := lay.state:
        ssm = dep.mamba_ssm_dtype
        assert ssm is not None
        conv = " × ".join(f"{d:,}" for d in st.conv_shape)
        temporal = " × ".join(f"{d:,}" for d in st.temporal_shape)
        lines += [
            f"conv = {conv} × {st.conv_itemsize} B = {st.conv_bytes:,} B",
            f"temporal = {temporal} × {st.temporal_itemsize} B ({ssm.value}) = "
            f"{st.temporal_bytes:,} B",
            f"per layer = {st.conv_bytes:,} + {st.temporal_bytes:,} = {st.bytes_per_layer:,} B",
            f"per state slot = {st.bytes_per_layer:,} B × {lay.model.num_linear_layers} layers = "
            f"{plan.ledgers.state.total_bytes:,} B",
        ]
    for row in plan.ledgers.request.rows:
        lines.append(f"{row.component}: {row.count} × {row.unit_bytes:,} B = {row.total_bytes:,} B "
                     f"per request")
    for row in cap.side.rows:
        lines.append(f"{row.component}: {row.count:,} × {row.unit_bytes:,} B = "
                     f"{row.total_bytes:,} B ({show_size(row.total_bytes)}) per rank; "
                     f"tensor {row.detail}")
    if plan.auto_mem_fraction is not None:
        lines.append(plan.auto_mem_fraction.derivation())
    if plan.weights_estimated and (weights := plan.ledgers.weights):
        for row in weights.rows:
            lines.append(f"weights, {row.component}: {row.detail} = {row.total_bytes:,} B per rank")
        lines.append(f"weights per rank = {weights.total_bytes:,} B; available = "
                     f"{cap.memory.pre_load_free_bytes:,} free before load − weights = "
                     f"{cap.memory.available_bytes:,} B")
    lines.append(f"rest = {cap.memory.available_bytes:,} − {cap.slack_bytes:,} slack − "
                 f"{cap.mm_reservation_bytes:,} multimodal = {cap.rest_bytes:,} B")
    rest_name = "rest"
    if cap.slot_bytes:
        lines += _state_lines(plan)
        rest_name = "rest'"
    page = lay.page_tokens
    cap_tokens = ("" if dep.max_total_tokens is None
                  else f", then min(T, --max-total-tokens {dep.max_total_tokens:,}) floored to {page}")
    lines.append(f"T = floor({rest_name} / {cap.token_bytes:,} / {page}) × {page}{cap_tokens} "
                 f"= {cap.max_total_tokens:,} tokens")
    candidates = ", ".join(f"{limit.value} {n:,}" for limit, n in cap.limits.items())
    lines.append(f"N = min({candidates}) = {cap.max_running_requests:,} "
                 f"(binding: {cap.binding.value})")
    lines += _role_lines(plan)
    tot = plan.totals
    lines.append(f"deployment: {tot.ranks} GPUs, {tot.workers} attention-DP workers; "
                 f"N × {tot.workers} = {tot.running_requests:,} requests, T × {tot.workers} = "
                 f"{tot.tokens:,} tokens; HBM × {tot.ranks}: token pools "
                 f"{tot.token_pool_bytes:,} B, state pools {tot.state_pool_bytes:,} B, verify "
                 f"scratch {tot.verify_bytes:,} B")
    return lines + _workload_lines(plan)


def _role_lines(plan: SglangPlan) -> list[str]:
    """The role, and a prefill/decode server's pools as allocated against the charge."""
    dep, role = plan.deployment, plan.capacity.role
    lines = [f"role: {dep.disaggregation_mode.label}"
             + (f", pipeline stage plan of {dep.pp_size} stages" if dep.pp_size > 1 else "")]
    if (pipe := plan.pipeline) is not None:
        linear = max(st.num_linear_layers for st in pipe.stages)
        lines.append(f"pp: state charged at the largest stage's share, {linear} linear layers: "
                     f"{pipe.charged_slot_bytes:,} B/slot on every stage")
        lines += [f"PP{st.pp_rank}: layers {st.start_layer}..{st.end_layer - 1}, "
                  f"{st.num_full_layers} full → {st.capacity.token_bytes:,} B/token, T alone "
                  f"{st.alone_tokens:,}; {st.num_linear_layers} linear → "
                  f"{st.own_slot_bytes:,} B/slot allocated, over-reserves "
                  f"{st.over_reserved_state_bytes:,} B" for st in pipe.stages]
        lines.append(f"T = min over stages = {pipe.tokens:,} (binding PP{pipe.binding_stage})")
    if role is None or not role.differs:
        return lines
    extra = dep.disaggregation_decode_extra_slots or 0
    if dep.disaggregation_mode.is_decode:
        lines.append(f"decode state slots allocated = max(K {role.charged_state_slots - 1:,}, "
                     f"(N + extra {extra:,}) × slots/request) + 1 = {role.allocated_state_slots:,}"
                     f" against K + 1 = {role.charged_state_slots:,} charged: "
                     f"{role.unbudgeted_state_bytes:,} B unbudgeted")
    if role.unbudgeted_verify_bytes:
        lines.append(f"verify rows allocated {role.allocated_verify_rows:,} against "
                     f"{role.charged_verify_rows:,} charged × {role.verify_row_bytes:,} B = "
                     f"{role.unbudgeted_verify_bytes:,} B")
    lines.append(f"corrected T (pools charged as allocated) = {role.corrected_tokens:,} tokens")
    return lines


def _verdict(need: int, capacity: int, name: str) -> str:
    return f"≤ {name} {capacity:,}: fits" if need <= capacity else f"> {name} {capacity:,}: NO"


def _workload_lines(plan: SglangPlan) -> list[str]:
    """The workload check (`kvledger.sglang.capacity.check_workload`), one line a ledger."""
    work = plan.workload
    if work is None:
        return []
    lay, cap = plan.layout, plan.capacity
    dp, spr, c = lay.deployment.attn_dp_size, lay.slots_per_request, work.context_tokens
    r = work.requests_per_rank
    lines = [f"workload: {work.requests:,} requests × {c:,} tokens; per rank = "
             f"ceil({work.requests:,} / attn_dp {dp}) = {r:,} requests"]
    for row in work.rows:
        match row.ledger:
            case "context length":
                lines.append(f"context length: {c:,} tokens "
                             f"{_verdict(c, row.capacity, 'context_len')}")
            case "token KV":
                lines.append(f"token KV: {r:,} requests × {c:,} tokens = {row.need:,} tokens "
                             f"({row.need_bytes:,} B) {_verdict(row.need, row.capacity, 'T')} "
                             f"(at most {row.capacity:,} // {c:,} = {row.max_requests:,} requests)")
            case "state slots":
                lines.append(f"state slots: {r:,} requests × {spr} slots = {row.need:,} slots "
                             f"{_verdict(row.need, row.capacity, 'K')} (at most "
                             f"{cap.state_slots:,} // {spr} = {row.max_requests:,} requests)")
            case _:
                lines.append(f"{row.ledger}: {r:,} {_verdict(row.need, row.capacity, 'N')}")
    first = work.first_overflow
    lines.append("workload fits" if first is None else
                 f"workload does NOT fit: {first.ledger} overflows first "
                 f"(at most {first.max_requests:,} requests per rank)")
    return lines


def _state_lines(plan: SglangPlan) -> list[str]:
    """K and the verify scratch, in _handle_max_mamba_cache's order."""
    lay, cap, dep = plan.layout, plan.capacity, plan.layout.deployment
    budget = cap.state_budget
    assert budget is not None
    S, K, D = cap.slot_bytes, cap.state_slots, dep.speculative_num_draft_tokens
    ratio, spr = dep.mamba_full_memory_ratio, lay.slots_per_request
    lines = []
    match budget.source:
        case StateSource.MAX_MAMBA_CACHE_SIZE:
            lines.append(f"K = --max-mamba-cache-size {dep.max_mamba_cache_size:,} // attn_dp "
                         f"{dep.attn_dp_size} = {K:,} slots")
        case StateSource.RUNNING_REQUESTS:
            lines.append(f"K = --max-running-requests {dep.max_running_requests:,} // attn_dp "
                         f"{dep.attn_dp_size} = {K:,} slots (radix cache off)")
        case StateSource.RATIO if D:
            lines.append(f"B = {cap.rest_bytes:,} × {ratio}/(1+{ratio}) = "
                         f"{budget.mamba_budget_bytes:,.0f} B")
            lines.append(f"K = floor((B − {S:,} × (1 + {D})) / ({S:,} × (1 + {D}/{spr}))) = "
                         f"{K:,} slots (joint with the verify scratch)")
        case StateSource.RATIO:
            lines.append(f"K = floor({cap.rest_bytes:,} × {ratio}/(1+{ratio}) / {S:,}) − 1 = "
                         f"{K:,} slots")
    if D:
        n = budget.verify_requests
        how = ("K (radix cache off)" if budget.source is StateSource.RUNNING_REQUESTS else
               f"min(--max-running-requests {dep.max_running_requests:,} // "
               f"{dep.attn_dp_size}, K {K:,} // {spr})")
        lines.append(f"verify scratch = {S:,} × (n {n:,} + 1) × {D} draft tokens = "
                     f"{cap.verify_bytes:,} B, n = {how}")
    rest_tokens = cap.rest_bytes - cap.verify_bytes - (K + 1) * S
    scratch = f" − {cap.verify_bytes:,}" if D else ""
    lines.append(f"rest' = {cap.rest_bytes:,}{scratch} − {K + 1} × {S:,} = {rest_tokens:,} B")
    return lines
