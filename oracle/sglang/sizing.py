"""SGLang's own argument resolution and KV-cache sizing for a batch of deployments (CPU only).

    ENV/bin/python oracle/sglang/sizing.py --gpu H200 < deployments.jsonl > answers.jsonl

Each input line is a deployment of oracle/sglang/grid.py; each output line is SGLang's answer
`{"id", "sglang", "starts", "K", "T", "N", "cell_bytes", "slot_bytes", "page_size",
"mem_fraction_static", "prefill_graph", ...}` (`prefill_graph`: the prefill CUDA-graph backend
as resolved) or `{"id", "starts": false, "error": ...}` when SGLang refuses.

What is SGLang's and what is pretended:
- the GPU: its platform facts go through SGLang's own `runtime_context.override_platform`
  (CUDA, the SM of `--gpu`), `get_device_memory_capacity` returns the GPU's memory in MiB,
  three `torch.cuda` probes (capability, name, device count) answer for it, and
  `default_prefill_backend` (model_executor/cuda_graph_config.py), which asks torch's own
  `sglang.srt.utils.is_cuda()` rather than the override, gets True for that one call (so the
  prefill CUDA-graph default, and the fraction's reserve for it, are a GPU's); nothing else in
  `ServerArgs.resolve_once` (page size, mem_fraction_static auto, mamba strategy, DSA
  backends, speculative defaults) is touched;
- the configurator: `ModelConfig.from_server_args`, `resolve_layer_indices`,
  `configure_kv_cache_dtype` and `KVCacheConfigurator` built as `ModelRunner` builds them
  (model=None), then `KVCacheConfigurator._resolve_memory_pool_config` end to end; only
  `get_available_gpu_memory` is patched (it returns the free memory after weights);
- speculative decoding: EAGLE (or the row's `speculative_algorithm`) with the model's own path
  as `--speculative-draft-model-path`, or none with `"draft_model_path": "unset"`; the draft
  worker's configurator is built as
  `TpModelWorker(is_draft_worker=True)` builds it; its pool configurator's cell size is the
  draft's per-token bytes;
- pipeline stages: `_apply_token_constraints` all-reduces T over the PP group; each stage's
  configurator is sized alone (start/end layer of that stage) and the all-reduce is the minimum.
The platform override is process-wide, so one process serves one GPU (run_grid.py groups).
Assumes the environment setup_env.sh built (torch 2.13.0 CPU, SGLang's wheel --no-deps).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.machinery
import io
import json
import logging
import os
import shutil
import sys
import tempfile
import types
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "src" / "kvledger" / "model" / "configs"
GIB = 1 << 30
MIB = 1 << 20
# name, SM, device name, memory as the driver reports it (kvledger.core.gpus' catalogue values)
GPUS = {"H200": (90, "NVIDIA H200", 150754820096),
        "B200": (100, "NVIDIA B200", 192265846784),
        "H100": (90, "NVIDIA H100 80GB HBM3", 85520809984),
        "A100 80GB": (80, "NVIDIA A100-SXM4-80GB", 85899345920)}


# where a refusal came from: "resolve" (ServerArgs), "configurator" (ModelConfig and the
# configurator's construction) or "sizing" (_resolve_memory_pool_config)
STEP = ["resolve"]


class _Stub(types.ModuleType):
    """torchvision stand-in: SGLang's multimodal modules name torchvision classes at import
    time only (PyPI's torchvision wheels need CUDA torch libraries); any call raises."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        def _refuse(*args, **kwargs):
            raise RuntimeError(f"{self.__name__}.{name}: torchvision is not installed")
        value = type(name, (), {"__init__": _refuse, **{m: m.lower() for m in (
            "NEAREST", "NEAREST_EXACT", "BILINEAR", "BICUBIC", "LANCZOS", "BOX", "HAMMING")}}) \
            if name[:1].isupper() else _refuse
        setattr(self, name, value)
        return value


class _StubFinder:
    def find_spec(self, name, path=None, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Stub(spec.name)
        module.__path__, module.__version__ = [], "0.0.0"
        return module

    def exec_module(self, module):
        return None


def pretend_gpu(gpu: str) -> None:
    sm, device_name, memory_bytes = GPUS[gpu]
    import torch
    from sglang.srt import runtime_context as rc
    from sglang.srt.utils import common

    major, minor = divmod(sm, 10)
    rc.override_platform(
        is_cuda=True, is_hip=False, is_npu=False, is_xpu=False, is_musa=False,
        is_sm90=sm == 90, is_sm100=sm == 100, is_sm100_or_sm110=sm in (100, 110),
        is_sm120=sm == 120, is_blackwell=sm >= 100, is_hopper_with_cuda_12_3=sm == 90,
        has_amx=False, has_flashinfer=True, device_sm=sm, device_capability=(major, minor),
    ).install()
    # `default_prefill_backend` (model_executor/cuda_graph_config.py) asks
    # `sglang.srt.utils.is_cuda()`, torch's own answer, not the platform override: under CPU
    # torch that is False and the prefill CUDA-graph default is a non-CUDA machine's. The
    # fact is pretended for that one call, which stays SGLang's.
    from sglang.srt import utils
    from sglang.srt.model_executor import cuda_graph_config

    engine_default = cuda_graph_config.default_prefill_backend

    def default_prefill_backend():
        saved = utils.is_cuda
        utils.is_cuda = lambda: True
        try:
            return engine_default()
        finally:
            utils.is_cuda = saved

    cuda_graph_config.default_prefill_backend = default_prefill_backend

    def capacity_mib(device=None):
        return memory_bytes / MIB

    for name, module in list(sys.modules.items()):
        if name.startswith("sglang") and module is not None and \
                hasattr(module, "get_device_memory_capacity"):
            with contextlib.suppress(Exception):
                module.get_device_memory_capacity = capacity_mib
    common.get_device_memory_capacity = capacity_mib
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    torch.cuda.get_device_name = lambda device=None: device_name
    torch.cuda.device_count = lambda: 8


def server_args(row: dict, model_dir: str):
    from sglang.srt.server_args import ServerArgs

    kw = dict(model_path=model_dir, tp_size=row["tp"], dp_size=row["dp"],
              pp_size=row.get("pp", 1), enable_dp_attention=row["dp_attention"],
              kv_cache_dtype=row["kv_cache_dtype"], skip_tokenizer_init=True, device="cuda",
              disable_radix_cache=row["disable_radix_cache"])
    if row.get("dcp", 1) > 1:
        kw["dcp_size"] = row["dcp"]
    if row.get("disaggregation_mode", "null") != "null":
        kw["disaggregation_mode"] = row["disaggregation_mode"]
    if row.get("draft_tokens"):
        kw.update(speculative_algorithm=row.get("speculative_algorithm", "EAGLE"),
                  speculative_num_steps=row["draft_tokens"] - 1,
                  speculative_eagle_topk=1, speculative_num_draft_tokens=row["draft_tokens"])
        # `draft_model_path`: "model" (the model's own path, as the grid runs it) or "unset"
        if row.get("draft_model_path", "model") == "model":
            kw["speculative_draft_model_path"] = model_dir
    args = ServerArgs(**kw)
    args.resolve_once()
    args.check_server_args()  # the launch-time validation Engine runs (validation_hook.py)
    return args


def configurator(args, *, draft: bool = False, stage: tuple[int, int] | None = None,
                 target=None):
    """The KVCacheConfigurator ModelRunner (or the draft TpModelWorker) builds, model=None."""
    from types import SimpleNamespace

    from sglang.srt import runtime_context as rc
    from sglang.srt.configs.model_config import AttentionArch, ModelConfig
    from sglang.srt.mem_cache import kv_cache_dtype as kvd
    from sglang.srt.mem_cache.kv_cache_configurator import KVCacheConfigurator
    from sglang.srt.model_executor.model_runner_components.layer_setup import resolve_layer_indices
    from sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state import (
        resolve_spec_aux_hidden_state_config,
    )
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    if not draft:
        rc.publish(args, role="scheduler")
        rc.get_parallel().override_permanently(
            world_group=SimpleNamespace(cpu_group=None, world_size=1))
    spec = rc.get_spec()
    if draft:
        config = ModelConfig.from_server_args(
            args, model_path=spec.speculative_draft_model_path,
            model_revision=spec.speculative_draft_model_revision, is_draft_model=True,
            context_length=target.model_config.context_len)
    else:
        config = ModelConfig.from_server_args(args)
    # A pipeline stage's layer range is what its model object says (_resolve_pp_layer_range
    # reads model.start_layer/end_layer); a stand-in carries just those two attributes.
    owner = None if stage is None else SimpleNamespace(start_layer=stage[0], end_layer=stage[1])
    layers = resolve_layer_indices(model=owner, model_config=config, is_draft_worker=draft)
    kv_str, kv_dtype = kvd.configure_kv_cache_dtype(
        server_args_kv_cache_dtype=rc.get_model().kv_cache_dtype, model=None,
        model_dtype=config.dtype, is_draft_worker=draft, is_dflash=False,
        speculative_draft_attention_backend=None,
        speculative_draft_kv_cache_dtype=spec.speculative_draft_kv_cache_dtype)
    algorithm = SpeculativeAlgorithm.from_string(spec.speculative_algorithm)
    return KVCacheConfigurator(
        device="cuda", gpu_id=0, attn_dp_size=rc.get_parallel().attn_dp_size,
        pp_size=rc.get_parallel().pp_size, pp_group=None, model=None, model_config=config,
        server_args=args, kv_cache_dtype=kv_dtype,
        kv_cache_dtype_str=kv_str if kv_str is not None else rc.get_model().kv_cache_dtype,
        model_dtype=config.dtype, page_size=rc.get_schedule().page_size,
        sliding_window_size=None, spec_algorithm=algorithm, is_draft_worker=draft,
        post_capture_kv_active=False,
        spec_aux_config=resolve_spec_aux_hidden_state_config(
            server_args=args, model_config=config, spec_algorithm=algorithm,
            is_draft_worker=draft),
        is_hybrid_swa=config.is_hybrid_swa, is_hybrid_swa_compress=config.is_hybrid_swa_compress,
        use_mla_backend=config.attention_arch == AttentionArch.MLA, layer_info=layers,
        forward_stream=None, req_to_token_pool=None, token_to_kv_pool_allocator=None,
        memory_pool_config=None)


@contextlib.contextmanager
def free_memory(after_weights_bytes: int):
    import sglang.srt.mem_cache.kv_cache_configurator as kc

    saved = kc.get_available_gpu_memory
    kc.get_available_gpu_memory = lambda *a, **k: after_weights_bytes / GIB
    try:
        yield
    finally:
        kc.get_available_gpu_memory = saved


def check_model_class(config) -> None:
    """An architecture with no class in sglang/srt/models goes through SGLang's
    `resolve_transformers_arch` (model_loader/utils.py), which refuses a Transformers class that
    is not backend-compatible. (`get_model_architecture` would import every model module to
    ask `ModelRegistry.is_arch_supported`; a class definition in the package says the same.)"""
    import re

    from sglang.srt.model_loader.utils import resolve_transformers_arch

    import sglang

    archs = list(getattr(config.hf_config, "architectures", None) or [])
    models = Path(sglang.__file__).parent / "srt" / "models"
    pattern = re.compile(r"^class ({})\b".format("|".join(map(re.escape, archs))), re.M)
    if archs and not any(pattern.search(f.read_text(errors="ignore"))
                         for f in models.rglob("*.py")):
        resolve_transformers_arch(config, archs)


@contextlib.contextmanager
def pp_min(floor: list[int]):
    """_apply_token_constraints all-reduces T (MIN) over the PP group; the stand-in records
    each stage's own T and, once every stage is known, answers their minimum."""
    import torch

    saved = torch.distributed.all_reduce

    def reduce(tensor, op=None, group=None):
        floor.append(int(tensor.item()))
        tensor.fill_(min(floor))

    torch.distributed.all_reduce = reduce
    try:
        yield
    finally:
        torch.distributed.all_reduce = saved


def size_stage(row: dict, model_dir: str, stage: tuple[int, int] | None,
               floor: list[int]) -> dict:
    """One rank's resolution and sizing (a fresh ServerArgs: sizing writes back into it)."""
    from sglang.srt import runtime_context as rc
    from sglang.srt.model_executor.pool_configurator import create_memory_pool_configurator

    out: dict = {}
    STEP[0] = "resolve"
    args = server_args(row, model_dir)
    STEP[0] = "configurator"
    kvc = configurator(args, stage=stage)
    STEP[0] = "model class"
    check_model_class(kvc.model_config)
    sched = rc.get_schedule()
    out.update(page_size=sched.page_size, mem_fraction_static=sched.mem_fraction_static,
               attn_dp_size=rc.get_parallel().attn_dp_size,
               prefill_graph=rc.get_exec().graph.cuda_graph_config.prefill.backend)
    out["cell_bytes"] = getattr(create_memory_pool_configurator(kvc), "_cell_size", None)
    mamba = kvc.mambaish_config
    out["slot_bytes"] = mamba.mamba2_cache_params.mamba_cache_per_req if mamba else 0
    if row.get("draft_tokens"):
        draft = configurator(args, draft=True, target=kvc)
        out["draft_cell_bytes"] = getattr(create_memory_pool_configurator(draft),
                                          "_cell_size", None)
    STEP[0] = "sizing"
    with free_memory(row["preload_bytes"] - row["weights_bytes"]), pp_min(floor):
        pool = kvc._resolve_memory_pool_config(row["preload_bytes"] / GIB)
    out.update(T=pool.max_total_num_tokens, N=pool.max_running_requests,
               K=rc.get_schedule().max_mamba_cache_size if mamba else None)
    return out


def answer(row: dict) -> dict:
    from sglang.srt.distributed.utils import get_pp_indices

    import sglang

    out = {"id": row["id"], "sglang": sglang.__version__}
    tmp = tempfile.mkdtemp(prefix="kvledger_sglang_")
    floor: list[int] = []
    try:
        shutil.copy(CONFIGS / f"{row['model']}.json", os.path.join(tmp, "config.json"))
        pp = row.get("pp", 1)
        if pp == 1:
            out.update(size_stage(row, tmp, None, floor))
        else:
            layers = json.loads((CONFIGS / f"{row['model']}.json").read_text())
            layers = layers.get("text_config", layers)["num_hidden_layers"]
            ranges = [tuple(get_pp_indices(layers, rank, pp)) for rank in range(pp)]
            for rng in ranges:  # first pass: each stage's own T
                size_stage(row, tmp, rng, floor)
            stages = []
            for rng in ranges:  # second pass: every stage sees the all-reduced minimum
                floor[:] = [min(floor)]
                stages.append({"layers": list(rng), **size_stage(row, tmp, rng, floor)})
            out.update({k: v for k, v in stages[0].items() if k != "layers"})
            out["pp_stages"] = stages
        out["starts"] = True
    except Exception as exc:  # SGLang's refusal (or the harness failing): its words are the answer
        out.update(starts=False, step=STEP[0], error=f"{type(exc).__name__}: {exc}"[:400])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", required=True, choices=sorted(GPUS))
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    warnings.filterwarnings("ignore")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.CRITICAL)
    sys.meta_path.insert(0, _StubFinder())
    import sglang.srt.mem_cache.kv_cache_configurator  # noqa: F401
    import sglang.srt.server_args  # noqa: F401  (imported before the platform is pretended)
    pretend_gpu(args.gpu)
    for line in sys.stdin:
        if line.strip():
            row = json.loads(line)
            with contextlib.redirect_stdout(io.StringIO()):
                result = answer(row)
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
