"""GPU catalogue: device memory as the driver reports it, and what `auto` choices depend on.

Assumptions:
1. `memory_bytes` is the total the driver reports, not the marketing figure: nvidia-smi's
   `memory.total` (MiB) × 2**20 (an H100 80GB HBM3 shows 81,559 MiB = 85,520,809,984 B, which
   is also torch's `total_memory`), rocm-smi's "VRAM Total Memory (B)" for AMD. Readings come
   from published nvidia-smi / rocm-smi output. Entries with no reading on file carry the
   vendor's figure and say so (`MemorySource.NOMINAL`); the real total is a little lower.
2. `compute_capability` is what `torch.cuda.get_device_capability()` returns. On ROCm it is
   (9, x) for gfx94x/gfx950 (MI300X (9, 4), MI355X (9, 5)), so SGLang treats them like sm90.
3. SGLang resolves `--kv-cache-dtype auto` for DSA models to fp8_e4m3 when the capability
   major is ≥ 10 and to bfloat16 otherwise (`_dsa_kv_cache_dtype_default` in
   arg_groups/overrides.py): `GPU.dsa_auto_kv_fp8`.

>>> h100 = get_gpu("h100")
>>> h100.memory_bytes, h100.arch.value, h100.dsa_auto_kv_fp8
(85520809984, 'hopper', False)
>>> get_gpu("NVIDIA B200").dsa_auto_kv_fp8, get_gpu("mi300x").dsa_auto_kv_fp8
(True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from kvledger.core.units import GB, GiB, MiB


class GpuError(ValueError):
    """A GPU name the catalogue does not know; the message lists the choices."""


class GpuArch(Enum):
    AMPERE = "ampere"  # sm80 / sm86
    ADA = "ada"  # sm89
    HOPPER = "hopper"  # sm90
    BLACKWELL = "blackwell"  # sm100 / sm103 (datacenter), sm120 (RTX PRO)
    CDNA3 = "cdna3"  # gfx942
    CDNA4 = "cdna4"  # gfx950

    @property
    def is_rocm(self) -> bool:
        return self in (GpuArch.CDNA3, GpuArch.CDNA4)


class MemorySource(Enum):
    DEVICE = "device"  # a driver reading (nvidia-smi / rocm-smi)
    NOMINAL = "nominal"  # the vendor's figure; no reading on file


@dataclass(frozen=True, slots=True, kw_only=True)
class GPU:
    name: str
    device_name: str  # as nvidia-smi / rocm-smi print it
    memory_bytes: int
    memory_source: MemorySource
    arch: GpuArch
    compute_capability: tuple[int, int]
    aliases: tuple[str, ...] = ()

    @property
    def dsa_auto_kv_fp8(self) -> bool:
        """Whether SGLang's `--kv-cache-dtype auto` picks fp8 for a DSA model on this GPU."""
        return self.compute_capability[0] >= 10


_GPUS = (
    # nvidia-smi: "NVIDIA H100 80GB HBM3 … / 81559MiB"
    GPU(name="H100", device_name="NVIDIA H100 80GB HBM3", memory_bytes=81_559 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.HOPPER, compute_capability=(9, 0),
        aliases=("H100 SXM", "H100 80GB", "H100 80GB HBM3")),
    # nvidia-smi: "NVIDIA H200 … / 143771MiB" (141 GB)
    GPU(name="H200", device_name="NVIDIA H200", memory_bytes=143_771 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.HOPPER, compute_capability=(9, 0),
        aliases=("H200 SXM", "H200 141GB")),
    # nvidia-smi: "NVIDIA H20 … / 97871MiB" (the 96 GB part)
    GPU(name="H20", device_name="NVIDIA H20", memory_bytes=97_871 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.HOPPER, compute_capability=(9, 0),
        aliases=("H20 96GB",)),
    # nvidia-smi: "NVIDIA B200 … / 183359MiB"
    GPU(name="B200", device_name="NVIDIA B200", memory_bytes=183_359 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.BLACKWELL, compute_capability=(10, 0),
        aliases=("HGX B200", "B200 SXM")),
    # nvidia-smi: "NVIDIA B300 SXM6 AC … / 275040MiB"; capability (10, 3)
    GPU(name="B300", device_name="NVIDIA B300 SXM6 AC", memory_bytes=275_040 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.BLACKWELL, compute_capability=(10, 3),
        aliases=("HGX B300", "B300 SXM", "B300 SXM6")),
    # nvidia-smi: "NVIDIA GB200 … / 189471MiB" (more than a B200: the Grace board's part)
    GPU(name="GB200", device_name="NVIDIA GB200", memory_bytes=189_471 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.BLACKWELL, compute_capability=(10, 0),
        aliases=("GB200 NVL72",)),
    # NVIDIA's 288 GB per Blackwell Ultra GPU, taken as decimal GB: the B300 reading above
    # (275,040 MiB = 288.4e9 B) shows that is how the figure is meant.
    GPU(name="GB300", device_name="NVIDIA GB300", memory_bytes=288 * GB,
        memory_source=MemorySource.NOMINAL, arch=GpuArch.BLACKWELL, compute_capability=(10, 3),
        aliases=("GB300 NVL72",)),
    # rocm-smi: "VRAM Total Memory (B): 205822885888" (192 GB marketed)
    GPU(name="MI300X", device_name="AMD Instinct MI300X", memory_bytes=205_822_885_888,
        memory_source=MemorySource.DEVICE, arch=GpuArch.CDNA3, compute_capability=(9, 4),
        aliases=("Instinct MI300X",)),
    # AMD's 288 GB HBM3E, taken as GiB: the MI300X's "192 GB" reads as 191.7 GiB, 320 MiB
    # under 192 GiB, so expect the real MI355X total a little under this.
    GPU(name="MI355X", device_name="AMD Instinct MI355X", memory_bytes=288 * GiB,
        memory_source=MemorySource.NOMINAL, arch=GpuArch.CDNA4, compute_capability=(9, 5),
        aliases=("Instinct MI355X",)),
    # nvidia-smi: "NVIDIA RTX PRO 6000 Blackwell … 97887MiB" (Server and Workstation editions)
    GPU(name="RTX PRO 6000", device_name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
        memory_bytes=97_887 * MiB, memory_source=MemorySource.DEVICE, arch=GpuArch.BLACKWELL,
        compute_capability=(12, 0),
        aliases=("RTX PRO 6000 Blackwell", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition")),
    # nvidia-smi: "NVIDIA A100-SXM4-40GB … / 40960MiB"
    GPU(name="A100 40GB", device_name="NVIDIA A100-SXM4-40GB", memory_bytes=40_960 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.AMPERE, compute_capability=(8, 0),
        aliases=("A100 SXM4 40GB", "NVIDIA A100-PCIE-40GB")),
    # nvidia-smi: "NVIDIA A100-SXM4-80GB … / 81920MiB"
    GPU(name="A100 80GB", device_name="NVIDIA A100-SXM4-80GB", memory_bytes=81_920 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.AMPERE, compute_capability=(8, 0),
        aliases=("A100", "A100 SXM4 80GB", "NVIDIA A100 80GB PCIe")),
    # nvidia-smi: "NVIDIA H800 … / 81559MiB" (the H100's memory, export interconnect)
    GPU(name="H800", device_name="NVIDIA H800", memory_bytes=81_559 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.HOPPER, compute_capability=(9, 0),
        aliases=("H800 80GB", "H800 SXM")),
    # 141 GB HBM3e like the H200; no reading on file, so the H200's 143,771 MiB is assumed.
    GPU(name="H20-3e", device_name="NVIDIA H20-3e", memory_bytes=143_771 * MiB,
        memory_source=MemorySource.NOMINAL, arch=GpuArch.HOPPER, compute_capability=(9, 0),
        aliases=("H20 141GB", "H20-3e 141GB")),
    # nvidia-smi: "NVIDIA L40S … / 46068MiB"
    GPU(name="L40S", device_name="NVIDIA L40S", memory_bytes=46_068 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.ADA, compute_capability=(8, 9)),
    # nvidia-smi: "NVIDIA GeForce RTX 4090 … / 24564MiB"
    GPU(name="RTX 4090", device_name="NVIDIA GeForce RTX 4090", memory_bytes=24_564 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.ADA, compute_capability=(8, 9),
        aliases=("GeForce RTX 4090", "4090")),
    # nvidia-smi: "NVIDIA GeForce RTX 5090 … / 32607MiB"
    GPU(name="RTX 5090", device_name="NVIDIA GeForce RTX 5090", memory_bytes=32_607 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.BLACKWELL, compute_capability=(12, 0),
        aliases=("GeForce RTX 5090", "5090")),
    # nvidia-smi --query-gpu=name,memory.total: "NVIDIA GeForce RTX 3090, 24576 MiB" (8.6)
    GPU(name="RTX 3090", device_name="NVIDIA GeForce RTX 3090", memory_bytes=24_576 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.AMPERE, compute_capability=(8, 6),
        aliases=("GeForce RTX 3090", "3090")),
    # nvidia-smi: "NVIDIA RTX A6000, 49140 MiB" (CC 8.6)
    GPU(name="RTX A6000", device_name="NVIDIA RTX A6000", memory_bytes=49_140 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.AMPERE, compute_capability=(8, 6),
        aliases=("A6000",)),
    # nvidia-smi: "NVIDIA A10G, 23028 MiB" (AWS g5)
    GPU(name="A10G", device_name="NVIDIA A10G", memory_bytes=23_028 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.AMPERE, compute_capability=(8, 6)),
    # nvidia-smi: "NVIDIA L4, 23034 MiB"
    GPU(name="L4", device_name="NVIDIA L4", memory_bytes=23_034 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.ADA, compute_capability=(8, 9)),
    # nvidia-smi: "NVIDIA L20, 46068" MiB (CC 8.9, the L40S's memory)
    GPU(name="L20", device_name="NVIDIA L20", memory_bytes=46_068 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.ADA, compute_capability=(8, 9)),
    # nvidia-smi: "NVIDIA H100 NVL, 95830 MiB" (CC 9.0)
    GPU(name="H100 NVL", device_name="NVIDIA H100 NVL", memory_bytes=95_830 * MiB,
        memory_source=MemorySource.DEVICE, arch=GpuArch.HOPPER, compute_capability=(9, 0),
        aliases=("H100 94GB",)),
    # AMD's 256 GB HBM3E, taken as GiB like the MI355X entry (expect a little less).
    GPU(name="MI325X", device_name="AMD Instinct MI325X", memory_bytes=256 * GiB,
        memory_source=MemorySource.NOMINAL, arch=GpuArch.CDNA3, compute_capability=(9, 4),
        aliases=("Instinct MI325X",)),
)

CATALOGUE: dict[str, GPU] = {g.name: g for g in _GPUS}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_BY_KEY: dict[str, GPU] = {
    _key(spelling): g for g in _GPUS for spelling in (g.name, g.device_name, *g.aliases)
}
assert len(_BY_KEY) == sum(2 + len(g.aliases) for g in _GPUS), "two GPUs share a spelling"


def get_gpu(name: str) -> GPU:
    """Look a GPU up by name, nvidia-smi / rocm-smi name or alias.

    Case, spaces, hyphens and underscores are ignored: "rtx-pro-6000" finds "RTX PRO 6000".
    """
    gpu = _BY_KEY.get(_key(name))
    if gpu is None:
        raise GpuError(f"GPU {name!r} is not in the catalogue; choose one of "
                       f"{', '.join(CATALOGUE)} (or give --gpu-memory-gib)")
    return gpu


# ---- compute and bandwidth, for the simulator's time model ---------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuPerf:
    """Peak rates of one GPU from its vendor datasheet (dense, no sparsity).

    `host_link_bytes_per_s` is one direction of the host↔device link: PCIe Gen5 x16 is
    64 GB/s (32 GT/s × 16 lanes, 128b/130b), NVLink-C2C on Grace boards 450 GB/s (900 GB/s
    both directions). These are ceilings; `kvledger.sim.timing` applies achieved fractions.
    """

    bf16_flops_per_s: float
    fp8_flops_per_s: float
    hbm_bytes_per_s: float
    host_link_bytes_per_s: float
    source: str

    def flops_per_s(self, weight_bytes_per_param: float) -> float:
        """Tensor-core peak for a checkpoint's weight width: fp8 GEMMs for 1-byte weights."""
        return self.fp8_flops_per_s if weight_bytes_per_param <= 1.0 else self.bf16_flops_per_s


TB = 1e12
PCIE5_X16 = 64e9
_PERF: dict[str, GpuPerf] = {
    "H100": GpuPerf(bf16_flops_per_s=989.4 * TB, fp8_flops_per_s=1978.9 * TB,
                    hbm_bytes_per_s=3.35 * TB, host_link_bytes_per_s=PCIE5_X16,
                    source="NVIDIA H100 Tensor Core GPU datasheet, SXM column"),
    "H200": GpuPerf(bf16_flops_per_s=989.4 * TB, fp8_flops_per_s=1978.9 * TB,
                    hbm_bytes_per_s=4.8 * TB, host_link_bytes_per_s=PCIE5_X16,
                    source="NVIDIA H200 Tensor Core GPU datasheet, SXM column"),
    "H20": GpuPerf(bf16_flops_per_s=148 * TB, fp8_flops_per_s=296 * TB,
                   hbm_bytes_per_s=4.0 * TB, host_link_bytes_per_s=PCIE5_X16,
                   source="NVIDIA HGX H20 product brief"),
    "B200": GpuPerf(bf16_flops_per_s=2250 * TB, fp8_flops_per_s=4500 * TB,
                    hbm_bytes_per_s=8.0 * TB, host_link_bytes_per_s=PCIE5_X16,
                    source="NVIDIA HGX B200 datasheet, per GPU (dense = half the sparse figure)"),
    "GB200": GpuPerf(bf16_flops_per_s=2500 * TB, fp8_flops_per_s=5000 * TB,
                     hbm_bytes_per_s=8.0 * TB, host_link_bytes_per_s=450e9,
                     source="NVIDIA GB200 NVL72 datasheet, per GPU; NVLink-C2C to Grace"),
    "MI300X": GpuPerf(bf16_flops_per_s=1307.4 * TB, fp8_flops_per_s=2614.9 * TB,
                      hbm_bytes_per_s=5.3 * TB, host_link_bytes_per_s=PCIE5_X16,
                      source="AMD Instinct MI300X datasheet"),
    "MI355X": GpuPerf(bf16_flops_per_s=2516.6 * TB, fp8_flops_per_s=5033.2 * TB,
                      hbm_bytes_per_s=8.0 * TB, host_link_bytes_per_s=PCIE5_X16,
                      source="AMD Instinct MI355X datasheet"),
}
assert set(_PERF) <= set(CATALOGUE), "a perf entry names a GPU the catalogue lacks"


def gpu_perf(gpu: GPU) -> GpuPerf:
    """The GPU's peak rates; a GPU without datasheet figures on file is an error that says
    how to time the simulation anyway (the linear step-cost flags)."""
    perf = _PERF.get(gpu.name)
    if perf is None:
        raise GpuError(f"GPU {gpu.name}: no peak FLOP/s and HBM bandwidth on file (known: "
                       f"{', '.join(_PERF)}); pass --step-overhead-ms, --prefill-ms-per-token "
                       "and --decode-ms-per-token to time the simulation by hand")
    return perf
