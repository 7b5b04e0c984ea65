"""Reconcile an SGLang boot log with kvledger's SGLang plan (kvledger.sglang.plan.make_plan).

The deployment comes from the logged `server_args=ServerArgs(…)` (its attribute names are the
flags' names, `--tp-size` ↔ `tp_size`), the memory from `Load weight end … avail mem=X GB,
mem usage=Y GB` (GiB, printed with two decimals: kvledger plans at both ends of the interval
and a logged number reconciles when it lies between the two plans' values). Rows: the state
pool (`Mamba Cache is allocated`: slots, conv and ssm bytes), the token pool (`KV Cache is
allocated`: #tokens and bytes), the totals line (max_total_num_tokens, max_running_requests,
context_len) and the request cap by the state pool. SGLang writes GiB as "GB".
"""

from __future__ import annotations

import ast
from dataclasses import fields

from kvledger.core.units import GiB
from kvledger.logs.expected import missing_sglang_lines
from kvledger.logs.lines import Engine, LogError, LogScan
from kvledger.logs.reconcile import Reconciliation, Row, Status
from kvledger.sglang.deploy import FIELD_FLAGS
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.launch.parse import DIRECT_FIELDS
from kvledger.sglang.plan import SglangPlan, make_plan
from kvledger.sglang.rules import DEFAULT_RULES

HALF_CENT = 0.005  # half the last printed digit of a two-decimal GB figure


def _server_args(text: str, line_no: int) -> tuple[list[str], str | None]:
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except SyntaxError:
        raise LogError(f"line {line_no}: ServerArgs(…) does not parse (a truncated line?)") from None
    assert isinstance(call, ast.Call)
    values: dict[str, object] = {}
    for kw in call.keywords:
        try:
            values[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            continue  # an object repr (not a literal): no memory flag prints that way
    words: list[str] = []
    for field in sorted(DIRECT_FIELDS):
        flag = FIELD_FLAGS[field]
        value = values.get(flag[2:].replace("-", "_"))
        if value is None or value is False:
            continue
        words += [flag] if value is True else [flag, str(value)]
    model = values.get("model_path")
    return words, model if isinstance(model, str) else None


def _plans(scan: LogScan, model: str, words: list[str], rules: str, gpu: str | None
           ) -> tuple[SglangPlan, SglangPlan]:
    load = scan.get("sglang_load_weight")
    if load is None:
        raise LogError(f"truncated: no 'Load weight end … avail mem=' line in {scan.num_lines} "
                       "lines, so the free memory the pools are sized from is unknown")
    avail, usage = float(load.groups[0]), float(load.groups[1])
    try:
        dep = parse_flags(words).deployment
        low = make_plan(model, dep, rules=rules, available_gib=avail - HALF_CENT,
                        weights_gib=usage + HALF_CENT)
        high = make_plan(model, dep, rules=rules, available_gib=avail + HALF_CENT,
                         weights_gib=max(0.0, usage - HALF_CENT))
    except ValueError as exc:
        raise LogError(f"the log's deployment does not fit {model}: {exc}") from None
    del gpu  # SGLang's sizing here needs no GPU: the log gives the free memory
    return low, high


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


def reconcile_sglang(scan: LogScan, *, model: str | None = None, rules: str | None = None,
                     gpu: str | None = None) -> Reconciliation:
    notes: list[str] = []
    args = scan.get("sglang_server_args")
    words: list[str] = []
    logged_model = None
    if args is not None:
        words, logged_model = _server_args(args.value, args.line_no)
    else:
        notes.append("no server_args line: SGLang's defaults assumed")
    name = model or logged_model
    if name is None:
        raise LogError("the log names no model; pass --model")
    rule_set = rules or DEFAULT_RULES
    if rules is None:
        notes.append(f"SGLang logs carry no version: checked against {rule_set} (pass --rules)")
    low, high = _plans(scan, name, words, rule_set, gpu)
    lay = low.layout
    rows: list[Row] = []
    if fact := scan.get("sglang_load_weight"):
        rows.append(Row(line_no=fact.line_no, quantity="avail mem after weights (GB = GiB)",
                        logged=fact.groups[0], kvledger="±0.005", status=Status.INPUT))
    if fact := scan.get("sglang_mamba"):
        lc, hc = low.capacity, high.capacity
        rows.append(_int_row(fact.line_no, "max_mamba_cache_size (state slots)", fact.int(0),
                             lc.state_slots, hc.state_slots, "state pool sizing differs"))
        layers = lay.model.num_linear_layers
        conv, ssm = (lay.state.conv_bytes, lay.state.temporal_bytes) if lay.state else (0, 0)
        rows.append(_gb_row(fact.line_no, "conv_state size (GB)", fact.groups[1],
                            (lc.state_slots + 1) * conv * layers, (hc.state_slots + 1) * conv * layers))
        rows.append(_gb_row(fact.line_no, "ssm_state size (GB)", fact.groups[2],
                            (lc.state_slots + 1) * ssm * layers, (hc.state_slots + 1) * ssm * layers))
    if fact := scan.get("sglang_kv"):
        lc, hc = low.capacity, high.capacity
        rows.append(_int_row(fact.line_no, "#tokens (KV pool)", fact.int(0), lc.max_total_tokens,
                             hc.max_total_tokens, "token pool sizing differs"))
        half = len(fact.groups) == 3  # K size and V size, each half of a GQA row
        for i, label in ((1, "K size (GB)" if half else "KV size (GB)"),) + (
                ((2, "V size (GB)"),) if half else ()):
            lo, hi = lc.token_pool_bytes, hc.token_pool_bytes
            if half:
                lo, hi = lo // 2, hi // 2
            rows.append(_gb_row(fact.line_no, label, fact.groups[i], lo, hi))
    if fact := scan.get("sglang_totals"):
        lc, hc = low.capacity, high.capacity
        rows.append(_int_row(fact.line_no, "max_total_num_tokens", fact.int(0),
                             lc.max_total_tokens, hc.max_total_tokens, "token pool sizing differs"))
        rows.append(_int_row(fact.line_no, "max_running_requests", fact.int(1),
                             lc.max_running_requests, hc.max_running_requests,
                             "request limit differs"))
        rows.append(_int_row(fact.line_no, "context_len", fact.int(2), lay.context_tokens,
                             lay.context_tokens, "context length differs"))
        rows.append(Row(line_no=fact.line_no, quantity="available_gpu_mem (GB)",
                        logged=fact.groups[3], kvledger="—", status=Status.INFO,
                        reason="what the pools left free; not derived from the log"))
    if fact := scan.get("sglang_capped"):
        rows.append(_int_row(fact.line_no, "max_running_requests capped by the state pool",
                             fact.int(0), low.capacity.max_running_requests,
                             high.capacity.max_running_requests, "request cap differs"))
    if len(rows) <= 1:
        raise LogError(f"truncated: the log ends at line {scan.num_lines} before SGLang logs its "
                       "pools ('KV Cache is allocated', 'max_total_num_tokens=')")
    rows.sort(key=lambda r: r.line_no)
    cap = low.capacity
    derived = (("state slot bytes", f"{cap.slot_bytes:,}"), ("token bytes", f"{cap.token_bytes:,}"),
               ("page (tokens)", f"{lay.page_tokens}"),
               ("slots per request", f"{lay.slots_per_request}"))
    dep = lay.deployment
    assert {f.name for f in fields(dep)}
    return Reconciliation(engine=Engine.SGLANG, version=None, rules=rule_set, model=lay.model.name,
                          rows=tuple(rows), binding=cap.binding.value, derived=derived,
                          notes=tuple(notes + list(low.notes)),
                          missing=missing_sglang_lines(scan, has_state_pool=lay.state is not None))
