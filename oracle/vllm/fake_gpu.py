"""A pretended CUDA GPU for vLLM's planning code on a CPU box (used by sizing.py).

vLLM decides attention backends, kernel block sizes and the hybrid block alignment from the
platform: `current_platform.get_device_capability()`, the device name and memory, and the CUDA
runtime major (vllm/platforms/cuda.py, `CudaPlatformBase`; vllm/platforms/interface.py). On a
CPU box `current_platform` is the UnspecifiedPlatform. `install(profile)` imports the planning
modules first under that platform (so their import-time `if current_platform.is_cuda():`
branches load no CUDA extension), then swaps in a subclass of vLLM's own `CudaPlatformBase` that
answers only the device queries from `profile`, and rebinds every module's `current_platform`
name to it. The swap is process-wide: one GPU profile per process.

Also stubbed, because they only fail for lack of libcuda: the FlashAttention / FlashMLA
extension flags (`FA2_AVAILABLE`, `FA3_AVAILABLE`, `_flashmla_C_AVAILABLE`) are set True, so
vLLM's own capability checks decide which backend runs; `vllm._C_stable_libtorch` is an empty
module; torchvision (PyPI's is CUDA-linked) is an import-time stub.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import os
import sys
import types

GIB = 1 << 30

# Device facts as torch reports them (capability, name, total memory in GiB), keyed by the
# names of kvledger's GPU catalogue. Only the capability and the CUDA runtime change sizing.
PROFILES = {
    "H200": ((9, 0), "NVIDIA H200", 139.81),
    "H100": ((9, 0), "NVIDIA H100 80GB HBM3", 79.65),
    "B200": ((10, 0), "NVIDIA B200", 178.36),
    "B300": ((10, 3), "NVIDIA B300 SXM6 AC", 268.0),
    "A100 80GB": ((8, 0), "NVIDIA A100-SXM4-80GB", 79.25),
    "L40S": ((8, 9), "NVIDIA L40S", 44.39),
    "RTX 4090": ((8, 9), "NVIDIA GeForce RTX 4090", 23.99),
    "RTX 3090": ((8, 6), "NVIDIA GeForce RTX 3090", 23.56),
    "RTX 5090": ((12, 0), "NVIDIA GeForce RTX 5090", 31.36),
    "RTX PRO 6000": ((12, 0), "NVIDIA RTX PRO 6000 Blackwell Server Edition", 94.97),
}

# Imported under the UnspecifiedPlatform before the swap.
_EARLY = (
    "vllm.config", "vllm.engine.arg_utils", "vllm.usage.usage_lib", "vllm.v1.kv_cache_interface",
    "vllm.v1.core.kv_cache_utils", "vllm.v1.core.kv_cache_planning", "vllm.v1.attention.selector",
    "vllm.v1.attention.backends.utils", "vllm.v1.attention.backends.flash_attn",
    "vllm.v1.attention.backends.flashinfer", "vllm.v1.attention.backends.triton_attn",
    "vllm.v1.attention.backends.flex_attention", "vllm.v1.attention.backends.mla.flashmla",
    "vllm.v1.attention.backends.mla.flashinfer_mla", "vllm.v1.attention.backends.mla.triton_mla",
    "vllm.v1.attention.backends.gdn_attn", "vllm.v1.attention.backends.mamba2_attn",
    "vllm.v1.attention.backends.mamba1_attn", "vllm.v1.worker.gpu.attn_utils",
    "vllm.v1.worker.utils", "vllm.distributed.kv_transfer.kv_connector.utils",
    "vllm.model_executor.layers.attention", "vllm.model_executor.layers.attention.mla_attention",
    "vllm.model_executor.layers.mamba.abstract", "vllm.model_executor.layers.mamba.mamba_mixer",
    "vllm.model_executor.layers.mamba.mamba_mixer2",
    "vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn",
    "vllm.model_executor.layers.mamba.gdn.kimi_gdn_linear_attn",
    "vllm.model_executor.models", "vllm.model_executor.models.config",
    # quantisation modules probe CUTLASS support at import (not a KV-cache fact)
    "vllm.model_executor.layers.quantization", "vllm.model_executor.layers.quantization.fp8",
    "vllm.model_executor.layers.quantization.online.base",
    "vllm.model_executor.layers.quantization.utils.w8a8_utils",
    "vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors",
    "vllm.model_executor.layers.quantization.modelopt", "vllm.models.glm5next.common.attention",
    "vllm.models.glm5next.common.kda", "vllm.models.glm5next.common.model",
)
ARCHITECTURES = (
    "LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen3NextForCausalLM",
    "Qwen3_5MoeForConditionalGeneration", "NemotronHForCausalLM", "FalconH1ForCausalLM",
    "KimiLinearForCausalLM", "JambaForCausalLM", "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM", "Glm5NextForConditionalGeneration",
)


class _StubFinder:
    """Answers `import torchvision…` with empty modules whose attributes are dummies."""

    def find_spec(self, name, path=None, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Stub(spec.name)
        module.__path__ = []
        module.__version__ = "0.0.0"
        return module

    def exec_module(self, module):
        pass


class _AnyAttribute(type):
    """A stub class whose every attribute (InterpolationMode.NEAREST, …) is its own name."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return name.lower()


class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = (_AnyAttribute(name, (), {}) if name[:1].isupper()
                 else (lambda *a, **k: None))
        setattr(self, name, value)
        return value


def _env() -> None:
    home = os.environ.get("KVLEDGER_ORACLE_HOME", os.path.expanduser("~/.cache/kvledger-oracle"))
    for key, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"),
                       ("VLLM_NO_USAGE_STATS", "1"), ("VLLM_LOGGING_LEVEL", "ERROR"),
                       ("VLLM_CACHE_ROOT", os.path.join(home, "vllm-cache")),
                       ("TORCHINDUCTOR_CACHE_DIR", os.path.join(home, "inductor")),
                       # FlashInfer's cubins count as present (as on an online install), so
                       # vLLM makes no HTTP probe for them
                       ("VLLM_HAS_FLASHINFER_CUBIN", "1")):
        os.environ.setdefault(key, value)
    sys.meta_path.insert(0, _StubFinder())


def _flash_attn_available(vllm) -> None:
    """Import the FA interface without its package __init__ and mark FA2/FA3 built."""
    folder = os.path.join(os.path.dirname(vllm.__file__), "vllm_flash_attn")
    package = types.ModuleType("vllm.vllm_flash_attn")
    package.__path__ = [folder]
    package.__spec__ = importlib.machinery.ModuleSpec("vllm.vllm_flash_attn", None,
                                                      is_package=True)
    package.__spec__.submodule_search_locations = [folder]
    sys.modules["vllm.vllm_flash_attn"] = package
    interface = importlib.import_module("vllm.vllm_flash_attn.flash_attn_interface")
    interface.FA2_AVAILABLE = interface.FA3_AVAILABLE = True
    interface.FA2_UNAVAILABLE_REASON = interface.FA3_UNAVAILABLE_REASON = None
    for name in dir(interface):
        if not name.startswith("_"):
            setattr(package, name, getattr(interface, name))
    vllm.vllm_flash_attn = package
    fa_utils = importlib.import_module("vllm.v1.attention.backends.fa_utils")
    import vllm._custom_ops as ops

    fa_utils.reshape_and_cache_flash = ops.reshape_and_cache_flash
    for name in ("flash_attn_varlen_func", "get_scheduler_metadata",
                 "compile_flash_attn_varlen_func_from_specs"):
        if hasattr(interface, name):
            setattr(fa_utils, name, getattr(interface, name))


def _platform_class(cuda_base, capability_cls, capability, name, total_gib, cuda_major):
    class PretendedCuda(cuda_base):
        """vLLM's CudaPlatformBase; only the device queries answer from the profile."""

        @classmethod
        def get_device_capability(cls, device_id: int = 0):
            return capability_cls(*capability)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return name

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return int(total_gib * GIB)

        @classmethod
        def get_cuda_runtime_major(cls) -> int:
            return cuda_major

        @classmethod
        def is_fully_connected(cls, physical_device_ids) -> bool:
            return True

        @classmethod
        def device_count(cls) -> int:
            return 8

        @classmethod
        def get_device_uuid(cls, device_id: int = 0) -> str:
            return f"GPU-pretended-{device_id}"

        @classmethod
        def num_compute_units(cls, device_id: int = 0) -> int:
            return 132

    return PretendedCuda


def install(gpu: str, cuda_major: int = 13) -> object:
    """Import vLLM and make it see `gpu` (a PROFILES key); returns the platform object."""
    capability, name, total_gib = PROFILES[gpu]
    _env()
    import torch

    torch.set_num_threads(1)
    import vllm

    with _cuda_tensors_on_meta(torch):  # some backends allocate a workspace at import
        for module in _EARLY:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:  # a module an older release does not have yet
                if not str(exc.name or "").startswith("vllm"):
                    raise
    from vllm.model_executor.models import ModelRegistry

    for arch in ARCHITECTURES:
        ModelRegistry._try_load_model_cls(arch)
    # The registry inspects model classes in a subprocess to keep CUDA out of the parent;
    # here they are imported already.
    importlib.import_module("vllm.model_executor.models.registry")._run_in_subprocess = (
        lambda fn: fn())
    _flash_attn_available(vllm)
    sys.modules.setdefault("vllm._C_stable_libtorch", types.ModuleType("vllm._C_stable_libtorch"))
    import vllm.platforms as platforms
    from vllm.platforms.interface import DeviceCapability

    cuda = importlib.import_module("vllm.platforms.cuda")
    old = platforms.current_platform
    platform = _platform_class(cuda.CudaPlatformBase, DeviceCapability, capability, name,
                               total_gib, cuda_major)()
    platforms._current_platform = platform
    for module in list(sys.modules.values()):
        # the module's own namespace: a lazy package's __getattr__ would import things
        if getattr(module, "__dict__", {}).get("current_platform") is old:
            module.current_platform = platform
    try:
        flashmla = importlib.import_module("vllm.v1.attention.ops.flashmla")
        flashmla._flashmla_C_AVAILABLE = flashmla._flashmla_extension_C_AVAILABLE = True
    except ModuleNotFoundError:
        pass
    # cutlass_mla allocates a CUDA workspace at import; build it on the meta device
    # (if it fails to import, the selector reports CUTLASS_MLA unavailable)
    with _cuda_tensors_on_meta(torch), contextlib.suppress(Exception):
        importlib.import_module("vllm.v1.attention.backends.mla.cutlass_mla")
    return platform


@contextlib.contextmanager
def _cuda_tensors_on_meta(torch):
    """torch.empty / torch.zeros with a CUDA device make meta tensors (import-time workspaces
    that planning never reads)."""
    real = {name: getattr(torch, name) for name in ("empty", "zeros")}

    def wrap(fn):
        def on_meta(*args, **kwargs):
            if str(kwargs.get("device", "")).startswith("cuda"):
                kwargs["device"] = "meta"
            return fn(*args, **kwargs)
        return on_meta

    for name, fn in real.items():
        setattr(torch, name, wrap(fn))
    try:
        yield
    finally:
        for name, fn in real.items():
            setattr(torch, name, fn)
