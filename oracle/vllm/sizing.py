"""vLLM's own boot-time KV-cache planning for kvledger's models, on a pretended GPU.

Run inside the environment oracle/vllm/setup_env.sh builds:

    ENV/bin/python oracle/vllm/sizing.py --gpu H200 < deployments.jsonl > answers.jsonl

Each input line is one deployment (a JSON object: model, tensor_parallel_size, kv_cache_dtype,
mamba_ssm_cache_dtype, block_size, max_model_len, max_num_seqs, enable_prefix_caching,
num_speculative_tokens, pipeline_parallel_size, decode_context_parallel_size,
prefill_context_parallel_size, available_bytes, id); each output line is vLLM's answer for it
(with pipeline stages, `stages`: each stage's layers, groups, bytes per block and the blocks
its own memory holds). More ranks than one node's 8 GPUs are launched as `--nnodes` asks. Every
deployment of one process sees the one GPU of --gpu (fake_gpu.py: the swap is process-wide).

The path is the engine's (`EngineCore._initialize_kv_caches`, vllm/v1/engine/core.py), step by
step, with vLLM 0.33's functions:
 1. `EngineArgs(...).create_engine_config()` (vllm/engine/arg_utils.py): the model's
    `verify_and_update_config` hooks (model_executor/models/config.py) set mamba_cache_mode,
    the state dtypes and the sparse-MLA fp8 dtype; ParallelConfig and ModelConfig check the
    DCP / PCP sizes (context_parallel.py asks for Model Runner V2 where PCP needs it);
 2. the KV-bearing layers in `compilation_config.static_forward_context` (layers.py, the one
    substitution: vLLM's own layer classes, built without weights or a process group), then
    the model runner's `check_attention_cp_compatibility` (context_parallel.py);
 3. `current_platform.update_block_size_for_backend` (platforms/interface.py: the backend's
    block size, `_align_hybrid_block_size`);
 4. `get_kv_cache_spec` (v1/worker/gpu/attn_utils.py), one spec dict per worker: a pipeline
    stage's workers keep their stage's layers (stages.py, vLLM's `get_pp_indices`);
    `resolve_kv_cache_layout`;
 5. `get_global_kv_cache_groups`, `get_kv_cache_configs` (v1/core/kv_cache_planning.py) with
    the given available bytes on every worker (no profiling run);
 6. `generate_scheduler_kv_cache_config`, `get_kv_cache_capacity` (v1/core/kv_cache_utils.py),
    then `resolve_kv_cache_block_sizes` (0.24 refuses hybrid groups under DCP there);
 7. the Mamba FULL-cudagraph start check of config/compilation.py (max_num_seqs > num_blocks
    refuses), evaluated here because the config is built with enforce_eager.
A ValueError from vLLM on the way is the deployment's refusal (`error`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
CONFIGS = HERE.parents[1] / "src" / "kvledger" / "model" / "configs"

import context_parallel  # noqa: E402
import layers  # noqa: E402
import stages  # noqa: E402
from fake_gpu import install  # noqa: E402

# The scale-out sizes a deployment may set (EngineArgs fields); left out, vLLM's default 1.
GPUS_PER_NODE = 8  # fake_gpu's device_count
SCALE_OUT = ("pipeline_parallel_size", "decode_context_parallel_size",
             "prefill_context_parallel_size")


def _model_dir(model: str) -> str:
    """A folder holding only the model's config.json (what EngineArgs reads)."""
    source = CONFIGS / f"{model}.json"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    home = os.environ.get("KVLEDGER_ORACLE_HOME", os.path.expanduser("~/.cache/kvledger-oracle"))
    folder = Path(home) / "models" / f"{model}-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "config.json").exists():
        shutil.copyfile(source, folder / "config.json")
    return str(folder)


def engine_config(dep: dict):
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    kwargs = dict(model=_model_dir(dep["model"]), skip_tokenizer_init=True, load_format="dummy",
                  enforce_eager=True,
                  compilation_config={"pass_config": {"fuse_allreduce_rms": False}},
                  tensor_parallel_size=dep.get("tensor_parallel_size", 1),
                  kv_cache_dtype=dep.get("kv_cache_dtype", "auto"),
                  mamba_ssm_cache_dtype=dep.get("mamba_ssm_cache_dtype", "auto"))
    for key in ("max_model_len", "max_num_seqs", "block_size", "enable_prefix_caching",
                *SCALE_OUT):
        if dep.get(key) is not None:
            kwargs[key] = dep[key]
    world = 1
    for key in ("tensor_parallel_size", "pipeline_parallel_size", "prefill_context_parallel_size"):
        world *= dep.get(key) or 1
    if world > GPUS_PER_NODE:
        # more ranks than one node's GPUs: the multi-node multiprocessing launch
        # (`--nnodes`), as ParallelConfig asks for it
        kwargs["nnodes"] = -(-world // GPUS_PER_NODE)
    if dep.get("num_speculative_tokens"):
        # n-gram drafting: speculative tokens without a draft model, so the cache holds the
        # target model's layers only (what kvledger counts)
        kwargs["speculative_config"] = {"method": "ngram", "prompt_lookup_max": 4,
                                        "num_speculative_tokens": dep["num_speculative_tokens"]}
    return EngineArgs(**kwargs).create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)


def plan(dep: dict, platform) -> dict:
    from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
    from vllm.utils.math_utils import cdiv
    from vllm.v1.core import kv_cache_utils
    from vllm.v1.kv_cache_interface import MambaSpec
    from vllm.v1.worker.gpu.attn_utils import get_kv_cache_spec

    try:  # 0.33: planning lives in kv_cache_planning, with a resolved layout and global groups
        from vllm.v1.core import kv_cache_planning as planning
    except ImportError:  # 0.24: kv_cache_utils holds it all
        planning = kv_cache_utils

    out: dict = {"id": dep.get("id")}
    try:
        with context_parallel.v2_runner(dep):
            vc = engine_config(dep)
    except (ValueError, TypeError, NotImplementedError, AssertionError) as exc:
        # (0.24's ModelConfig.verify_with_parallel_config refuses a DCP size with asserts)
        return {**out, "starts": False, "error": f"{type(exc).__name__}: {exc}"}
    cache = vc.cache_config
    try:
        layers.build(vc)  # a layer's __init__ picks its backend: vLLM refuses here without one
    except ValueError as exc:
        return {**out, "starts": False, "error": f"ValueError: {exc}"}
    if refused := context_parallel.refusal(vc):  # the model runner's check, before planning
        return {**out, "starts": False, "error": refused}
    backends = get_current_attn_backends(vc)
    platform.update_block_size_for_backend(vc)
    specs = get_kv_cache_spec(vc)
    world = vc.parallel_config.world_size
    all_specs, ranges = stages.worker_specs(vc, specs)
    extra: tuple = ()
    if hasattr(planning, "get_global_kv_cache_groups"):
        from vllm.v1.attention.backends.utils import (
            get_supported_kv_cache_layouts,
            resolve_kv_cache_layout,
        )

        names = [layout.name for layout in get_supported_kv_cache_layouts(backends)]
        resolve_kv_cache_layout(vc, [names] * world, [s for sp in all_specs for s in sp.values()])
        extra = (planning.get_global_kv_cache_groups(vc, all_specs),)
    out.update(max_model_len=vc.model_config.max_model_len,
               prefix_caching=bool(cache.enable_prefix_caching),
               mamba_cache_mode=cache.mamba_cache_mode if vc.model_config.is_hybrid else None,
               cache_dtype=cache.cache_dtype, block_size=cache.block_size,
               backends=[b.get_name() for b in backends],
               max_num_seqs=vc.scheduler_config.max_num_seqs)
    available = int(dep["available_bytes"])
    try:
        configs = planning.get_kv_cache_configs(vc, all_specs, [available] * world, *extra)
    except ValueError as exc:
        return {**out, "starts": False, "error": f"ValueError: {exc}"}
    if len(ranges) > 1:
        out["stages"] = _stages(vc, planning, configs, ranges, available)
    sched = kv_cache_utils.generate_scheduler_kv_cache_config(configs)
    worker = configs[0]
    group_rows, per_request = [], 0
    for group in sched.kv_cache_groups:
        spec = group.kv_cache_spec
        blocks = cdiv(spec.max_memory_usage_bytes(vc), spec.page_size_bytes)
        per_request += blocks
        inner = list(getattr(spec, "kv_cache_specs", {None: spec}).values())
        group_rows.append({"kind": "mamba" if isinstance(inner[0], MambaSpec) else "attention",
                           "num_layers": len(group.layer_names), "block_size": spec.block_size,
                           "page_bytes": spec.page_size_bytes, "blocks_per_request": blocks})
    cache.num_gpu_blocks = sched.num_blocks
    tokens, concurrency = kv_cache_utils.get_kv_cache_capacity(vc, sched)
    try:  # EngineCore._initialize_kv_caches, before the scheduler is built
        kv_cache_utils.resolve_kv_cache_block_sizes(sched, vc)
    except ValueError as exc:
        return {**out, "starts": False, "error": f"ValueError: {exc}"}
    has_mamba = any(g["kind"] == "mamba" for g in group_rows)
    seqs = vc.scheduler_config.max_num_seqs
    graph_ok = not (has_mamba and seqs is not None and seqs > sched.num_blocks)
    out.update(num_blocks=sched.num_blocks, bytes_per_block=planning._pool_bytes_per_block(
        vc, worker.kv_cache_groups), groups=group_rows, blocks_per_request=per_request,
        max_concurrency=concurrency, logged_tokens=tokens,
        log_line=f"GPU KV cache size: {tokens:,} tokens, Maximum concurrency for "
                 f"{vc.model_config.max_model_len:,} tokens per request: {concurrency:.2f}x",
        starts=graph_ok)
    if not graph_ok:
        out["error"] = (f"ValueError: max_num_seqs ({seqs}) exceeds available Mamba cache "
                        f"blocks ({sched.num_blocks}) (config/compilation.py)")
    return out


def _stages(vc, planning, configs, ranges, available: int) -> list[dict]:
    """Each pipeline stage's worker (its first TP rank): its layers, the bytes one block
    spans there and the blocks its own memory would hold, before `get_kv_cache_configs` gave
    every worker the smallest count."""
    per_stage = len(configs) // len(ranges)
    rows = []
    for rank, (start, end) in enumerate(ranges):
        groups = configs[rank * per_stage].kv_cache_groups
        per_block = planning._pool_bytes_per_block(vc, groups)
        rows.append({"pp_rank": rank, "start_layer": start, "end_layer": end,
                     "group_layers": [len(g.layer_names) for g in groups],
                     "bytes_per_block": per_block, "num_blocks_alone": available // per_block})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", required=True)
    parser.add_argument("--cuda-major", type=int, default=13)
    args = parser.parse_args(argv)
    platform = install(args.gpu, args.cuda_major)
    import importlib.metadata

    version = importlib.metadata.version("vllm")
    for line in sys.stdin:
        if not line.strip():
            continue
        dep = json.loads(line)
        try:
            answer = plan(dep, platform)
        except Exception as exc:  # noqa: BLE001 - one deployment's failure is its answer
            # The trace goes to stderr: it names this checkout's paths, and a recording must
            # read the same on any machine that replays it.
            traceback.print_exc(limit=4, file=sys.stderr)
            answer = {"id": dep.get("id"), "oracle_error": f"{type(exc).__name__}: {exc}"}
        answer["vllm"] = version
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
