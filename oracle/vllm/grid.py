"""The differential grid: every embedded model × GPU architecture × KV dtype × prefix caching ×
speculative tokens × tensor parallelism, generated, never hand-picked.

    python oracle/vllm/grid.py [--sample N] > deployments.jsonl

Axes (each value is a choice vLLM's planning branches on):
- model: every config in src/kvledger/model/configs that vLLM can load (`UNLOADABLE` says
  which it cannot, and why);
- GPU: H200 (SM 9.0), B200 (SM 10.0), RTX PRO 6000 (SM 12.0), A100 80GB (SM 8.0), L40S (SM 8.9);
- kv_cache_dtype: auto, fp8;
- prefix caching: vLLM's default (on), off;
- num_speculative_tokens: 0, and 2 on hybrids (the state blocks and conv rows grow with it;
  MTP draft layers are not built on either side);
- tensor_parallel_size: 1, 2, 4, 8 where the model's heads divide.
`available_bytes` is drawn per deployment from a hash of its id (4–60 GiB), so block counts
vary and some deployments do not fit one max_model_len request (a refusal to compare).
`--sample N` keeps N deployments chosen by the same hash: a stable subset, not a prefix.
Which models are hybrids comes from kvledger's model loader (no torch, no vLLM).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "src" / "kvledger" / "model" / "configs"
GPUS = ("H200", "B200", "RTX PRO 6000", "A100 80GB", "L40S")
KV_DTYPES = ("auto", "fp8")
PREFIX_CACHING = (None, False)
TPS = (1, 2, 4, 8)
GIB = 1 << 30
# Configs vLLM cannot load, and why (these are left out of the grid and reported).
UNLOADABLE = {
    "falcon-h1-0.5b": "transformers 5.19 FalconH1Config.validate_architecture: the embedded "
                      "config has no mamba_d_ssm, so mamba_expand × hidden_size (2,048) is not "
                      "mamba_n_heads × mamba_d_head (1,536)",
}


def _text(config: dict) -> dict:
    return config.get("text_config", config)


def _is_hybrid(model: str) -> bool:
    if str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))
    from kvledger.model.config import load_model

    return load_model(model).is_hybrid


def _divides(config: dict, tp: int) -> bool:
    """Every sharded head count the model classes divide by TP (attention heads, linear heads)."""
    text = _text(config)
    counts = [text.get("num_attention_heads"), text.get("linear_num_value_heads"),
              text.get("linear_num_key_heads"), text.get("mamba_num_heads"),
              (text.get("linear_attn_config") or {}).get("num_heads")]
    kv = text.get("num_key_value_heads")
    if kv and kv >= tp:
        counts.append(kv)
    return all(c % tp == 0 for c in counts if c)


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def deployments() -> list[dict]:
    rows = []
    for path in sorted(CONFIGS.glob("*.json")):
        model = path.stem
        if model in UNLOADABLE:
            continue
        config = json.loads(path.read_text())
        hybrid = _is_hybrid(model)
        specs = (0, 2) if hybrid else (0,)
        for gpu, dtype, caching, spec, tp in itertools.product(GPUS, KV_DTYPES, PREFIX_CACHING,
                                                               specs, TPS):
            if not _divides(config, tp) or (caching is False and not hybrid and spec):
                continue
            ident = f"{model}|{gpu}|{dtype}|pc={caching}|spec={spec}|tp={tp}"
            rows.append({"id": ident, "model": model, "gpu": gpu, "kv_cache_dtype": dtype,
                         "enable_prefix_caching": caching, "num_speculative_tokens": spec,
                         "tensor_parallel_size": tp,
                         "available_bytes": (4 + _hash(ident) % 57) * GIB
                         + _hash(ident + "b") % GIB})
    return rows


# The --block-size grid (`python oracle/vllm/grid.py --blocks`): the sparse-MLA models, a
# dense MLA, a GQA and a GQA hybrid model, each at one tensor parallelism where it fits, under
# a user block size that the sparse kernels take (64, 128), one only FlashInfer's takes (32)
# and one none of them takes (16).
BLOCK_MODELS = (("deepseek-v3.2", 8), ("glm-5.2", 8), ("glm-5.3-flash", 4), ("deepseek-v3", 8),
                ("llama-3.1-8b", 1), ("qwen3-next-80b-a3b-instruct", 4))
BLOCK_GPUS = ("H200", "B200")
BLOCK_SIZES = (16, 32, 64, 128)


def block_size_deployments() -> list[dict]:
    rows = []
    for (model, tp), gpu, dtype, block in itertools.product(BLOCK_MODELS, BLOCK_GPUS,
                                                            KV_DTYPES, BLOCK_SIZES):
        ident = f"{model}|{gpu}|{dtype}|bs={block}|tp={tp}"
        rows.append({"id": ident, "model": model, "gpu": gpu, "kv_cache_dtype": dtype,
                     "enable_prefix_caching": None, "num_speculative_tokens": 0,
                     "tensor_parallel_size": tp, "block_size": block,
                     "available_bytes": (4 + _hash(ident) % 57) * GIB + _hash(ident + "b") % GIB})
    return rows


# The scale-out grid (`python oracle/vllm/grid.py --scale-out`): pipeline stages, decode and
# prefill context parallelism, alone and together, over a dense GQA, a GQA hybrid (Gated
# DeltaNet; Nemotron-H's Mamba2 for its own stage-layer count), a dense MLA, the sparse-MLA
# DeepSeek-V3.2 and GLM-5.3-Flash (sparse MLA + KDA). Each shape is (model, tp, pp, dcp, pcp);
# the uneven splits (32 layers over 3 stages, 48 over 5, 61 over 4, 45 over 2 to 4) and the
# sizes vLLM refuses (DCP above tp // KV heads, a DCP that does not divide TP or span PCP,
# PCP with GQA or state layers) are there on purpose.
SCALE_OUT_SHAPES = (
    ("llama-3.1-8b", 1, 2, 1, 1), ("llama-3.1-8b", 2, 3, 1, 1),
    ("deepseek-v3", 8, 2, 1, 1), ("deepseek-v3.2", 8, 2, 1, 1), ("deepseek-v3.2", 4, 4, 1, 1),
    ("qwen3-next-80b-a3b-instruct", 2, 2, 1, 1), ("qwen3-next-80b-a3b-instruct", 4, 3, 1, 1),
    ("qwen3-next-80b-a3b-instruct", 1, 5, 1, 1), ("glm-5.3-flash", 4, 2, 1, 1),
    ("glm-5.3-flash", 2, 3, 1, 1), ("glm-5.3-flash", 1, 4, 1, 1),
    ("nemotron-h-56b-base-8k", 4, 2, 1, 1),
    ("deepseek-v3", 8, 1, 2, 1), ("deepseek-v3", 8, 1, 8, 1), ("deepseek-v3", 4, 1, 3, 1),
    ("deepseek-v3.2", 8, 1, 4, 1), ("glm-5.3-flash", 4, 1, 2, 1), ("glm-5.3-flash", 8, 1, 8, 1),
    ("qwen3-next-80b-a3b-instruct", 4, 1, 2, 1), ("qwen3-next-80b-a3b-instruct", 8, 1, 4, 1),
    ("qwen3-next-80b-a3b-instruct", 8, 1, 8, 1), ("llama-3.1-8b", 8, 1, 2, 1),
    ("deepseek-v3.2", 8, 2, 2, 1), ("qwen3-next-80b-a3b-instruct", 4, 2, 2, 1),
    ("glm-5.3-flash", 4, 2, 4, 1),
    ("deepseek-v3", 4, 1, 1, 2), ("deepseek-v3", 4, 1, 2, 2), ("deepseek-v3", 4, 1, 8, 2),
    ("deepseek-v3", 4, 1, 4, 2), ("deepseek-v3.2", 8, 1, 1, 2), ("llama-3.1-8b", 2, 1, 1, 2),
    ("qwen3-next-80b-a3b-instruct", 4, 1, 1, 2), ("glm-5.3-flash", 4, 1, 1, 2),
)
# (GPU, kv_cache_dtype) per shape: MLA models also in fp8, whose sparse backends differ.
SCALE_OUT_VARIANTS = (("H200", "auto"), ("B200", "auto"), ("H200", "fp8"))
_GQA_MODELS = ("llama-3.1-8b", "qwen3-next-80b-a3b-instruct", "nemotron-h-56b-base-8k")


def scale_out_deployments() -> list[dict]:
    rows = []
    for (model, tp, pp, dcp, pcp), (gpu, dtype) in itertools.product(SCALE_OUT_SHAPES,
                                                                   SCALE_OUT_VARIANTS):
        if dtype == "fp8" and model in _GQA_MODELS:
            continue
        ident = f"{model}|{gpu}|{dtype}|tp={tp}|pp={pp}|dcp={dcp}|pcp={pcp}"
        rows.append({"id": ident, "model": model, "gpu": gpu, "kv_cache_dtype": dtype,
                     "enable_prefix_caching": None, "num_speculative_tokens": 0,
                     "tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                     "decode_context_parallel_size": dcp, "prefill_context_parallel_size": pcp,
                     "available_bytes": (4 + _hash(ident) % 57) * GIB + _hash(ident + "b") % GIB})
    return rows


def sample(rows: list[dict], n: int) -> list[dict]:
    return sorted(sorted(rows, key=lambda r: _hash(r["id"] + "sample"))[:n],
                  key=lambda r: r["id"])


def selected(args) -> list[dict]:
    """The grid the command line names (--blocks, --scale-out, else the main grid)."""
    if args.blocks:
        return block_size_deployments()
    if args.scale_out:
        return scale_out_deployments()
    return deployments()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int)
    parser.add_argument("--blocks", action="store_true", help="the --block-size grid")
    parser.add_argument("--scale-out", action="store_true",
                        help="the pipeline / context-parallel grid")
    args = parser.parse_args(argv)
    rows = selected(args)
    if args.sample:
        rows = sample(rows, args.sample)
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
