"""The settings in vLLM's engine-config line, the deployment the engine actually ran.

`EngineCore.__init__` logs "Initializing a V1 LLM engine (vX) with config: …" with
`VllmConfig.__str__` (vllm/config/vllm.py): `key=value` pairs joined by ", ", strings quoted
(`model='…'`), nested configs as reprs (`StructuredOutputsConfig(…)`, `{…}`). Unlike the
`non-default args` line it holds every resolved value, defaults included: `max_seq_len` is
the resolved max_model_len, `enable_prefix_caching` the value vLLM settled on (a hybrid
model's default, or a refusal), `speculative_config` the draft (`num_spec_tokens=N`).

Keys read, where a release prints them: max_seq_len, tensor_parallel_size,
pipeline_parallel_size, data_parallel_size, kv_cache_dtype, enable_prefix_caching,
speculative_config, and block_size, mamba_cache_mode, gpu_memory_utilization, max_num_seqs.
A quoted line is often cut (issue quotes stop at "with config:"); a config missing one of the
keys every release prints counts as cut.

>>> cfg = parse_engine_config("model='Qwen/Qwen3-Next-80B-A3B-Instruct', "
...     "speculative_config=None, dtype=torch.bfloat16, max_seq_len=262144, "
...     "tensor_parallel_size=2, pipeline_parallel_size=1, kv_cache_dtype=auto, "
...     "observability_config=ObservabilityConfig(otlp_traces_endpoint=None, seed=1), "
...     "enable_prefix_caching=False, compilation_config={'level': 3, 'x': [1, 2]}")
>>> cfg.model, cfg.settings["max_model_len"], cfg.settings["enable_prefix_caching"], cfg.cut
('Qwen/Qwen3-Next-80B-A3B-Instruct', 262144, False, ())
>>> parse_engine_config("model='x', speculative_config=None, tokeni").cut
('max_seq_len', 'tensor_parallel_size', 'kv_cache_dtype', 'enable_prefix_caching')
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, fields, replace

from kvledger.logs.clipped import top_level_items
from kvledger.logs.lines import LogError, LogScan
from kvledger.vllm.deploy import KV_CACHE_DTYPES, VllmDeployment
from kvledger.vllm.rules import MambaCacheMode

# Keys every V1 release from 0.10 on prints (VllmConfig.__str__); one missing means a cut line.
ALWAYS_PRINTED = ("max_seq_len", "tensor_parallel_size", "kv_cache_dtype",
                  "enable_prefix_caching")
# config key -> VllmDeployment field
_AS_FIELD = {"max_seq_len": "max_model_len", "tensor_parallel_size": "tensor_parallel_size",
             "data_parallel_size": "data_parallel_size", "kv_cache_dtype": "kv_cache_dtype",
             "pipeline_parallel_size": "pipeline_parallel_size",
             "decode_context_parallel_size": "decode_context_parallel_size",
             "enable_prefix_caching": "enable_prefix_caching",
             "gpu_memory_utilization": "gpu_memory_utilization", "max_num_seqs": "max_num_seqs",
             "block_size": "block_size", "mamba_cache_mode": "mamba_cache_mode"}
_SPEC_TOKENS = re.compile(r"num_spec(?:ulative)?_tokens=(\d+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    model: str | None
    settings: dict[str, object]  # VllmDeployment field -> the engine's value
    cut: tuple[str, ...]  # always-printed keys the (cut) line lacks


def _pairs(text: str) -> tuple[dict[str, str], bool]:
    """Top-level `key=value` pairs, and whether the text ends inside a value (a cut line)."""
    items, tail_open = top_level_items(text)
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.strip().partition("=")
        if sep and key.isidentifier():
            pairs[key] = value.strip()
    return pairs, tail_open


def _value(raw: str) -> object:
    if raw in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[raw]
    if re.fullmatch(r"[0-9]+", raw):
        return int(raw)
    if re.fullmatch(r"[0-9]*\.[0-9]+", raw):
        return float(raw)
    if raw[:1] in "'\"":
        try:
            return ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            return raw.strip("'\"")
    return raw


def parse_engine_config(text: str) -> EngineConfig:
    """The deployment settings the config text states; LogError for a value kvledger refuses."""
    pairs, _ = _pairs(text)
    settings: dict[str, object] = {}
    for key, field in _AS_FIELD.items():
        if key in pairs and (value := _value(pairs[key])) is not None:
            settings[field] = value
    if "mamba_cache_mode" in settings:
        try:
            settings["mamba_cache_mode"] = MambaCacheMode(settings["mamba_cache_mode"])
        except ValueError:
            raise LogError(f"mamba_cache_mode={settings['mamba_cache_mode']}: not modelled"
                           ) from None
    if "speculative_config" in pairs:
        spec = pairs["speculative_config"]
        match = _SPEC_TOKENS.search(spec)
        settings["num_speculative_tokens"] = int(match.group(1)) if match else 0
    model = _value(pairs["model"]) if "model" in pairs else None
    return EngineConfig(model=model if isinstance(model, str) else None, settings=settings,
                        cut=tuple(k for k in ALWAYS_PRINTED if k not in pairs))


def _shown(value: object) -> object:
    return value.value if isinstance(value, MambaCacheMode) else value


def apply_engine_config(scan: LogScan, dep: VllmDeployment, model: str | None
                        ) -> tuple[VllmDeployment, str | None, list[str]]:
    """The deployment with the engine-config line's values over the server arguments'.

    The config is what the engine ran, so it wins; where the arguments asked for something
    else (vLLM turns prefix caching off for some models, rounds a length), a note says so.
    """
    fact = scan.get("vllm_engine_config")
    if fact is None:
        return dep, model, []
    try:
        cfg = parse_engine_config(fact.value)
    except LogError as exc:
        raise LogError(f"line {fact.line_no}: {exc}") from None
    defaults = {f.name: f.default for f in fields(VllmDeployment)}
    notes = []
    settings = dict(cfg.settings)
    dtype = settings.get("kv_cache_dtype")
    if dtype is not None and dtype not in KV_CACHE_DTYPES:
        # an internal layout name (e.g. a sparse-MLA fp8 row), not a --kv-cache-dtype choice
        del settings["kv_cache_dtype"]
        notes.append(f"line {fact.line_no}: the engine config's kv_cache_dtype={dtype} is not a "
                     "--kv-cache-dtype choice; the arguments' value is used")
    for name, value in settings.items():
        asked = getattr(dep, name)
        if asked != value and asked != defaults[name]:
            notes.append(f"line {fact.line_no}: the engine ran {name}={_shown(value)} where the "
                         f"server arguments asked {_shown(asked)}; the engine's value is used")
    try:
        dep = replace(dep, **settings)
    except (TypeError, ValueError) as exc:
        raise LogError(f"line {fact.line_no}: the engine config: {exc}") from None
    notes.append(f"deployment settings from the engine config on line {fact.line_no}"
                 + (f" ({', '.join(f'{k}={_shown(v)}' for k, v in sorted(settings.items()))})"
                    if settings else ""))
    return dep, model or cfg.model, notes
