"""check_log: a log's text in, a Reconciliation out (LogError for input kvledger cannot read).

>>> check_log("nothing here\\n")
Traceback (most recent call last):
...
kvledger.logs.lines.LogError: no SGLang or vLLM boot line found in 1 lines (expected e.g. 'GPU KV cache size: N tokens' or 'KV Cache is allocated. #tokens')
"""

from __future__ import annotations

from collections.abc import Sequence

from kvledger.logs.detect import engine_of
from kvledger.logs.lines import Engine, LogError, scan_log
from kvledger.logs.reconcile import Reconciliation
from kvledger.logs.vllm_log import reconcile_vllm


def check_log(text: str, *, model: str | None = None, rules: str | None = None,
              gpu: str | None = None, flags: Sequence[str] = ()) -> Reconciliation:
    """`flags`: deployment flags the paste lacks, in the engine's own spelling (`--tp 8
    --kv-cache-dtype fp8_e4m3`); they override what the log states."""
    scan = scan_log(text)
    engine = engine_of(scan)
    if engine is Engine.VLLM:
        if rules is not None and not rules.startswith("vllm-"):
            raise LogError(f"--rules {rules}: the log is vLLM's; expected a vllm-… rule set")
        return reconcile_vllm(scan, model=model, rules=rules, gpu=gpu, flags=flags)
    from kvledger.logs.sglang_log import reconcile_sglang

    if rules is not None and not rules.startswith("sglang-"):
        raise LogError(f"--rules {rules}: the log is SGLang's; expected an sglang-… rule set")
    return reconcile_sglang(scan, model=model, rules=rules, gpu=gpu, flags=flags)
