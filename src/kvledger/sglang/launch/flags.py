"""The flag table: every SGLang server flag kvledger reads, ignores or refuses, in one place.

Spellings, aliases and choices follow sgl-project/sglang python/sglang/srt/server_args.py
(`ServerArgs` fields, whose primary flag is `--` + the field name with `-` for `_`, their
`aliases=`, and the deprecated aliases registered in `ServerArgs.add_cli_args`). The first
spelling of each flag is the one every release accepts; newer releases renamed some flags
and keep the old spelling as a deprecated alias (--nsa-* → --dsa-*, --mamba-scheduler-strategy
→ --mamba-radix-cache-strategy). `--tp` and `--dp` are not declared aliases: SGLang's argparse
parser accepts them as unambiguous abbreviations (allow_abbrev), and its own CI launches with
`--tp 8`. Other abbreviations are read as argparse reads them (`kvledger.sglang.launch.spellings`).

Three kinds of flag:
- FLAGS: change memory; each sets a Deployment field (`key` is the field) or feeds one
  (`key` is SGLang's field name: the DSA backend pair, the speculative parameters);
- UNSUPPORTED: change memory in ways kvledger does not model; refused unless given their
  neutral value;
- IGNORED: known and without effect on the cache ledgers (weights, networking, kernels).
Any other flag SGLang's parser registers is ignored and reported as not recognised; a flag
SGLang does not know is an error.

>>> BY_SPELLING["--tp"].key, BY_SPELLING["--kv-cache-dtype"].parse("bfloat16")
('tp_size', <KVDtype.BF16: 'bf16'>)
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, fields
from enum import Enum

from kvledger.core.values import Parser, choice, enum_choices, human_int, integer, number
from kvledger.model.quant import QuantMethod
from kvledger.sglang.deploy import (
    Deployment,
    DisaggMode,
    DsaBackend,
    GraphBackend,
    KVDtype,
    LinearBackend,
    MambaStrategy,
    SpecAlgorithm,
    StateDtype,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Flag:
    spellings: tuple[str, ...]  # the first works in every release; the rest are aliases
    key: str  # the Deployment field it sets, or the SGLang field it feeds
    parse: Parser | None = None  # None: a switch (store_true), which takes no value
    expects: str = ""  # the value's shape, for errors and help
    help: str = ""

    @property
    def switch(self) -> bool:
        return self.parse is None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unsupported:
    spellings: tuple[str, ...]
    neutral: str | None  # the value that changes nothing; None: a switch, refused when given
    reason: str


def _choices(spellings: tuple[str, ...], key: str, table: dict[str, object], help: str,
             **options) -> Flag:
    return Flag(spellings=spellings, key=key, parse=choice(table, **options),
                expects=" | ".join(table), help=help)


def _non_negative(text: str) -> int:
    value = integer(text)
    if value < 0:
        raise ValueError("expected a non-negative integer")
    return value


def _gb_or_ratio(text: str) -> int | None:
    # ServerArgs.hicache_size is an int; 0 (its default) means "size by --hicache-ratio".
    return integer(text) or None


POSITIVE = "a positive integer"
HUMAN = "a positive integer (128k = 128,000, 128K = 131,072)"
_DSA = enum_choices(DsaBackend)

FLAGS: tuple[Flag, ...] = (
    Flag(spellings=("--model-path", "--model"), key="model_path", parse=str,
         expects="a model name, repo id or path", help="the model whose config is read"),
    # parallelism (ServerArgs.tp_size / dp_size / attn_cp_size, with their aliases=)
    Flag(spellings=("--tp-size", "--tensor-parallel-size", "--tp"), key="tp_size",
         parse=integer, expects=POSITIVE, help="tensor-parallel ranks"),
    Flag(spellings=("--dp-size", "--data-parallel-size", "--dp"), key="dp_size",
         parse=integer, expects=POSITIVE, help="data-parallel replicas (attention DP groups)"),
    Flag(spellings=("--enable-dp-attention",), key="enable_dp_attention",
         help="attention runs data-parallel: attn_tp = tp / dp / attn_cp"),
    Flag(spellings=("--attn-cp-size", "--attention-context-parallel-size"), key="attn_cp_size",
         parse=integer, expects=POSITIVE, help="attention context-parallel ranks"),
    Flag(spellings=("--pp-size", "--pipeline-parallel-size"), key="pp_size", parse=integer,
         expects=POSITIVE, help="pipeline stages; each plans its own layers (overlap off)"),
    Flag(spellings=("--dcp-size", "--decode-context-parallel-size"), key="dcp_size",
         parse=integer, expects=POSITIVE,
         help="decode context parallelism: tokens spread over dcp ranks of a tp group"),
    # prefill/decode disaggregation (arg_groups/fields/disagg.py)
    _choices(("--disaggregation-mode",), "disaggregation_mode", enum_choices(DisaggMode),
             "the server's role: decode turns the radix cache off and pre-allocates rows"),
    Flag(spellings=("--disaggregation-decode-extra-slots",),
         key="disaggregation_decode_extra_slots", parse=_non_negative,
         expects="a non-negative integer",
         help="decode: extra request rows for requests in transfer"),
    Flag(spellings=("--disaggregation-decode-enable-radix-cache",),
         key="disaggregation_decode_enable_radix_cache",
         help="decode: keep the radix cache on"),
    # KV rows. kv_cache_dtype choices: auto, fp8_e5m2, fp8_e4m3, mxfp8, bf16, bfloat16, nvfp4,
    # fp4_mx_block16, fp4_e2m1; "bf16" and "bfloat16" are one dtype.
    _choices(("--kv-cache-dtype",), "kv_cache_dtype",
             enum_choices(KVDtype, extra={"bfloat16": KVDtype.BF16}),
             "KV cache storage dtype (auto: bf16 on Hopper, fp8 on Blackwell for DSA)",
             refused={v: "a valid SGLang KV dtype that kvledger does not size"
                      for v in ("fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16", "fp4_e2m1")}),
    _choices(("--nsa-prefill-backend", "--dsa-prefill-backend"), "dsa_prefill_backend", _DSA,
             "DSA prefill kernels; trtllm here or in decode stores raw fp8 rows"),
    _choices(("--nsa-decode-backend", "--dsa-decode-backend"), "dsa_decode_backend", _DSA,
             "DSA decode kernels"),
    Flag(spellings=("--page-size",), key="page_size", parse=integer, expects=POSITIVE,
         help="tokens per KV page"),
    # weights per rank
    Flag(spellings=("--ep-size", "--expert-parallel-size", "--ep"), key="ep_size",
         parse=integer, expects=POSITIVE, help="expert-parallel size (experts split over it)"),
    _choices(("--quantization",), "quantization",
             enum_choices(QuantMethod, extra={"nvfp4": QuantMethod.NVFP4}),
             "weight quantization (unset: the checkpoint's quantization_config)"),
    # linear-attention state
    _choices(("--mamba-ssm-dtype",), "mamba_ssm_dtype", enum_choices(StateDtype),
             "temporal-state dtype (unset: the config's, else float32)"),
    _choices(("--mamba-scheduler-strategy", "--mamba-radix-cache-strategy"), "mamba_strategy",
             enum_choices(MambaStrategy), "state slots kept per request for prefix caching",
             refused={"extra_buffer_lazy": "a valid SGLang strategy that kvledger does not model"}),
    _choices(("--linear-attn-backend",), "linear_attn_backend", enum_choices(LinearBackend),
             "linear-attention kernels (only triton allows extra_buffer)"),
    Flag(spellings=("--mamba-full-memory-ratio",), key="mamba_full_memory_ratio", parse=number,
         expects="a positive number", help="state bytes : token bytes when splitting memory"),
    Flag(spellings=("--max-mamba-cache-size",), key="max_mamba_cache_size", parse=integer,
         expects=POSITIVE, help="state slots (global, split over attention DP)"),
    # scheduler and budget
    Flag(spellings=("--disable-overlap-schedule",), key="disable_overlap_schedule",
         help="no overlap scheduler: one ping-pong state slot fewer per request"),
    Flag(spellings=("--disable-radix-cache",), key="disable_radix_cache",
         help="no prefix cache: one state slot per request"),
    Flag(spellings=("--mem-fraction-static",), key="mem_fraction_static", parse=number,
         expects="a number in (0, 1]", help="share of GPU memory for weights + caches"),
    Flag(spellings=("--max-total-tokens",), key="max_total_tokens", parse=human_int,
         expects=HUMAN, help="cap on KV tokens"),
    Flag(spellings=("--max-running-requests",), key="max_running_requests", parse=integer,
         expects=POSITIVE, help="running requests (global, split over attention DP)"),
    Flag(spellings=("--context-length",), key="context_length", parse=human_int,
         expects=HUMAN, help="max tokens per request"),
    # CUDA graphs (arg_groups/fields/exec_.py; --disable-cuda-graph is server_args.py's
    # deprecated spelling): the automatic fraction reserves for their capture
    Flag(spellings=("--disable-cuda-graph",), key="disable_cuda_graph",
         help="no CUDA graphs in either phase: nothing reserved for them"),
    Flag(spellings=("--disable-prefill-cuda-graph",), key="disable_prefill_cuda_graph",
         help="no prefill CUDA graphs: nothing reserved for them"),
    Flag(spellings=("--disable-decode-cuda-graph",), key="disable_decode_cuda_graph",
         help="no decode CUDA graphs: nothing reserved for them"),
    _choices(("--cuda-graph-backend-prefill",), "cuda_graph_backend_prefill",
             enum_choices(GraphBackend), "prefill CUDA-graph capture (default: breakable on CUDA "
             "where SGLang allows it)"),
    _choices(("--cuda-graph-backend-decode",), "cuda_graph_backend_decode",
             enum_choices(GraphBackend), "decode CUDA-graph capture (default: full)"),
    # speculative decoding: on when an algorithm is given (arg_groups/speculative_hook.py)
    _choices(("--speculative-algorithm",), "speculative_algorithm",
             enum_choices(SpecAlgorithm, extra={"NEXTN": SpecAlgorithm.EAGLE}),
             "turns speculative decoding on (NEXTN = EAGLE); case-insensitive", upper=True),
    Flag(spellings=("--speculative-num-steps",), key="speculative_num_steps", parse=integer,
         expects=POSITIVE, help="EAGLE draft steps"),
    Flag(spellings=("--speculative-eagle-topk",), key="speculative_eagle_topk", parse=integer,
         expects=POSITIVE, help="EAGLE branches per step"),
    Flag(spellings=("--speculative-num-draft-tokens",), key="speculative_num_draft_tokens",
         parse=integer, expects=POSITIVE, help="draft tokens verified per step"),
    Flag(spellings=("--speculative-draft-model-path", "--speculative-draft-model"),
         key="speculative_draft_model_path", parse=str, expects="a model name, repo id or path",
         help="the draft checkpoint; the model's own path counts its draft layers in the cell"),
    Flag(spellings=("--speculative-dflash-block-size",), key="speculative_dflash_block_size",
         parse=integer, expects=POSITIVE, help="DFLASH verify window"),
    Flag(spellings=("--speculative-dspark-block-size",), key="speculative_dspark_block_size",
         parse=integer, expects=POSITIVE, help="DSPARK gamma (draft tokens = gamma + 1)"),
    # host tier
    Flag(spellings=("--enable-hierarchical-cache",), key="enable_hierarchical_cache",
         help="HiCache: back the device pools with host memory"),
    Flag(spellings=("--hicache-ratio",), key="hicache_ratio", parse=number,
         expects="a number ≥ 1", help="host size = ratio × device size, per pool"),
    Flag(spellings=("--hicache-size",), key="hicache_size_gb", parse=_gb_or_ratio,
         expects="a whole number of GB (0 = use the ratio)",
         help="host size in GB of 1e9 B (host_size * 1e9 in HostKVCache); beats the ratio"),
)

UNSUPPORTED: tuple[Unsupported, ...] = (
    Unsupported(spellings=("--hicache-host-memory-mode",), neutral="cache",
                reason="buffer_only makes host memory a staging buffer"),
    Unsupported(spellings=("--json-model-override-args",), neutral="{}",
                reason="overrides change the model config; edit config.json instead"),
    Unsupported(spellings=("--enable-unified-memory",), neutral=None,
                reason="one shared byte buffer replaces the static pools"),
    Unsupported(spellings=("--enable-hisparse",), neutral=None,
                reason="hierarchical sparse attention keeps KV rows on the host"),
    Unsupported(spellings=("--enable-lmcache",), neutral=None, reason="LMCache replaces HiCache"),
    Unsupported(spellings=("--enable-flexkv",), neutral=None, reason="FlexKV replaces HiCache"),
    Unsupported(spellings=("--enable-int8-mamba-checkpoint",), neutral=None,
                reason="adds an int8 pool for cached states"),
    Unsupported(spellings=("--config",), neutral=None,
                reason="kvledger does not read SGLang config files; pass the flags themselves"),
)

# Known flags with no effect on the cache ledgers. --dtype sizes weights (and `auto` KV rows
# outside DSA follow it, which kvledger takes as bf16); attention/MoE backends change kernels
# and activation memory, not the pools. The chunk and CUDA-graph sizes (--chunked-prefill-size,
# --cuda-graph-max-bs, --cuda-graph-bs) change only the automatic fraction's reserve, which
# kvledger takes at the GPU's defaults (kvledger.sglang.memfraction).
IGNORED: frozenset[str] = frozenset({
    "--host", "--port", "--trust-remote-code", "--served-model-name", "--tokenizer-path",
    "--tokenizer-mode", "--revision", "--download-dir", "--load-format",
    "--model-loader-extra-config", "--dtype", "--log-level",
    "--log-requests", "--enable-metrics", "--api-key", "--chat-template", "--reasoning-parser",
    "--tool-call-parser", "--watchdog-timeout", "--dist-init-addr", "--nccl-init-addr",
    "--nnodes", "--node-rank", "--random-seed", "--skip-server-warmup", "--device",
    "--base-gpu-id", "--chunked-prefill-size", "--max-prefill-tokens", "--schedule-policy",
    "--schedule-conservativeness", "--enable-mixed-chunk", "--cuda-graph-max-bs",
    "--cuda-graph-bs", "--enable-torch-compile", "--attention-backend",
    "--prefill-attention-backend", "--decode-attention-backend", "--mm-attention-backend",
    "--linear-attn-decode-backend", "--linear-attn-prefill-backend", "--mamba-backend",
    "--mamba-track-interval", "--moe-runner-backend", "--moe-a2a-backend", "--enable-dp-lm-head", "--disable-custom-all-reduce",
    "--enable-multimodal",
    "--hicache-write-policy", "--hicache-io-backend", "--hicache-mem-layout",
    "--hicache-storage-backend", "--model-type",
})

# vLLM's spellings of SGLang flags that mean the same, read exactly as written (SGLang's own
# parser knows none of them, so none is a prefix target): one spelling policy for every
# command, whichever engine plans. vLLM's --data-parallel-size is SGLang's own spelling.
VLLM_ALIASES: dict[str, str] = {
    "--max-model-len": "--context-length", "--block-size": "--page-size",
    "--mamba-ssm-cache-dtype": "--mamba-ssm-dtype",
    "--no-enable-prefix-caching": "--disable-radix-cache",
}

BY_SPELLING: dict[str, Flag] = {s: f for f in FLAGS for s in f.spellings}
UNSUPPORTED_BY_SPELLING: dict[str, Unsupported] = {s: u for u in UNSUPPORTED for s in u.spellings}
KNOWN: frozenset[str] = frozenset(BY_SPELLING) | frozenset(UNSUPPORTED_BY_SPELLING) | IGNORED
assert len(KNOWN) == len(BY_SPELLING) + len(UNSUPPORTED_BY_SPELLING) + len(IGNORED), (
    "a spelling is listed twice"
)
assert set(VLLM_ALIASES.values()) <= set(BY_SPELLING) and not set(VLLM_ALIASES) & KNOWN
# What an abbreviation may name: a flag that is read or refused, never one that is ignored
# (`--engine` must not quietly become --engine-info-bootstrap-port).
PREFIX_TARGETS: frozenset[str] = frozenset(BY_SPELLING) | frozenset(UNSUPPORTED_BY_SPELLING)

_DEFAULTS = {f.name: f.default for f in fields(Deployment)}
_DEFAULT_TEXT = {"model_path": "the kvledger default model",
                 "dsa_prefill_backend": "SGLang's pick for the GPU and dtype",
                 "dsa_decode_backend": "SGLang's pick for the GPU and dtype",
                 "speculative_algorithm": "off", "speculative_num_steps": "auto",
                 "speculative_eagle_topk": "auto", "speculative_num_draft_tokens": "auto",
                 "speculative_dflash_block_size": "from the draft model",
                 "speculative_dspark_block_size": "from the draft model",
                 "speculative_draft_model_path": "unset (the model itself for DeepSeek and GLM-5.2)",
                 "hicache_ratio": "2.0", "hicache_size_gb": "0",
                 "disaggregation_decode_extra_slots": "2 × requests per worker when ≤ 32, else 0"}


def _default(key: str) -> str:
    if key in _DEFAULT_TEXT:
        return _DEFAULT_TEXT[key]
    value = _DEFAULTS[key]
    if value is None:
        return "auto"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, Enum):
        return str(value.value)
    return f"{value:g}"


def flags_help() -> str:
    """The flag table as plain text, for `--help` epilogs."""
    lines = ["SGLang flags read (the first spelling works in every release; the others are "
             "aliases):"]
    for f in FLAGS:
        value = "" if f.switch else f" <{f.expects}>"
        lines.append(_wrap(f"{' / '.join(f.spellings)}{value}", indent="  "))
        lines.append(_wrap(f"{f.help}; default {_default(f.key)}", indent="      "))
    lines.append(_wrap("Refused unless given the neutral value (not modelled): " + ", ".join(
        u.spellings[0] + (f"={u.neutral}" if u.neutral else "") for u in UNSUPPORTED)))
    lines.append(_wrap("Ignored, no effect on the cache ledgers: " + ", ".join(sorted(IGNORED))))
    lines.append(_wrap("vLLM's spellings of the same flags are read too: " + ", ".join(
        f"{v} = {s}" for v, s in VLLM_ALIASES.items()) + "."))
    lines.append(_wrap("Any other SGLang flag is ignored and reported as not recognised; a "
                       "flag SGLang does not know is an error (exit 2). Unambiguous prefixes "
                       "of a flag read or refused are read as the flag, as SGLang's argparse "
                       "parser reads them; a prefix of an ignored flag only is an error."))
    return "\n".join(lines)


def _wrap(text: str, indent: str = "") -> str:
    return textwrap.fill(text, width=76, initial_indent=indent,
                         subsequent_indent=indent + "    ", break_on_hyphens=False)
