"""Which engine and release wrote a log, from its own lines.

vLLM releases map onto the rule sets kvledger models (kvledger.vllm.rules): 0.10–0.13 log the
KV cache size as num_blocks // groups × block size (`vllm-0.13`); later releases as
int(concurrency × max_model_len), the formula of `vllm-0.33`, whose rules kvledger applies to
every release from 0.14 on and says so. Releases before 0.10 (the V0 engine's "# GPU blocks"
line) are not modelled. SGLang logs carry no version line; its rule set comes from --rules.

>>> vllm_rules_for("0.24.0")
('vllm-0.33', 'v0.24.0 is checked against vllm-0.33, the modelled release for 0.14 and later')
>>> vllm_rules_for("0.11.2")[0]
'vllm-0.13'
"""

from __future__ import annotations

import re

from kvledger.logs.lines import Engine, LogError, LogScan


def engine_of(scan: LogScan) -> Engine:
    engines = scan.engines()
    if not engines:
        raise LogError(f"no SGLang or vLLM boot line found in {scan.num_lines} lines (expected "
                       "e.g. 'GPU KV cache size: N tokens' or 'KV Cache is allocated. #tokens')")
    if len(engines) > 1:
        raise LogError("the log mixes SGLang and vLLM lines; check one server's log at a time")
    return engines.pop()


def vllm_rules_for(version: str) -> tuple[str, str | None]:
    """(rule set, note) for a logged vLLM version; LogError if it is not modelled."""
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(?:[.+\-].*)?", version)
    if match is None or match.group(1) != "0":
        raise LogError(f"vLLM version {version!r} is not one kvledger can place; pass --rules")
    minor = int(match.group(2))
    if minor < 10:
        raise LogError(f"vLLM v{version}: releases before 0.10 (the V0 engine) are not modelled")
    if minor <= 13:
        return "vllm-0.13", None if minor == 13 else (
            f"v{version} is checked against vllm-0.13, the modelled release for 0.10–0.13")
    if minor == 33:
        return "vllm-0.33", None
    return "vllm-0.33", (f"v{version} is checked against vllm-0.33, the modelled release for "
                         "0.14 and later")
