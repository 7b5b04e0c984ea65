"""The boot-log lines kvledger reads, as patterns, and a scan of a log into facts.

Each pattern names the engine, the quantity and the regex of the line as the engine formats
it (vLLM: vllm/v1/worker/gpu_worker.py, v1/core/kv_cache_utils.py, platforms/interface.py,
entrypoints/utils.py; SGLang: srt/model_executor/model_runner.py, srt/mem_cache/memory_pool.py,
srt/managers/scheduler.py). SGLang prints GiB as "GB". A quantity logged more than once (one
line per rank) must log the same value each time. One line may state several quantities (the
engine-init line: the version and the config); each key is read once per line.

>>> scan = scan_log("INFO 07-09 [gpu_worker.py:508] Available KV cache memory: 6.01 GiB\\n")
>>> scan.get("vllm_available_gib").value, scan.get("vllm_available_gib").line_no
('6.01', 1)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from kvledger.core.engines import Engine  # re-exported: logs name the engine that wrote them
from kvledger.logs.tags import stage_of


class LogError(ValueError):
    """A log kvledger cannot reconcile; the message names the line."""


@dataclass(frozen=True, slots=True)
class Pattern:
    key: str
    engine: Engine
    regex: re.Pattern[str]


def _p(key: str, engine: Engine, regex: str) -> Pattern:
    return Pattern(key, engine, re.compile(regex))


_NUM = r"([0-9][0-9,]*)"
_DEC = r"([0-9]+(?:\.[0-9]+)?)"
PATTERNS: tuple[Pattern, ...] = (
    # vLLM
    _p("vllm_version", Engine.VLLM, r"Initializing a V1 LLM engine \(v([^)\s]+)\)"),
    # the engine-init line itself (its config is required: kvledger.logs.expected) ...
    _p("vllm_engine_init", Engine.VLLM, r"(Initializing a V1 LLM engine) \(v"),
    # ... and its config (kvledger.logs.engine_config); absent when the line is cut
    _p("vllm_engine_config", Engine.VLLM,
       r"Initializing a V1 LLM engine \([^)]*\) with config: *(\S.*?)\s*$"),
    _p("vllm_version", Engine.VLLM, r"vLLM API server version ([0-9][^\s,]*)"),
    _p("vllm_version", Engine.VLLM, r"█\s+version ([0-9][^\s]*)"),
    # the dict as logged, or clipped by the paste (kvledger.logs.clipped)
    _p("vllm_args", Engine.VLLM, r"non-default args: (\{.*?)\s*$"),
    _p("vllm_command", Engine.VLLM, r"((?:^|\s)vllm serve .*|python[0-9.]* -m vllm\.entrypoints\..*)$"),
    _p("vllm_model_loading_gib", Engine.VLLM, rf"Model loading took {_DEC} GiB"),
    _p("vllm_available_gib", Engine.VLLM, rf"Available KV cache memory: {_DEC} GiB"),
    _p("vllm_block_set", Engine.VLLM, rf"Setting attention block size to {_NUM} tokens"),
    _p("vllm_padding_pct", Engine.VLLM, rf"Padding mamba page size by {_DEC}%"),
    _p("vllm_num_gpu_blocks", Engine.VLLM, rf"num_gpu_blocks is: {_NUM}"),
    _p("vllm_padding_layers", Engine.VLLM,
       rf"Add {_NUM} padding layers, may waste at most {_DEC}% KV cache memory"),
    _p("vllm_tokens", Engine.VLLM, rf"GPU KV cache size: {_NUM} tokens"),
    # with a host (CPU offload) tier the line counts both tiers; kvledger models GPU only
    _p("vllm_tokens_host", Engine.VLLM, rf"GPU \+ host KV cache size: {_NUM} tokens"),
    _p("vllm_concurrency", Engine.VLLM,
       rf"Maximum concurrency for {_NUM} tokens per request: {_DEC}x"),
    _p("vllm_v0_blocks", Engine.VLLM, rf"# GPU blocks: {_NUM}"),
    # SGLang
    # the repr as logged, or clipped by the paste (no closing parenthesis: clipped.py)
    _p("sglang_server_args", Engine.SGLANG, r"server_args=ServerArgs\((.*?)(\)?)\s*$"),
    # the release a paste names (the boot lines do not): image tag, pin, or stated version
    _p("sglang_version", Engine.SGLANG,
       r"(?:lmsysorg/sglang:v?|/sgl-dev:v?|\bsglang==|\b[Ss][Gg][Ll]ang [Vv]ersion:? v?)"
       r"([0-9]+\.[0-9]+\.[0-9][^\s,`'\")]*)"),
    _p("sglang_command", Engine.SGLANG,
       r"((?:python[0-9.]*\s+-m\s+sglang\.launch_server|sglang\s+serve)(?:\s.*)?)$"),
    # server_args.py turning the radix cache off for a model class without support
    # server_args' DSA page override, the platform named ("… for DeepSeek DSA on ROCm.")
    _p("sglang_dsa_page", Engine.SGLANG,
       r"Setting page size to ([0-9]+) for DeepSeek DSA( on ROCm)?"),
    _p("sglang_radix_off", Engine.SGLANG,
       r"Disabling Radix Cache for (\w+) as it is not yet supported"),
    _p("sglang_load_weight", Engine.SGLANG,
       rf"Load weight end\..*avail mem={_DEC} GB, mem usage={_DEC} GB"),
    _p("sglang_mamba", Engine.SGLANG,
       rf"Mamba Cache is allocated\. max_mamba_cache_size: {_NUM}, conv_state size: {_DEC}\s*GB, "
       rf"ssm_state size: {_DEC}\s*GB"),
    # 0.5.2x print the dtype first: "KV Cache is allocated. dtype: torch.bfloat16, #tokens: …"
    _p("sglang_kv", Engine.SGLANG,
       rf"KV Cache is allocated\. (?:dtype: \S+, )?#tokens: {_NUM}, KV size: {_DEC}\s*GB"),
    _p("sglang_kv", Engine.SGLANG,
       rf"KV Cache is allocated\. (?:dtype: \S+, )?#tokens: {_NUM}, K size: {_DEC}\s*GB, "
       rf"V size: {_DEC}\s*GB"),
    _p("sglang_kv_dtype", Engine.SGLANG,
       r"(?:KV Cache is allocated\. dtype|Using KV cache dtype): torch\.(\w+)"),
    _p("sglang_pool_end", Engine.SGLANG, rf"Memory pool end\. avail mem={_DEC}\s*GB"),
    _p("sglang_totals", Engine.SGLANG,
       rf"max_total_num_tokens={_NUM},.*max_running_requests={_NUM},\s*context_len={_NUM},"
       rf"\s*available_gpu_mem={_DEC} GB"),
    # a decode server's request pool raising its state slots (disaggregation/decode.py)
    _p("sglang_decode_mamba", Engine.SGLANG,
       rf"mamba_size \({_NUM}\) is less than decode side's max_slots_needed \({_NUM} = "
       rf"{_NUM} reqs \* {_NUM} slots/req\), raising effective_mamba_size to {_NUM}"),
    _p("sglang_capped", Engine.SGLANG,
       rf"max_running_requests is capped to {_NUM}.*mamba"),
)


@dataclass(frozen=True, slots=True)
class Fact:
    key: str
    line_no: int  # 1-based
    line: str
    groups: tuple[str, ...]

    @property
    def value(self) -> str:
        return self.groups[0]

    def int(self, i: int = 0) -> int:
        return int(self.groups[i].replace(",", ""))


@dataclass(frozen=True, slots=True)
class LogScan:
    facts: dict[str, Fact]
    num_lines: int
    last_line: str
    # pipeline stage → the facts of the lines tagged with it (kvledger.logs.tags); a stage's
    # own quantities (its pool bytes, its free memory) differ from the other stages'
    stages: dict[int, dict[str, Fact]] = field(default_factory=dict)

    def stage(self, pp_rank: int) -> LogScan:
        """The scan of one stage's lines alone."""
        return LogScan(facts=self.stages.get(pp_rank, {}), num_lines=self.num_lines,
                       last_line=self.last_line)

    def get(self, key: str) -> Fact | None:
        return self.facts.get(key)

    def engines(self) -> set[Engine]:
        by_key = {p.key: p.engine for p in PATTERNS} | {"sglang_kv_draft": Engine.SGLANG}
        return {by_key[k] for k in self.facts}


# Logged once per rank with the rank's own value (free memory differs by a few MiB between
# GPUs): the engines size every rank from the smallest (SGLang: get_available_gpu_memory with
# distributed=True, a MIN all-reduce; vLLM: the minimum num_blocks over workers), so the
# smallest logged value is the fact.
PER_RANK_MIN = frozenset({"sglang_load_weight", "sglang_pool_end", "vllm_available_gib"})
# Read wherever they are, never compared: a paste may quote its command twice.
REPEATABLE = frozenset({"vllm_command", "sglang_command"})


def _logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    """(first line number, text) with shell continuations (`… \\`) joined: a pasted
    command often spans lines."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for no, line in enumerate(lines, start=1):
        if pending is not None:
            line = pending[1] + " " + line.strip()
            no = pending[0]
            pending = None
        if line.rstrip().endswith("\\"):
            pending = (no, line.rstrip()[:-1].rstrip())
            continue
        out.append((no, line))
    if pending is not None:
        out.append(pending)
    return out


def _role(server_args: str) -> str:
    """The role a ServerArgs repr states: prefill, decode, or aggregated."""
    match = re.search(r"disaggregation_mode='(\w+)'", server_args)
    mode = match.group(1) if match else "null"
    return "aggregated" if mode == "null" else mode


def _merge(facts: dict[str, Fact], fact: Fact, *, across_stages: bool = False) -> None:
    """Add a fact to `facts` under the rules of scan_log; `across_stages`: the stage-tagged
    facts of a whole pipeline, whose stages may log different values (the first is kept)."""
    key, no = fact.key, fact.line_no
    seen = facts.get(key)
    if seen is None:
        facts[key] = fact
    elif (key == "sglang_kv" and seen.groups[0] == fact.groups[0]
          and seen.groups != fact.groups and not across_stages):
        # same #tokens, other bytes: the speculative draft model's pool, which
        # shares the target's token allocator (the draft worker logs it second)
        facts.setdefault("sglang_kv_draft", replace(fact, key="sglang_kv_draft"))
    elif key in PER_RANK_MIN:
        if float(fact.groups[0]) < float(seen.groups[0]):
            facts[key] = fact
    elif seen.groups != fact.groups and key not in REPEATABLE and not across_stages:
        roles = [_role(f.value) for f in (seen, fact)] if key == "sglang_server_args" else []
        if roles and roles[0] != roles[1]:
            raise LogError(f"line {seen.line_no} starts a {roles[0]} server and line {no} a "
                           f"{roles[1]} one: a prefill/decode pair's logs in one paste; check "
                           f"each server's lines on their own (split the paste at line {no})")
        raise LogError(f"line {no} logs {key.split('_', 1)[1]} as "
                       f"{', '.join(fact.groups)} but line {seen.line_no} logged "
                       f"{', '.join(seen.groups)}: two servers in one paste; check "
                       f"each server's lines on their own (split the paste at line "
                       f"{no})")


def scan_log(text: str) -> LogScan:
    """Facts of a log; a quantity logged twice with different values is an error (two
    servers in one paste), except the per-rank memory lines (PER_RANK_MIN) and lines of
    different pipeline stages (`LogScan.stages`)."""
    if "\x00" in text:
        raise LogError("the input is binary, not a text log")
    facts: dict[str, Fact] = {}
    stages: dict[int, dict[str, Fact]] = {}
    lines = text.splitlines()
    for no, line in _logical_lines(lines):
        keys_here: set[str] = set()
        pp_rank = stage_of(line)
        for pattern in PATTERNS:
            if pattern.key in keys_here:
                continue
            match = pattern.regex.search(line)
            if match is None:
                continue
            keys_here.add(pattern.key)
            fact = Fact(pattern.key, no, line.strip(), tuple(g for g in match.groups()))
            if pp_rank is None:
                _merge(facts, fact)
                continue
            _merge(stages.setdefault(pp_rank, {}), fact)
            _merge(facts, fact, across_stages=True)
    return LogScan(facts=facts, num_lines=len(lines), last_line=lines[-1] if lines else "",
                   stages=stages)
