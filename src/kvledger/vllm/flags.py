"""vLLM launch commands and flags → VllmDeployment, with vLLM's own spellings.

Accepted shapes: bare flags; `vllm serve MODEL …`; `python -m vllm.entrypoints.openai.api_server
--model MODEL …` (words before the launcher and shell syntax after it are set aside, as for
SGLang commands, `kvledger.sglang.launch.command`). Flags follow EngineArgs
(vllm/engine/arg_utils.py): `--flag value` or `--flag=value`; booleans take `--no-` forms.
Flags that change no memory are skipped with their values and listed in `ignored`; flags that
change memory in ways kvledger does not model are refused naming the flag. SGLang's spelling of
a flag that means the same (`--tp 8`, `--context-length 32k`) is read as vLLM's; one that means
something else to vLLM (`--dp`, `--mem-fraction-static`) is refused naming vLLM's.

>>> p = parse_vllm_command("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 "
...                        "--max-model-len 128K --port 8000")
>>> p.model_ref, p.deployment.tensor_parallel_size, p.deployment.max_model_len, p.ignored
('Qwen/Qwen3-Next-80B-A3B-Instruct', 2, 131072, ('--port',))
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

from kvledger.core.errors import DeploymentError
from kvledger.core.values import human_int, integer
from kvledger.core.words import split_words
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.rules import MambaCacheMode

LAUNCH_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
_PYTHON = re.compile(r"(?:.*/)?python(?:\d+(?:\.\d+)*)?")
_VLLM = re.compile(r"(?:.*/)?vllm")
_SHELL = frozenset({"|", "||", "&&", ";", "&"})


def _float(text: str) -> float:
    return float(text)


def _spec_tokens(text: str) -> int:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    if not isinstance(doc, dict):
        raise ValueError("expected a JSON object")
    value = doc.get("num_speculative_tokens", 0)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("num_speculative_tokens must be an integer")
    return value


# spelling → (field, parser); a parser of None marks a switch.
_VALUE_FLAGS: dict[str, tuple[str, Callable[[str], object]]] = {
    "--tensor-parallel-size": ("tensor_parallel_size", integer),
    "-tp": ("tensor_parallel_size", integer),
    "--data-parallel-size": ("data_parallel_size", integer),
    "-dp": ("data_parallel_size", integer),
    "--pipeline-parallel-size": ("pipeline_parallel_size", integer),
    "-pp": ("pipeline_parallel_size", integer),
    "--decode-context-parallel-size": ("decode_context_parallel_size", integer),
    "-dcp": ("decode_context_parallel_size", integer),
    "--prefill-context-parallel-size": ("prefill_context_parallel_size", integer),
    "-pcp": ("prefill_context_parallel_size", integer),
    "--gpu-memory-utilization": ("gpu_memory_utilization", _float),
    "--kv-cache-memory-bytes": ("kv_cache_memory_bytes", human_int),
    "--kv-cache-memory": ("kv_cache_memory_bytes", human_int),
    "--max-model-len": ("max_model_len", human_int),
    "--max-num-seqs": ("max_num_seqs", integer),
    "--kv-cache-dtype": ("kv_cache_dtype", str),
    "--mamba-cache-dtype": ("mamba_cache_dtype", str),
    "--mamba-ssm-cache-dtype": ("mamba_ssm_cache_dtype", str),
    "--block-size": ("block_size", integer),
    "--mamba-cache-mode": ("mamba_cache_mode", MambaCacheMode),
    "--speculative-config": ("num_speculative_tokens", _spec_tokens),
}
_SWITCHES: dict[str, tuple[str, bool]] = {
    "--enable-prefix-caching": ("enable_prefix_caching", True),
    "--no-enable-prefix-caching": ("enable_prefix_caching", False),
    "--enforce-eager": ("enforce_eager", True),
    "--no-enforce-eager": ("enforce_eager", False),
}
# Flags that change memory in ways kvledger does not model: refused unless neutral.
_REFUSED = {"--cpu-offload-gb": "0", "--num-gpu-blocks-override": None}
# The short spellings EngineArgs registers (a word after a flag is its value unless it is one)
_SHORT_FLAGS = frozenset({"-tp", "-dp", "-pp", "-dcp", "-pcp"})
_MODEL_FLAGS = ("--model",)
# SGLang's spellings of vLLM flags that mean the same: read as the vLLM flag (one spelling
# policy for every command, whichever engine plans).
SGLANG_ALIASES = {
    "--tp": "--tensor-parallel-size", "--tp-size": "--tensor-parallel-size",
    "--pp-size": "--pipeline-parallel-size", "--dcp-size": "--decode-context-parallel-size",
    "--context-length": "--max-model-len", "--page-size": "--block-size",
    "--mamba-ssm-dtype": "--mamba-ssm-cache-dtype",
    "--disable-radix-cache": "--no-enable-prefix-caching",
}
# SGLang's spellings of flags that change memory but mean something else to vLLM: vLLM's parser
# rejects them ("unrecognized arguments"); skipping them would plan another deployment.
_SGLANG_SPELLINGS = {
    "--dp": "--data-parallel-size / -dp (SGLang's --dp may be attention-DP groups)",
    "--dp-size": "--data-parallel-size / -dp (SGLang's --dp-size may be attention-DP groups)",
    "--mem-fraction-static": "--gpu-memory-utilization (a share of all GPU memory, not of "
                             "the static pools)",
    "--max-running-requests": "--max-num-seqs (per DP engine, not global)",
}
# --dtype: kvledger's state and KV "auto" dtypes are 2-byte (the embedded checkpoints are bf16)
_TWO_BYTE_DTYPES = frozenset({"auto", "bfloat16", "float16", "half"})
# Switches vLLM knows that take no value; every other unknown flag skips the words up to the
# next flag (its values).
_IGNORED_SWITCHES = frozenset({
    "--trust-remote-code", "--enable-auto-tool-choice", "--enable-chunked-prefill",
    "--no-enable-chunked-prefill", "--disable-log-requests", "--disable-log-stats",
    "--enable-expert-parallel", "--async-scheduling", "--no-async-scheduling",
    "--disable-custom-all-reduce", "--enable-log-requests", "--enable-sleep-mode"})

# Every spelling the table reads or refuses (an abbreviation may name one), then with the
# no-op switches (for option reading).
VLLM_READ_SPELLINGS: frozenset[str] = frozenset(
    {*_VALUE_FLAGS, *_SWITCHES, *_REFUSED, *_MODEL_FLAGS, "--dtype"})
VLLM_SPELLINGS: frozenset[str] = VLLM_READ_SPELLINGS | _IGNORED_SWITCHES


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedVllm:
    model_ref: str | None
    deployment: VllmDeployment
    ignored: tuple[str, ...]
    set_fields: frozenset[str]


def _split(argv: Sequence[str] | str) -> tuple[str | None, list[str]]:
    words = split_words(argv)
    if words[:1] == ["--"]:
        words = words[1:]
    for i, word in enumerate(words):
        if word in _SHELL:
            words = words[:i]
            break
    if not words or words[0].startswith("-"):
        return None, words
    for i in range(len(words)):
        if _VLLM.fullmatch(words[i]) and words[i + 1:i + 2] == ["serve"]:
            rest = words[i + 2:]
            if rest and not rest[0].startswith("-"):
                return rest[0], rest[1:]
            return None, rest
        if (_PYTHON.fullmatch(words[i]) and words[i + 1:i + 2] == ["-m"]
                and words[i + 2:i + 3] and words[i + 2] in LAUNCH_MODULES):
            return None, words[i + 3:]
    raise DeploymentError(f"{' '.join(words[:3])!r}: not a vLLM launch; expected flags, "
                          f"'vllm serve MODEL …' or 'python -m {LAUNCH_MODULES[0]} …'")


def is_vllm_command(argv: Sequence[str] | str) -> bool:
    """Whether the words are a `vllm serve` / vLLM api_server launch."""
    words = split_words(argv) if argv else []
    return any((_VLLM.fullmatch(w) and words[i + 1:i + 2] == ["serve"]) or w in LAUNCH_MODULES
               for i, w in enumerate(words))


def parse_vllm_command(argv: Sequence[str] | str) -> ParsedVllm:
    model, words = _split(argv)
    values: dict[str, object] = {}
    given: dict[str, str] = {}
    ignored: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-"):
            raise DeploymentError(f"{word!r}: a vLLM command takes its model as the first word "
                                  "after `vllm serve`, or --model")
        flag, eq, inline = word.partition("=")
        spelled, flag = flag, SGLANG_ALIASES.get(flag, flag)
        if flag in _SGLANG_SPELLINGS:
            raise DeploymentError(f"{flag}: SGLang's spelling; vLLM takes "
                                  f"{_SGLANG_SPELLINGS[flag]}")
        if flag in _SWITCHES:
            if eq:
                raise DeploymentError(f"{flag}: a switch takes no value")
            name, value = _SWITCHES[flag]
        elif flag in _VALUE_FLAGS or flag in _MODEL_FLAGS or flag in _REFUSED or flag == "--dtype":
            if eq:
                text = inline
            elif i < len(words) and not (words[i].startswith("--") or words[i] in _SHORT_FLAGS):
                text, i = words[i], i + 1
            else:
                raise DeploymentError(f"{flag}: expected a value")
            if flag in _MODEL_FLAGS:
                if model is not None and model != text:
                    raise DeploymentError(f"--model {text!r} contradicts the model {model!r}")
                model = text
                continue
            if flag == "--dtype":
                if text not in _TWO_BYTE_DTYPES:
                    raise DeploymentError(f"--dtype {text}: kvledger models 2-byte model dtypes "
                                          f"({', '.join(sorted(_TWO_BYTE_DTYPES))})")
                ignored.append(flag)
                continue
            if flag in _REFUSED:
                neutral = _REFUSED[flag]
                if text != neutral:
                    raise DeploymentError(f"{flag} {text}: not modelled by kvledger's vLLM rules"
                                          + (f" (only {neutral})" if neutral else ""))
                ignored.append(flag)
                continue
            name, parser = _VALUE_FLAGS[flag]
            try:
                value = parser(text)
            except ValueError as exc:
                raise DeploymentError(f"{spelled} {text!r}: {exc or 'malformed value'}") from None
        else:
            ignored.append(flag)
            if not eq and flag not in _IGNORED_SWITCHES:
                while i < len(words) and not words[i].startswith("-"):
                    i += 1
            continue
        if name in values and values[name] != value:
            raise DeploymentError(f"{flag}: given twice with different values "
                                  f"({given[name]} and {flag} {value})")
        values[name], given[name] = value, flag
    known = {f.name for f in fields(VllmDeployment)}
    assert set(values) <= known
    return ParsedVllm(model_ref=model, deployment=VllmDeployment(**values),
                      ignored=tuple(ignored), set_fields=frozenset(values))
