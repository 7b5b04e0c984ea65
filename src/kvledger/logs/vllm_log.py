"""Reconcile a vLLM boot log: every logged capacity number against kvledger's vLLM rules.

Order: the release (logged version, else --rules), the deployment (non-default args, else a
`vllm serve` line), the model (--model, else the args' model when it is a config kvledger can
read), the layout (kvledger.vllm.layout), then num_gpu_blocks from the first anchor the log
gives — `Available KV cache memory` (an interval: vLLM prints two decimals of GiB), else
`num_gpu_blocks is`, else the logged token count inverted — and every other number from it.

>>> text = ("Available KV cache memory: 44.59 GiB\\n"
...         "GPU KV cache size: 973,760 tokens\\n"
...         "Maximum concurrency for 262,144 tokens per request: 14.77x\\n"
...         "non-default args: {'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct', "
...         "'tensor_parallel_size': 2}\\n")
>>> from kvledger.logs.lines import scan_log
>>> r = reconcile_vllm(scan_log(text), rules="vllm-0.13")
>>> [(row.quantity, row.status.value) for row in r.rows][1:]
[('GPU KV cache size (tokens)', 'equal'), ('Maximum concurrency', 'equal')]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from kvledger.core.gpus import get_gpu
from kvledger.core.units import GiB
from kvledger.logs.detect import vllm_rules_for
from kvledger.logs.engine_config import apply_engine_config
from kvledger.logs.expected import missing_vllm_lines
from kvledger.logs.lines import Engine, LogError, LogScan
from kvledger.logs.reconcile import Reconciliation, Row, Status, compare, span
from kvledger.logs.tags import check_stage_count
from kvledger.logs.vllm_args import vllm_deployment_from_args
from kvledger.logs.vllm_derived import binding, derived
from kvledger.logs.vllm_stages import stage_blocks
from kvledger.model.arch import ModelArch, ModelError
from kvledger.model.config import load_model
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.flags import parse_vllm_command
from kvledger.vllm.layout import VllmLayout, vllm_layout
from kvledger.vllm.rules import LoggedTokens, VllmRules, get_vllm_rules


def _with_flags(dep: VllmDeployment, model: str | None, flags: Sequence[str]
                ) -> tuple[VllmDeployment, str | None, list[str]]:
    """The deployment flags given after `--` over what the log states."""
    if not flags:
        return dep, model, []
    try:
        extra = parse_vllm_command(list(flags))
        dep = replace(dep, **{f: getattr(extra.deployment, f) for f in extra.set_fields})
    except ValueError as exc:
        raise LogError(f"the flags after --: {exc}") from None
    return dep, extra.model_ref or model, [f"deployment flags after --: {' '.join(flags)}"]


def _deployment(scan: LogScan) -> tuple[VllmDeployment, str | None, list[str]]:
    notes: list[str] = []
    if fact := scan.get("vllm_args"):
        try:
            dep, model, _, clipped = vllm_deployment_from_args(fact.value)
        except LogError as exc:
            raise LogError(f"line {fact.line_no}: {exc}") from None
        if clipped:
            notes.append(f"line {fact.line_no}: the non-default args are clipped; the keys "
                         "they hold are read, vLLM's defaults assumed for the rest")
        return dep, model, notes
    if fact := scan.get("vllm_command"):
        try:
            parsed = parse_vllm_command(fact.value.strip())
        except ValueError as exc:
            raise LogError(f"line {fact.line_no}: {exc}") from None
        notes.append(f"deployment taken from the command on line {fact.line_no}")
        return parsed.deployment, parsed.model_ref, notes
    notes.append("the log states no server arguments: vLLM's defaults assumed")
    return VllmDeployment(), None, notes


def _model(ref: str | None, logged: str | None):
    name = ref or logged
    if name is None:
        raise LogError("the log names no model; pass --model")
    try:
        return load_model(name)
    except (ModelError, OSError) as exc:
        if ref is None:
            raise LogError(f"the log's model {logged!r} is not a config kvledger can read "
                           f"({exc}); pass --model with an embedded name or a config.json"
                           ) from None
        raise


def _tokens(lay: VllmLayout, blocks: int) -> int:
    if lay.rules.logged_tokens is LoggedTokens.BLOCKS_PER_GROUP:
        return blocks // len(lay.groups) * lay.block_tokens
    return int(blocks / lay.blocks_per_request() * lay.max_model_len)


def _blocks_from_tokens(lay: VllmLayout, tokens: int) -> list[int]:
    if lay.rules.logged_tokens is LoggedTokens.BLOCKS_PER_GROUP:
        if tokens % lay.block_tokens:
            return []
        first = tokens // lay.block_tokens * len(lay.groups)
        return list(range(first, first + len(lay.groups)))
    guess = tokens * lay.blocks_per_request() // lay.max_model_len
    return [b for b in range(max(1, guess - 2), guess + 3) if _tokens(lay, b) == tokens]


def _padding(lay: VllmLayout) -> list[str]:
    """`_get_kv_cache_groups_uniform_page_size`'s warning: padding layers of a short bucket."""
    size = lay.group_size
    counts = [lay.model.num_full_layers] + ([lay.model.num_linear_layers] if lay.mamba else [])
    return [f"{size - n % size}, {(size - n % size) / n * 100:.2f}" for n in counts if n % size]


def _release(scan: LogScan, rules: str | None, notes: list[str]) -> str:
    """The rule set: --rules when given, else the one the logged version maps to."""
    if scan.get("vllm_v0_blocks"):
        raise LogError(f"line {scan.get('vllm_v0_blocks').line_no}: a V0-engine log "
                       "('# GPU blocks'); releases before 0.10 are not modelled")
    if rules is not None:
        return rules
    version_fact = scan.get("vllm_version")
    if version_fact is None:
        raise LogError("the log names no vLLM version (no 'Initializing a V1 LLM engine "
                       "(vX.Y.Z)' or 'version X.Y.Z' line); pass --rules vllm-0.13 or "
                       "vllm-0.33")
    try:
        rules, note = vllm_rules_for(version_fact.value)
    except LogError as exc:
        raise LogError(f"line {version_fact.line_no}: {exc}") from None
    if note:
        notes.append(note)
    return rules


def _logged_max_model_len(scan: LogScan, dep: VllmDeployment) -> VllmDeployment:
    """The max_model_len the concurrency line logs, which the server arguments must agree
    with (vLLM logs it only when it differs from the derived default)."""
    conc = scan.get("vllm_concurrency")
    if conc is None:
        return dep
    logged_len = conc.int(0)
    if dep.max_model_len is None:
        try:
            return replace(dep, max_model_len=logged_len)
        except ValueError as exc:
            raise LogError(f"line {conc.line_no}: {exc}") from None
    if dep.max_model_len != logged_len:
        raise LogError(f"line {conc.line_no} logs max_model_len {logged_len:,} but the "
                       f"server arguments say {dep.max_model_len:,}")
    return dep


def _layout(arch: ModelArch, dep: VllmDeployment, rule_set: VllmRules,
            gpu: str | None) -> VllmLayout:
    # the log reconciles what vLLM computed; whether it would have refused is another check
    dep = replace(dep, enforce_eager=True)
    try:
        return vllm_layout(arch, dep, rule_set, get_gpu(gpu) if gpu else None)
    except ValueError as exc:
        raise LogError(f"the log's deployment does not fit {arch.name}: {exc}") from None


def _layout_rows(scan: LogScan, lay: VllmLayout) -> list[Row]:
    """The block size, the Mamba page padding and the padding layers, as logged."""
    rows: list[Row] = []
    if fact := scan.get("vllm_block_set"):
        rows.append(compare(fact.line_no, "attention block size (tokens)", f"{fact.int():,}",
                            [f"{lay.block_tokens:,}"], "block alignment differs"))
    if (fact := scan.get("vllm_padding_pct")) and lay.alignment is not None:
        rows.append(compare(fact.line_no, "Mamba page padding (%)", fact.value,
                            [f"{lay.alignment.padding_pct:.2f}"], "state or attention page differs"))
    if fact := scan.get("vllm_padding_layers"):
        rows.append(compare(fact.line_no, "padding layers, % wasted",
                            f"{fact.int(0)}, {fact.groups[1]}", _padding(lay),
                            "the KV-cache groups differ"))
    return rows


def _anchor_blocks(scan: LogScan, lay: VllmLayout, rule_set: VllmRules, rows: list[Row],
                   notes: list[str]) -> list[int]:
    """num_gpu_blocks from the first anchor the log gives (module doc), never empty; the
    anchor's own row goes to `rows`."""
    per_block = lay.bytes_per_block
    blocks: list[int]
    if fact := scan.get("vllm_available_gib"):
        gib = float(fact.value)
        lo, hi = math.ceil((gib - 0.005) * GiB), math.ceil((gib + 0.005) * GiB) - 1
        blocks = list(range(max(lo, 0) // per_block, hi // per_block + 1))
        rows.append(Row(line_no=fact.line_no, quantity="Available KV cache memory (GiB)",
                        logged=fact.value, kvledger=f"{lo:,} … {hi:,} B", status=Status.INPUT,
                        reason=f"{per_block:,} B per block"))
    elif fact := scan.get("vllm_num_gpu_blocks"):
        blocks = [fact.int()]
    elif fact := scan.get("vllm_tokens"):
        blocks = _blocks_from_tokens(lay, fact.int())
        # the count cannot be derived without the memory line: say what memory explains it
        explain = (f"{blocks[0] * per_block / GiB:.2f} … {(blocks[-1] + 1) * per_block / GiB:.2f}"
                   f" GiB of KV cache memory gives {span([f'{b:,}' for b in blocks])} blocks"
                   if blocks else "")
        rows.append(Row(line_no=fact.line_no, quantity="GPU KV cache size (tokens)",
                        logged=f"{fact.int():,}", kvledger="(inverted to num_gpu_blocks)",
                        status=Status.INPUT if blocks else Status.DIFFERS,
                        reason=explain if blocks else "no num_gpu_blocks gives this token count "
                        f"under {rule_set.name} with block {lay.block_tokens}"))
        notes.append("no 'Available KV cache memory' line: num_gpu_blocks inverted from the "
                     "logged token count")
    else:
        raise LogError(f"truncated: the log ends at line {scan.num_lines} ({scan.last_line[:60]!r}) "
                       "before vLLM logs its KV cache memory, blocks or size")
    return blocks or [0]


def _capacity_rows(scan: LogScan, lay: VllmLayout, arch: ModelArch, rule_set: VllmRules,
                   blocks: list[int]) -> list[Row]:
    """Every logged number derived from num_gpu_blocks, and the weights line (information)."""
    rows: list[Row] = []
    fact = scan.get("vllm_num_gpu_blocks")
    if fact and scan.get("vllm_available_gib"):
        rows.append(compare(fact.line_no, "num_gpu_blocks", f"{fact.int():,}",
                            [f"{b:,}" for b in blocks], "the block pool differs"))
    if (fact := scan.get("vllm_tokens")) and (scan.get("vllm_available_gib")
                                               or scan.get("vllm_num_gpu_blocks")):
        rows.append(compare(fact.line_no, "GPU KV cache size (tokens)", f"{fact.int():,}",
                            [f"{_tokens(lay, b):,}" for b in blocks],
                            f"logged as {rule_set.logged_tokens.value}"))
    if fact := scan.get("vllm_tokens_host"):
        rows.append(Row(line_no=fact.line_no, quantity="GPU + host KV cache size (tokens)",
                        logged=f"{fact.int():,}", kvledger="—", status=Status.INFO,
                        reason="counts the host (offload) tier, which kvledger's vLLM rules "
                        "do not model; the GPU blocks alone give "
                        f"{span([f'{_tokens(lay, b):,}' for b in blocks])}"))
    per_request = lay.blocks_per_request()
    conc = scan.get("vllm_concurrency")
    host = scan.get("vllm_tokens_host")
    if conc is not None and host is not None and host.line_no == conc.line_no:
        rows.append(Row(line_no=conc.line_no, quantity="Maximum concurrency (GPU + host)",
                        logged=conc.groups[1], kvledger="—", status=Status.INFO,
                        reason="includes the host tier; GPU alone: "
                        f"{span([f'{b / per_request:.2f}' for b in blocks])}"))
    elif conc is not None:
        rows.append(compare(conc.line_no, "Maximum concurrency", conc.groups[1],
                            [f"{b / per_request:.2f}" for b in blocks],
                            f"{per_request} blocks per max_model_len request"))
    if fact := scan.get("vllm_model_loading_gib"):
        ranks = lay.deployment.tensor_parallel_size * lay.deployment.pipeline_parallel_size
        estimate = arch.weight_bytes // ranks if arch.weight_bytes else 0
        rows.append(Row(line_no=fact.line_no, quantity="Model loading (GiB)", logged=fact.value,
                        kvledger=f"{estimate / GiB:.2f} (bf16 estimate)", status=Status.INFO,
                        reason="depends on the checkpoint's quantization"))
    return rows


def reconcile_vllm(scan: LogScan, *, model: str | None = None, rules: str | None = None,
                   gpu: str | None = None, flags: Sequence[str] = ()) -> Reconciliation:
    """The release, the deployment, the model and the layout, then every logged number
    against the layout's (module doc for the order)."""
    notes: list[str] = []
    rules = _release(scan, rules, notes)
    rule_set = get_vllm_rules(rules)
    dep, logged_model, dep_notes = _deployment(scan)
    dep, logged_model, config_notes = apply_engine_config(scan, dep, logged_model)
    dep, logged_model, flag_notes = _with_flags(dep, logged_model, flags)
    notes += dep_notes + config_notes + flag_notes
    dep = _logged_max_model_len(scan, dep)
    arch = _model(model, logged_model)
    try:
        check_stage_count(sorted(scan.stages), dep.pipeline_parallel_size,
                          "--pipeline-parallel-size")
    except ValueError as exc:
        raise LogError(str(exc)) from None
    lay = _layout(arch, dep, rule_set, gpu)
    notes += lay.notes
    rows = _layout_rows(scan, lay)
    staged = (stage_blocks(scan, lay, rows, notes)
              if lay.deployment.pipeline_parallel_size > 1 else None)
    blocks = staged or _anchor_blocks(scan, lay, rule_set, rows, notes)
    rows += _capacity_rows(scan, lay, arch, rule_set, blocks)
    rows.sort(key=lambda r: r.line_no)
    version_fact = scan.get("vllm_version")
    return Reconciliation(engine=Engine.VLLM,
                          version=version_fact.value if version_fact else None, rules=rules,
                          model=arch.name, rows=tuple(rows), binding=binding(lay, blocks),
                          derived=derived(lay, blocks), notes=tuple(notes),
                          missing=missing_vllm_lines(scan, lay))
