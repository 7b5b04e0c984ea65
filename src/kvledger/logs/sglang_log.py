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

from kvledger.logs.detect import sglang_rules_for
from kvledger.logs.expected import missing_sglang_lines
from kvledger.logs.lines import Engine, LogError, LogScan
from kvledger.logs.reconcile import Reconciliation, Row, Status
from kvledger.logs.sglang_args import stated_deployment
from kvledger.logs.sglang_roles import role_derived, role_rows
from kvledger.logs.sglang_rows import count_row, int_row, pool_rows, span_of, token_bytes
from kvledger.logs.sglang_stages import stage_derived, stage_pool_rows
from kvledger.logs.tags import check_stage_count
from kvledger.model.config import load_model
from kvledger.sglang.deploy import Deployment
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


# Points across a logged two-decimal interval at which kvledger plans: T is not monotonic in
# the memory (one more state slot costs tokens), so both ends alone can miss a value between.
INTERVAL_POINTS = (-1.0, -0.5, 0.0, 0.5, 1.0)


def _plans(scan: LogScan, model: str, dep: Deployment, rules: str
           ) -> tuple[SglangPlan, ...] | None:
    """Plans across the logged memory's interval (INTERVAL_POINTS), the free memory up as the
    weights go down (their sum is the free memory before loading); None when not derivable."""
    load = scan.get("sglang_load_weight")
    if load is None or _why_not_derivable(scan, dep) is not None:
        return None
    avail, usage = float(load.groups[0]), float(load.groups[1])
    rocm = _rocm(scan)
    _layout(model, dep, rules, rocm)  # an unreadable model is named as such, not as a misfit
    try:
        return tuple(make_plan(model, dep, rules=rules, available_gib=avail + x * HALF_CENT,
                               weights_gib=max(0.0, usage - x * HALF_CENT), rocm=rocm)
                     for x in INTERVAL_POINTS)
    except ValueError as exc:
        raise LogError(f"the log's deployment does not fit {model}: {exc}") from None


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


def _totals_rows(scan: LogScan, lay: CacheLayout, plans: tuple[SglangPlan, ...] | None,
                 unknown: str) -> list[Row]:
    rows: list[Row] = []
    caps = tuple(p.capacity for p in plans) if plans else None
    requests = span_of(caps, lambda cap: cap.max_running_requests)
    per_token = token_bytes(lay)
    if fact := scan.get("sglang_totals"):
        tokens = fact.int(0)
        rows.append(count_row(fact.line_no, "max_total_num_tokens", tokens,
                              span_of(caps, lambda cap: cap.max_total_tokens),
                              (tokens + lay.page_tokens) * per_token,
                              "token pool sizing differs", unknown))
        if requests is not None:
            rows.append(int_row(fact.line_no, "max_running_requests", fact.int(1), *requests,
                                "request limit differs"))
        else:
            rows.append(Row(line_no=fact.line_no, quantity="max_running_requests",
                            logged=f"{fact.int(1):,}", kvledger="—", status=Status.INFO,
                            reason=f"not derivable: {unknown}"))
        rows.append(int_row(fact.line_no, "context_len", fact.int(2), lay.context_tokens,
                            lay.context_tokens, "context length differs"))
        rows.append(Row(line_no=fact.line_no, quantity="available_gpu_mem (GB)",
                        logged=fact.groups[3], kvledger="—", status=Status.INFO,
                        reason="what the pools left free; not derived from the log"))
    if (fact := scan.get("sglang_capped")) and requests is not None:
        rows.append(int_row(fact.line_no, "max_running_requests capped by the state pool",
                            fact.int(0), *requests, "request cap differs"))
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
    try:
        check_stage_count(sorted(scan.stages), stated.deployment.pp_size, "--pp-size")
    except ValueError as exc:
        raise LogError(str(exc)) from None
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
        rows.append(int_row(fact.line_no, "DSA page (tokens)", fact.int(0), lay.page_tokens,
                             lay.page_tokens, "the DSA page differs"))
    unknown = _why_not_derivable(scan, stated.deployment) or ""
    if stated.deployment.pp_size > 1:
        whole = lay if plans else _layout(name, stated.deployment, rule_set, _rocm(scan))
        rows += stage_pool_rows(scan, whole, plans, unknown, notes)
    else:
        caps = tuple(p.capacity for p in plans) if plans else None
        rows += pool_rows(scan, lay, caps, unknown)
    rows += _totals_rows(scan, lay, plans, unknown)
    rows += role_rows(scan, tuple(p.capacity for p in plans) if plans else None)
    if not any(r.status in (Status.EQUAL, Status.DIFFERS) for r in rows):
        raise LogError(f"truncated: the log ends at line {scan.num_lines} before SGLang logs its "
                       "pools ('KV Cache is allocated', 'max_total_num_tokens=')")
    rows.sort(key=lambda r: r.line_no)
    derived = [("token bytes", f"{token_bytes(lay):,}"), ("page (tokens)", f"{lay.page_tokens}"),
               ("slots per request", f"{lay.slots_per_request}")]
    if stated.deployment.pp_size > 1:
        derived += stage_derived(lay, plans)
    if plans:
        derived.insert(0, ("state slot bytes", f"{plans[0].capacity.slot_bytes:,}"))
        derived += role_derived(plans[len(plans) // 2])
    else:
        notes.append(f"{unknown}: the pools' layout is checked at the logged counts; the "
                     "counts themselves are not derivable")
    binding = plans[0].capacity.binding.value if plans else f"not derivable ({unknown})"
    return Reconciliation(engine=Engine.SGLANG, version=version, rules=rule_set, model=lay.model.name,
                          rows=tuple(rows), binding=binding, derived=tuple(derived),
                          notes=tuple(notes + (list(plans[0].notes) if plans else list(lay.notes))),
                          missing=missing_sglang_lines(scan, has_state_pool=lay.state is not None))
