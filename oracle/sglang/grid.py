"""The SGLang differential grid: generated over every axis, then sampled by a stable hash.

    python oracle/sglang/grid.py [--release 0.5.21] [--sample N] > deployments.jsonl

Axes (each a choice SGLang's resolution or sizing branches on):
- model: every config in src/kvledger/model/configs SGLang can load (`UNLOADABLE`);
- GPU: H200 and H100 (SM 9.0), B200 (SM 10.0), A100 80GB (SM 8.0);
- kv_cache_dtype: auto, fp8_e4m3;
- parallelism: TP 1, 2, 4, 8, and DP attention 8 × TP 8;
- speculative decoding: off, and EAGLE with 4 draft tokens (3 steps, top-k 1, the model as its
  own MTP draft) on models with draft layers;
- radix cache: on, off;
- mode: an ordinary server, `--disaggregation-mode prefill|decode`, `--pp-size 2`,
  `--dcp-size 2` (only where it divides TP: the divisibility check is in
  `initialize_model_parallel`, distributed/parallel_state.py, which the oracle does not run).
Memory: free before load is the GPU's memory less kvledger's CUDA context, and the weights take
a hashed 25–70 % of it (a multiple of 1 MiB, so GiB floats are exact on both sides).
`--sample N` keeps N deployments per release chosen by a hash of their ids: a stable subset.
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
RELEASES = ("0.5.21", "0.5.23")
GPUS = ("H200", "B200", "H100", "A100 80GB")
KV_DTYPES = ("auto", "fp8_e4m3")
PARALLEL = ((1, 1, False), (2, 1, False), (4, 1, False), (8, 1, False), (8, 8, True))
MODES = ("null", "prefill", "decode", "pp2", "dcp2")
SAMPLE = 100
# Configs SGLang cannot load, and why (left out of the grid and reported).
UNLOADABLE = {
    "falcon-h1-0.5b": "transformers FalconH1Config.validate_architecture: the embedded config has "
                      "no mamba_d_ssm, so mamba_expand × hidden_size (2,048) is not "
                      "mamba_n_heads × mamba_d_head (1,536)",
}
MIB = 1 << 20


def _src() -> None:
    if str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def _draft_layers(model: str) -> int:
    _src()
    from kvledger.model.config import load_model

    return load_model(model).num_draft_layers


def preload_bytes(gpu: str) -> int:
    _src()
    from kvledger.core.gpus import get_gpu
    from kvledger.sglang.memfraction import CUDA_CONTEXT_BYTES

    return get_gpu(gpu).memory_bytes - CUDA_CONTEXT_BYTES


def deployments(release: str) -> list[dict]:
    rows = []
    for path in sorted(CONFIGS.glob("*.json")):
        model = path.stem
        if model in UNLOADABLE:
            continue
        specs = (0, 4) if _draft_layers(model) else (0,)
        for gpu, dtype, (tp, dp, dpa), spec, radix_off, mode in itertools.product(
                GPUS, KV_DTYPES, PARALLEL, specs, (False, True), MODES):
            if mode in ("pp2", "dcp2") and dpa or mode == "dcp2" and tp % 2:
                continue
            ident = (f"{release}|{model}|{gpu}|{dtype}|tp={tp}|dp={dp}{'a' if dpa else ''}"
                     f"|spec={spec}|radix={'off' if radix_off else 'on'}|{mode}")
            preload = preload_bytes(gpu)
            weights = (preload * (25 + _hash(ident) % 46) // 100) // MIB * MIB
            rows.append({"id": ident, "release": release, "model": model, "gpu": gpu,
                         "kv_cache_dtype": dtype, "tp": tp, "dp": dp, "dp_attention": dpa,
                         "draft_tokens": spec, "disable_radix_cache": radix_off,
                         "disaggregation_mode": mode if mode in ("prefill", "decode") else "null",
                         "pp": 2 if mode == "pp2" else 1, "dcp": 2 if mode == "dcp2" else 1,
                         "preload_bytes": preload, "weights_bytes": weights})
    return rows


def sample(rows: list[dict], n: int) -> list[dict]:
    return sorted(sorted(rows, key=lambda r: _hash(r["id"] + "sample"))[:n],
                  key=lambda r: r["id"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", choices=RELEASES, default=RELEASES[0])
    parser.add_argument("--sample", type=int, default=SAMPLE)
    args = parser.parse_args(argv)
    for row in sample(deployments(args.release), args.sample):
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
