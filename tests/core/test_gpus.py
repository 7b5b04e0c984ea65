"""GPU catalogue: driver-reported memory, lookup by any spelling, and the auto-dtype rule."""

from __future__ import annotations

import pytest

from kvledger.core.gpus import CATALOGUE, GpuArch, GpuError, MemorySource, get_gpu

MiB = 1 << 20

# (name, bytes, source of the number). Device readings are nvidia-smi `memory.total` in MiB
# (× 2**20) or rocm-smi "VRAM Total Memory (B)", as published in public nvidia-smi/rocm-smi logs.
MEMORY = [
    ("H100", 85_520_809_984, "nvidia-smi 81559MiB; also torch total_memory"),
    ("H200", 143_771 * MiB, "nvidia-smi 143771MiB"),
    ("H20", 97_871 * MiB, "nvidia-smi 97871MiB"),
    ("B200", 183_359 * MiB, "nvidia-smi 183359MiB"),
    ("B300", 275_040 * MiB, "nvidia-smi 275040MiB (B300 SXM6 AC)"),
    ("GB200", 189_471 * MiB, "nvidia-smi 189471MiB"),
    ("GB300", 288_000_000_000, "nominal: NVIDIA's 288 GB"),
    ("MI300X", 205_822_885_888, "rocm-smi VRAM Total Memory (B)"),
    ("MI355X", 288 * (1 << 30), "nominal: AMD's 288 GB"),
    ("RTX PRO 6000", 97_887 * MiB, "nvidia-smi 97887MiB"),
    ("A100 40GB", 40_960 * MiB, "nvidia-smi 40960MiB"),
    ("A100 80GB", 81_920 * MiB, "nvidia-smi 81920MiB"),
    ("H800", 81_559 * MiB, "nvidia-smi 81559MiB"),
    ("H20-3e", 143_771 * MiB, "nominal: 141 GB HBM3e, the H200's reading assumed"),
    ("L40S", 46_068 * MiB, "nvidia-smi 46068MiB"),
    ("RTX 4090", 24_564 * MiB, "nvidia-smi 24564MiB"),
    ("RTX 5090", 32_607 * MiB, "nvidia-smi 32607MiB"),
    ("RTX 3090", 24_576 * MiB, "nvidia-smi 24576 MiB (published benchmark hosts)"),
    ("RTX A6000", 49_140 * MiB, "nvidia-smi 49140 MiB"),
    ("A10G", 23_028 * MiB, "nvidia-smi 23028 MiB (AWS g5)"),
    ("L4", 23_034 * MiB, "nvidia-smi 23034 MiB"),
    ("L20", 46_068 * MiB, "nvidia-smi 46068 MiB"),
    ("H100 NVL", 95_830 * MiB, "nvidia-smi 95830 MiB"),
    ("MI325X", 256 * (1 << 30), "nominal: AMD's 256 GB"),
]


@pytest.mark.parametrize(("name", "memory_bytes", "source"), MEMORY)
def test_memory_is_what_the_device_reports(name, memory_bytes, source):
    gpu = get_gpu(name)
    assert gpu.memory_bytes == memory_bytes, source
    nominal = source.startswith("nominal")
    assert (gpu.memory_source is MemorySource.NOMINAL) == nominal


def test_catalogue_lists_the_requested_gpus_in_order():
    assert list(CATALOGUE) == [name for name, _, _ in MEMORY]


@pytest.mark.parametrize(
    ("spelling", "name"),
    [
        ("h100", "H100"),
        ("NVIDIA H100 80GB HBM3", "H100"),  # nvidia-smi's name
        ("H100-SXM", "H100"),
        ("nvidia h200", "H200"),
        ("b200", "B200"),
        ("GB200", "GB200"),  # not confused with B200
        ("NVIDIA B300 SXM6 AC", "B300"),
        ("gb300_nvl72", "GB300"),
        ("AMD Instinct MI300X", "MI300X"),
        ("mi355x", "MI355X"),
        ("rtx-pro-6000", "RTX PRO 6000"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000"),
    ],
)
def test_lookup_ignores_case_and_punctuation(spelling, name):
    assert get_gpu(spelling).name == name


def test_unknown_gpu_lists_the_choices():
    with pytest.raises(GpuError) as caught:
        get_gpu("V100")
    assert str(caught.value) == (
        "GPU 'V100' is not in the catalogue; choose one of H100, H200, H20, B200, B300, GB200, "
        "GB300, MI300X, MI355X, RTX PRO 6000, A100 40GB, A100 80GB, H800, H20-3e, L40S, "
        "RTX 4090, RTX 5090, RTX 3090, RTX A6000, A10G, L4, L20, H100 NVL, MI325X (or give "
        "--gpu-memory-gib)"
    )


def test_kv_cache_dtype_auto_rule_per_gpu():
    # SGLang _dsa_kv_cache_dtype_default: fp8_e4m3 when the capability major is ≥ 10. ROCm
    # reports gfx942 as (9, 4) and gfx950 as (9, 5), so AMD parts stay bf16 like Hopper.
    fp8 = sorted(g.name for g in CATALOGUE.values() if g.dsa_auto_kv_fp8)
    assert fp8 == ["B200", "B300", "GB200", "GB300", "RTX 5090", "RTX PRO 6000"]
    assert get_gpu("MI300X").compute_capability == (9, 4)
    assert get_gpu("MI355X").compute_capability == (9, 5)
    assert get_gpu("RTX PRO 6000").compute_capability == (12, 0)


def test_architectures():
    by_arch = {arch: sorted(g.name for g in CATALOGUE.values() if g.arch is arch)
               for arch in GpuArch}
    assert by_arch == {
        GpuArch.AMPERE: ["A100 40GB", "A100 80GB", "A10G", "RTX 3090", "RTX A6000"],
        GpuArch.ADA: ["L20", "L4", "L40S", "RTX 4090"],
        GpuArch.HOPPER: ["H100", "H100 NVL", "H20", "H20-3e", "H200", "H800"],
        GpuArch.BLACKWELL: ["B200", "B300", "GB200", "GB300", "RTX 5090", "RTX PRO 6000"],
        GpuArch.CDNA3: ["MI300X", "MI325X"],
        GpuArch.CDNA4: ["MI355X"],
    }
    assert [a for a in GpuArch if a.is_rocm] == [GpuArch.CDNA3, GpuArch.CDNA4]


@pytest.mark.parametrize(("spelling", "capability"), [
    ("NVIDIA GeForce RTX 3090", (8, 6)), ("NVIDIA A10G", (8, 6)), ("NVIDIA L4", (8, 9)),
    ("NVIDIA L20", (8, 9)), ("NVIDIA RTX A6000", (8, 6)), ("NVIDIA H100 NVL", (9, 0))])
def test_pasted_device_names_resolve_with_their_capability(spelling, capability):
    assert get_gpu(spelling).compute_capability == capability
