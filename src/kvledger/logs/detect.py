"""Which engine and release wrote a log, from its own lines.

A logged vLLM version picks the rule set whose `releases` (kvledger.vllm.rules, read from those
releases' source) contain it: 0.10–0.13 → `vllm-0.13`, 0.24–0.26 → `vllm-0.24`, 0.27–0.31 →
`vllm-0.27`, 0.32 → `vllm-0.32`, 0.33 → `vllm-0.33`. A release no range contains is
checked against the next rule set up (0.14–0.23 against `vllm-0.24`: from 0.14 on, releases log
the token line as int(concurrency × max_model_len), as 0.24 does), a release after the last
against the last, and the note says so. Releases before 0.10 (the V0 engine's "# GPU blocks" line) are not modelled.

SGLang's boot lines carry no version, but pastes often name it: the image tag
(`lmsysorg/sglang:v0.5.23-cu129`), a pin (`sglang==0.5.21`) or the reporter's "SGLang version:
0.5.19". A named 0.5.x release picks the rule set read from it (`read_from_patch`), else the
next one up, else the last, with a note; without one, --rules or the default.

>>> sglang_rules_for("0.5.23")
('sglang-0.5.23', None)
>>> sglang_rules_for("0.5.19")
('sglang-0.5.21', 'SGLang v0.5.19 is checked against sglang-0.5.21, read from 0.5.21')
>>> sglang_rules_for("0.5.22")[0]
'sglang-0.5.23'

>>> vllm_rules_for("0.24.0")
('vllm-0.24', None)
>>> vllm_rules_for("0.33.0")
('vllm-0.33', None)
>>> vllm_rules_for("0.18.1")
('vllm-0.24', 'v0.18.1 is checked against vllm-0.24, read from 0.24–0.26')
>>> vllm_rules_for("0.11.2")[0]
'vllm-0.13'
"""

from __future__ import annotations

import re

from kvledger.logs.lines import Engine, LogError, LogScan
from kvledger.sglang.rules import RULES as SGLANG_RULES
from kvledger.vllm.rules import RULES


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
    ordered = sorted(RULES.values(), key=lambda r: r.releases)
    rules = next((r for r in ordered if minor <= r.releases[1]), ordered[-1])
    if rules.covers(minor):
        return rules.name, None
    first, last = rules.releases
    span = f"0.{first}" if first == last else f"0.{first}–0.{last}"
    return rules.name, f"v{version} is checked against {rules.name}, read from {span}"


def sglang_rules_for(version: str) -> tuple[str, str | None]:
    """(rule set, note) for a named SGLang release; LogError outside 0.5.x."""
    match = re.fullmatch(r"v?0\.5\.(\d+)(?:[.+\-rc].*)?", version)
    if match is None:
        raise LogError(f"SGLang version {version!r}: kvledger's SGLang rules cover 0.5.x; "
                       "pass --rules")
    patch = int(match.group(1))
    ordered = sorted(SGLANG_RULES.values(), key=lambda r: r.read_from_patch)
    rules = next((r for r in ordered if patch <= r.read_from_patch), ordered[-1])
    if rules.read_from_patch == patch:
        return rules.name, None
    return rules.name, (f"SGLang v0.5.{patch} is checked against {rules.name}, read from "
                        f"0.5.{rules.read_from_patch}")
