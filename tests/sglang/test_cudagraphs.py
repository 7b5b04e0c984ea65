"""The CUDA-graph backends SGLang resolves and what its automatic mem_fraction_static reserves
for them (kvledger.sglang.cudagraphs).

The table's fractions and backends are SGLang 0.5.21's and 0.5.23's own: `ServerArgs(...)
.resolve_once()` of each wheel on oracle/sglang/sizing.py's pretended H200 (143,771 MiB),
`mem_fraction_static` and `cuda_graph_config.prefill.backend` as resolved. The rest is worked
out by hand from memory_hook.py `reserve_for_graph_mb` in the comments.
"""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.model.config import load_model
from kvledger.sglang.choices import DisaggMode, GraphBackend
from kvledger.sglang.cudagraphs import GRAPHS_0521, GRAPHS_0523, cuda_graphs, prefill_capture_sizes
from kvledger.sglang.deploy import Deployment
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.memfraction import auto_mem_fraction_static
from kvledger.sglang.plan import make_plan

# H200, tp 1, llama-3.1-8b: 512 + 8,192·1.5 + 128 + 256·2 = 13,440 MiB before the graphs'
# prefill share; 58 captured sizes · 8 = 464 more with breakable. 13,904 → 0.903; 13,440 →
# 0.907; 12,928 (no decode graphs either) → 0.910.
SGLANG = [  # model, flags, rule set, SGLang's fraction, SGLang's prefill backend
    ("llama-3.1-8b", [], "0.5.21", 0.903, "breakable"),
    ("llama-3.1-8b", ["--disable-cuda-graph"], "0.5.23", 0.91, "disabled"),
    ("llama-3.1-8b", ["--disable-prefill-cuda-graph"], "0.5.21", 0.907, "disabled"),
    ("llama-3.1-8b", ["--disable-decode-cuda-graph"], "0.5.23", 0.907, "breakable"),
    # the backend flag wins over the legacy switch; decode stays off
    ("llama-3.1-8b", ["--disable-cuda-graph", "--cuda-graph-backend-prefill", "full"], "0.5.21",
     0.907, "full"),
    # pp: 512 + 12,288 + 256 + 512 = 13,568 → 0.906; given breakable: + 464 → 0.902
    ("llama-3.1-8b", ["--pp-size", "2"], "0.5.23", 0.906, "disabled"),
    ("llama-3.1-8b", ["--pp-size", "2", "--cuda-graph-backend-prefill", "breakable"], "0.5.21",
     0.902, "breakable"),
    # --max-total-tokens 3,000 caps the captured sizes at 3,000: 45 · 8 = 360 → 13,800 → 0.904
    ("llama-3.1-8b", ["--max-total-tokens", "3000"], "0.5.23", 0.904, "breakable"),
    ("llama-3.1-8b", ["--cuda-graph-backend-prefill", "tc_piecewise"], "0.5.21", 0.903,
     "tc_piecewise"),
    # 512 + 12,288 + 512 + 1,024 = 14,336 → 0.900: attention CP turns breakable off
    ("llama-3.1-8b", ["--tp", "4", "--attn-cp-size", "2"], "0.5.23", 0.9, "disabled"),
    # a decode server reserves no prefill graphs, given or not (the 10 GiB floor: 0.929)
    ("llama-3.1-8b", ["--disaggregation-mode", "decode", "--cuda-graph-backend-prefill",
                      "breakable"], "0.5.21", 0.929, "breakable"),
    ("llama-3.1-8b", ["--disaggregation-mode", "prefill", "--cuda-graph-backend-decode", "full"],
     "0.5.23", 0.907, "breakable"),
    # GLM-5.3-Flash (KDA, MLA, ViT factor 0.95): 0.5.21 turns breakable off, 0.907 · 0.95;
    # 0.5.23 keeps it, 13,440 + 1,536 → 0.896 · 0.95. Given breakable in 0.5.21 the chunked
    # prefill is 4,096: 512 + 6,144 + 128 + 512 + 1,536 = 8,832, floored 10,240 → 0.929 · 0.95.
    ("glm-5.3-flash", [], "0.5.21", 0.86165, "disabled"),
    ("glm-5.3-flash", [], "0.5.23", 0.8512, "breakable"),
    ("glm-5.3-flash", ["--cuda-graph-backend-prefill", "breakable"], "0.5.21", 0.88255,
     "breakable"),
    ("glm-5.3-flash", ["--cuda-graph-backend-prefill", "breakable"], "0.5.23", 0.8512,
     "breakable"),
    # Kimi-Linear (KDA, MLA) opted in: 13,440 + 1,536 → 0.896
    ("kimi-linear-48b-a3b-instruct", ["--cuda-graph-backend-prefill", "breakable"], "0.5.21",
     0.896, "breakable"),
    # DeepSeek-V3, tp 8: 512 + 12,288 + 1,024 + 1,024 + 1,536 = 16,384 → 0.886
    ("deepseek-v3", ["--tp", "8"], "0.5.23", 0.886, "breakable"),
]


@pytest.mark.parametrize("model, flags, release, fraction, backend", SGLANG)
def test_the_fraction_and_backend_are_sglang_s(model, flags, release, fraction, backend):
    plan = make_plan(model, parse_flags(flags).deployment, rules=f"sglang-{release}",
                     gpu="H200", weights_gib=10)
    assert plan.capacity.memory.mem_fraction_static == pytest.approx(fraction, abs=1e-12)
    assert plan.auto_mem_fraction.graphs.prefill.value == backend


def test_tc_piecewise_is_refused_by_0_5_23():
    with pytest.raises(DeploymentError, match="--cuda-graph-backend-prefill tc_piecewise: this "
                       "release removed it"):
        make_plan("llama-3.1-8b", parse_flags(["--cuda-graph-backend-prefill", "tc_piecewise"])
                  .deployment, rules="sglang-0.5.23", gpu="H200")


def test_capture_sizes_follow_generate_prefill_cuda_graph_batch_sizes():
    # 8 + 14 + 8 + 8 + 12 sizes up to 4,096, then one per 512 tokens from 4,608
    assert len(prefill_capture_sizes(4096)) == 50 and prefill_capture_sizes(4096)[-1] == 4096
    assert len(prefill_capture_sizes(8192)) == 58 and len(prefill_capture_sizes(16384)) == 74
    assert prefill_capture_sizes(3) == ()


def test_why_breakable_is_off():
    llama, kimi = load_model("llama-3.1-8b"), load_model("kimi-linear-48b-a3b-instruct")
    glm = load_model("glm-5.3-flash")
    assert cuda_graphs(GRAPHS_0521, llama, Deployment(tp_size=2, dcp_size=2)).prefill_why == \
        "--dcp-size > 1"
    assert cuda_graphs(GRAPHS_0523, kimi, Deployment()).prefill_why == "a KDA model"
    assert cuda_graphs(GRAPHS_0521, glm, Deployment()).prefill_why == "a KDA model"
    assert cuda_graphs(GRAPHS_0523, glm, Deployment()).prefill is GraphBackend.BREAKABLE
    decode = cuda_graphs(GRAPHS_0521, llama, Deployment(disaggregation_mode=DisaggMode.DECODE))
    assert (decode.prefill, decode.prefill_why) == (GraphBackend.DISABLED, "a decode server")
    assert cuda_graphs(GRAPHS_0521, llama, Deployment(), rocm=True).prefill_why == "not CUDA"


def test_mla_reserves_a_flat_prefill_share_and_roles_skip_their_phase():
    mla = cuda_graphs(GRAPHS_0523, load_model("deepseek-v3"), Deployment())
    assert mla.mla and mla.prefill_reserve_mib(16384) == 1536
    assert mla.prefill_reserve_mib(8192, DisaggMode.DECODE) == 0
    assert mla.decode_reserve_mib(512, DisaggMode.PREFILL) == 0
    # B200 (183,359 MiB), tp 8, MLA: 512 + 24,576 + 1,024 + 1,024 + 1,536 = 28,672 → 0.844
    auto = auto_mem_fraction_static(183_359, tp=8, graphs=mla)
    assert (auto.reserved_mib, auto.prefill_graph_mib, auto.fraction) == (28_672, 1536, 0.844)


def test_the_derivation_names_the_prefill_graphs():
    plan = make_plan("llama-3.1-8b", Deployment(pp_size=2), gpu="H200", weights_gib=10)
    assert "prefill graphs disabled (--pp-size > 1): 0 MiB" in plan.auto_mem_fraction.derivation()
