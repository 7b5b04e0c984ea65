"""Reconcile an SGLang boot log with kvledger's SGLang plan (kvledger.sglang.plan.make_plan).

The deployment comes from the logged `server_args=ServerArgs(…)` (its attribute names are the
flags' names, `--tp-size` ↔ `tp_size`; a repr clipped by the paste gives the keys it still
holds, kvledger.logs.clipped), else from a launch command anywhere in the paste (`python -m
sglang.launch_server …`, `sglang serve …`), then the deployment flags given after `--` on
kvledger's command line override both. The memory comes from `Load weight end … avail mem=X
GB, mem usage=Y GB` (GiB, printed with two decimals: kvledger plans at both ends of the
interval and a logged count reconciles when it lies between the two plans' values).

Layout and capacity are separate checks. A pool's logged size is checked against the layout
at the *logged* count: the token pool holds `(#tokens + page) × bytes per token` (SGLang's
MHATokenToKVPool/MLATokenToKVPool allocate `size + page_size` rows, mem_cache/memory_pool.py),
the state pool `(max_mamba_cache_size + 1) × bytes per slot` per tensor (MambaPool: slot 0 is
padding). That holds whether or not the counts can be derived: without the `Load weight end`
line, or without a stated mem_fraction_static, a count is not derivable, and its row says how
much memory would explain it. (SGLang never runs at fraction 1.0 by default: unset, it picks
the fraction from the GPU's memory and the layout, server_args.py, and a paste without
ServerArgs states neither; `-- --mem-fraction-static F` gives it.)

SGLang's DSA page warning ("Setting page size to 1 for DeepSeek DSA on ROCm.") is checked as a
row of its own, and its "on ROCm" resolves the layout for ROCm (`RuleSet.rocm_dsa_page_tokens`).

>>> from kvledger.logs.lines import scan_log
>>> r = reconcile_sglang(scan_log(
...     "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --tp 2\\n"
...     "KV Cache is allocated. #tokens: 100000, K size: 3.05 GB, V size: 3.05 GB\\n"))
>>> [(row.quantity, row.status.value) for row in r.rows]
[('#tokens (KV pool)', 'not reconciled'), ('K size (GB)', 'equal'), ('V size (GB)', 'equal')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kvledger.core.units import GiB
from kvledger.logs.detect import sglang_rules_for
from kvledger.logs.expected import missing_sglang_lines
from kvledger.logs.lines import Engine, LogError, LogScan
from kvledger.logs.reconcile import Reconciliation, Row, Status
from kvledger.logs.sglang_args import stated_deployment
from kvledger.model.config import load_model
from kvledger.sglang.choices import KVDtype
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.ledger import draft_token_ledger, token_ledger
from kvledger.sglang.plan import SglangPlan, make_plan
from kvledger.sglang.resolve import CacheLayout, resolve
from kvledger.sglang.rules import DEFAULT_RULES, get_rules

HALF_CENT = 0.005  # half the last printed digit of a two-decimal GB figure


def _release(scan: LogScan, rules: str | None, notes: list[str]) -> tuple[str, str | None]:
    """--rules when given, else the release the paste names (detect.sglang_rules_for), else
    the default."""
    fact = scan.get("sglang_version")
    version = fact.value if fact else None
    if rules is not None:
        return rules, version
    if fact is None:
        notes.append(f"the paste names no SGLang version: checked against {DEFAULT_RULES} "
                     "(pass --rules)")
        return DEFAULT_RULES, None
    try:
        rule_set, note = sglang_rules_for(fact.value)
    except LogError as exc:
        raise LogError(f"line {fact.line_no}: {exc}") from None
    notes.append(f"line {fact.line_no} names SGLang v{fact.value.lstrip('v')}: {rule_set}"
                 + (f" ({note})" if note else ""))
    return rule_set, version


def _why_not_derivable(scan: LogScan, dep: Deployment) -> str | None:
    """Why the pools' counts cannot be derived from this paste (None: they can)."""
    if scan.get("sglang_load_weight") is None:
        return "no 'Load weight end … avail mem=' line"
    if dep.mem_fraction_static is None:
        return ("mem_fraction_static is not stated (SGLang picks it from the GPU's memory; "
                "pass -- --mem-fraction-static)")
    return None


def _rocm(scan: LogScan) -> bool | None:
    """True when SGLang's DSA page warning names ROCm (`… for DeepSeek DSA on ROCm`)."""
    fact = scan.get("sglang_dsa_page")
    return True if fact is not None and fact.groups[1] else None


def _plans(scan: LogScan, model: str, dep: Deployment, rules: str
           ) -> tuple[SglangPlan, SglangPlan] | None:
    load = scan.get("sglang_load_weight")
    if load is None or _why_not_derivable(scan, dep) is not None:
        return None
    avail, usage = float(load.groups[0]), float(load.groups[1])
    rocm = _rocm(scan)
    _layout(model, dep, rules, rocm)  # an unreadable model is named as such, not as a misfit
    try:
        low = make_plan(model, dep, rules=rules, available_gib=avail - HALF_CENT,
                        weights_gib=usage + HALF_CENT, rocm=rocm)
        high = make_plan(model, dep, rules=rules, available_gib=avail + HALF_CENT,
                         weights_gib=max(0.0, usage - HALF_CENT), rocm=rocm)
    except ValueError as exc:
        raise LogError(f"the log's deployment does not fit {model}: {exc}") from None
    return low, high


def _layout(model: str, dep: Deployment, rules: str, rocm: bool | None = None) -> CacheLayout:
    try:
        arch = load_model(model)
    except (ValueError, OSError) as exc:
        raise LogError(f"the log's model {model!r} is not a config kvledger can read ({exc}); "
                       "pass --model with an embedded name or a config.json") from None
    try:
        return resolve(arch, dep, get_rules(rules), rocm=rocm)
    except ValueError as exc:
        raise LogError(f"the log's deployment does not fit {model}: {exc}") from None


def _token_bytes(lay: CacheLayout) -> int:
    """Bytes per token of the token pool (capacity.plan_capacity's C_token, draft included)."""
    draft = draft_token_ledger(lay)
    return token_ledger(lay).total_bytes + (draft.total_bytes if draft else 0)


def _int_row(line_no: int, quantity: str, logged: int, lo: int, hi: int, why: str) -> Row:
    ok = lo <= logged <= hi
    shown = f"{lo:,}" if lo == hi else f"{lo:,} … {hi:,}"
    return Row(line_no=line_no, quantity=quantity, logged=f"{logged:,}", kvledger=shown,
               status=Status.EQUAL if ok else Status.DIFFERS, reason="" if ok else why)


def _gb_row(line_no: int, quantity: str, logged: str, lo_bytes: int, hi_bytes: int) -> Row:
    lo, hi = f"{lo_bytes / GiB:.2f}", f"{hi_bytes / GiB:.2f}"
    ok = float(lo) <= float(logged) <= float(hi)
    return Row(line_no=line_no, quantity=quantity, logged=logged,
               kvledger=lo if lo == hi else f"{lo} … {hi}",
               status=Status.EQUAL if ok else Status.DIFFERS,
               reason="" if ok else "pool bytes differ")


# SGLang's torch dtype names for kvledger's KV dtypes (model_runner.py sets kv_cache_dtype
# to torch.bfloat16 for auto on bf16 models, torch.float8_e4m3fn for fp8_e4m3)
_TORCH_KV = {KVDtype.BF16: "bfloat16", KVDtype.FP8_E4M3: "float8_e4m3fn"}


def _count_row(line_no: int, quantity: str, logged: int, span: tuple[int, int] | None,
               explain_bytes: int, why: str, unknown: str = "") -> Row:
    """A logged count: against the plan's when memory is known, else not derivable
    (`unknown` says why), with the pool memory that explains it."""
    need = f"{explain_bytes / GiB:.2f} GiB of pool holds it"
    if span is None:
        return Row(line_no=line_no, quantity=quantity, logged=f"{logged:,}", kvledger="—",
                   status=Status.INFO, reason=f"not derivable: {unknown}; {need}")
    row = _int_row(line_no, quantity, logged, span[0], span[1], why)
    return row if row.status is Status.EQUAL else replace(row, reason=f"{why}; {need}")


def _pool_rows(scan: LogScan, lay: CacheLayout, plans: tuple[SglangPlan, SglangPlan] | None,
               unknown: str) -> list[Row]:
    """Layout at the logged counts, and the counts against the plans."""
    rows: list[Row] = []
    low, high = plans if plans else (None, None)
    if fact := scan.get("sglang_mamba"):
        slots = fact.int(0)
        layers = lay.model.num_linear_layers
        conv, ssm = (lay.state.conv_bytes, lay.state.temporal_bytes) if lay.state else (0, 0)
        span = (low.capacity.state_slots, high.capacity.state_slots) if low and high else None
        rows.append(_count_row(fact.line_no, "max_mamba_cache_size (state slots)", slots, span,
                               (slots + 1) * (conv + ssm) * layers, "state pool sizing differs",
                               unknown))
        for i, label, unit in ((1, "conv_state size (GB)", conv), (2, "ssm_state size (GB)", ssm)):
            at = (slots + 1) * unit * layers
            rows.append(_gb_row(fact.line_no, f"{label} at {slots:,} slots", fact.groups[i], at, at))
    if fact := scan.get("sglang_kv"):
        tokens = fact.int(0)
        pool = (tokens + lay.page_tokens) * _token_bytes(lay)
        span = (low.capacity.max_total_tokens, high.capacity.max_total_tokens) if low and high else None
        rows.append(_count_row(fact.line_no, "#tokens (KV pool)", tokens, span, pool,
                               "token pool sizing differs", unknown))
        half = len(fact.groups) == 3  # K size and V size, each half of a GQA row
        labels = ((1, "K size (GB)"), (2, "V size (GB)")) if half else ((1, "KV size (GB)"),)
        for i, label in labels:
            at = pool // 2 if half else pool
            rows.append(_gb_row(fact.line_no, label, fact.groups[i], at, at))
    if fact := scan.get("sglang_kv_draft"):
        # the draft model's layers are not in the target's config: shown, not checked
        per_token = round(float(fact.groups[1]) * GiB / (fact.int(0) + lay.page_tokens))
        rows.append(Row(line_no=fact.line_no, quantity="draft model's token pool (GB)",
                        logged=", ".join(fact.groups[1:]), kvledger="—", status=Status.INFO,
                        reason=f"a second pool of {fact.int(0):,} tokens: the speculative "
                        f"draft's; about {per_token:,} B per token per K/V tensor, not checked"))
    if (fact := scan.get("sglang_kv_dtype")) and lay.deployment.kv_cache_dtype in _TORCH_KV:
        want = _TORCH_KV[lay.deployment.kv_cache_dtype]
        ok = fact.value == want
        rows.append(Row(line_no=fact.line_no, quantity="KV cache dtype", logged=fact.value,
                        kvledger=want, status=Status.EQUAL if ok else Status.DIFFERS,
                        reason="" if ok else "the KV dtype differs: pass --kv-cache-dtype "
                        "after --"))
    return rows


def _totals_rows(scan: LogScan, lay: CacheLayout, plans: tuple[SglangPlan, SglangPlan] | None,
                 unknown: str) -> list[Row]:
    rows: list[Row] = []
    low, high = plans if plans else (None, None)
    token_bytes = _token_bytes(lay)
    if fact := scan.get("sglang_totals"):
        tokens = fact.int(0)
        span = (low.capacity.max_total_tokens, high.capacity.max_total_tokens) if low and high else None
        rows.append(_count_row(fact.line_no, "max_total_num_tokens", tokens, span,
                               (tokens + lay.page_tokens) * token_bytes,
                               "token pool sizing differs", unknown))
        if low and high:
            rows.append(_int_row(fact.line_no, "max_running_requests", fact.int(1),
                                 low.capacity.max_running_requests,
                                 high.capacity.max_running_requests, "request limit differs"))
        else:
            rows.append(Row(line_no=fact.line_no, quantity="max_running_requests",
                            logged=f"{fact.int(1):,}", kvledger="—", status=Status.INFO,
                            reason=f"not derivable: {unknown}"))
        rows.append(_int_row(fact.line_no, "context_len", fact.int(2), lay.context_tokens,
                             lay.context_tokens, "context length differs"))
        rows.append(Row(line_no=fact.line_no, quantity="available_gpu_mem (GB)",
                        logged=fact.groups[3], kvledger="—", status=Status.INFO,
                        reason="what the pools left free; not derived from the log"))
    if (fact := scan.get("sglang_capped")) and low and high:
        rows.append(_int_row(fact.line_no, "max_running_requests capped by the state pool",
                             fact.int(0), low.capacity.max_running_requests,
                             high.capacity.max_running_requests, "request cap differs"))
    if fact := scan.get("sglang_pool_end"):
        rows.append(Row(line_no=fact.line_no, quantity="Memory pool end, avail mem (GB)",
                        logged=fact.value, kvledger="—", status=Status.INFO,
                        reason="what the pools left free (smallest rank); not derived"))
    return rows


def reconcile_sglang(scan: LogScan, *, model: str | None = None, rules: str | None = None,
                     gpu: str | None = None, flags: Sequence[str] = ()) -> Reconciliation:
    """The deployment, the layout, then every logged pool and count (module doc)."""
    del gpu  # SGLang's sizing here needs no GPU: the log gives the free memory
    stated = stated_deployment(scan, flags)
    notes = list(stated.notes)
    name = model or stated.model
    if name is None:
        raise LogError("the log names no model; pass --model")
    rule_set, version = _release(scan, rules, notes)
    plans = _plans(scan, name, stated.deployment, rule_set)
    lay = plans[0].layout if plans else _layout(name, stated.deployment, rule_set, _rocm(scan))
    rows: list[Row] = []
    if fact := scan.get("sglang_load_weight"):
        rows.append(Row(line_no=fact.line_no, quantity="avail mem after weights (GB = GiB)",
                        logged=fact.groups[0], kvledger="±0.005", status=Status.INPUT))
    if fact := scan.get("sglang_dsa_page"):
        if fact.groups[1]:
            notes.append(f"line {fact.line_no}: SGLang names the platform: ROCm")
        rows.append(_int_row(fact.line_no, "DSA page (tokens)", fact.int(0), lay.page_tokens,
                             lay.page_tokens, "the DSA page differs"))
    unknown = _why_not_derivable(scan, stated.deployment) or ""
    rows += _pool_rows(scan, lay, plans, unknown) + _totals_rows(scan, lay, plans, unknown)
    if not any(r.status in (Status.EQUAL, Status.DIFFERS) for r in rows):
        raise LogError(f"truncated: the log ends at line {scan.num_lines} before SGLang logs its "
                       "pools ('KV Cache is allocated', 'max_total_num_tokens=')")
    rows.sort(key=lambda r: r.line_no)
    derived = [("token bytes", f"{_token_bytes(lay):,}"), ("page (tokens)", f"{lay.page_tokens}"),
               ("slots per request", f"{lay.slots_per_request}")]
    if plans:
        derived.insert(0, ("state slot bytes", f"{plans[0].capacity.slot_bytes:,}"))
    else:
        notes.append(f"{unknown}: the pools' layout is checked at the logged counts; the "
                     "counts themselves are not derivable")
    binding = plans[0].capacity.binding.value if plans else f"not derivable ({unknown})"
    return Reconciliation(engine=Engine.SGLANG, version=version, rules=rule_set, model=lay.model.name,
                          rows=tuple(rows), binding=binding, derived=tuple(derived),
                          notes=tuple(notes + (list(plans[0].notes) if plans else list(lay.notes))),
                          missing=missing_sglang_lines(scan, has_state_pool=lay.state is not None))
