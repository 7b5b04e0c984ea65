"""check-log on pipeline stages and prefill/decode roles: rank tags, each stage's own pools,
the decode request pool's state slots, vLLM's per-stage MIN of blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvledger.logs.check import check_log
from kvledger.logs.lines import LogError, scan_log
from kvledger.logs.reconcile import Status, Verdict
from kvledger.logs.tags import RankTag, stage_of, tag_of

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
SGLANG_PP = LOGS / "sglang-constructed-glm-5.3-flash-pp4-tp2.log"
SGLANG_DECODE = LOGS / "sglang-constructed-qwen3-next-80b-decode-tp4.log"
VLLM_PP = LOGS / "vllm-0.33-constructed-llama-3.1-8b-tp2-pp3.log"


def _rows(r, prefix: str) -> list[tuple[str, str, str]]:
    return [(row.quantity, row.logged, row.kvledger) for row in r.rows
            if row.quantity.startswith(prefix)]


@pytest.mark.parametrize(("line", "tag"), [
    ("[2026-01-01 00:00:10 PP3 TP1] KV Cache is allocated.", RankTag(pp=3, dp=None, tp=1)),
    ("[2026-01-01 00:00:10.123 DP2 PP0 ATTN_CP1 MOE_DP1 TP5 EP5] x", RankTag(pp=0, dp=2, tp=5)),
    ("[2026-01-01 00:00:10 DP0 TP0] x", RankTag(pp=None, dp=0, tp=0)),
    ("(Worker_DP1_PP2_PCP0_TP3_DCP1_EP7 pid=12) INFO x", RankTag(pp=2, dp=1, tp=3)),
    ("(EngineCore_DP0 pid=7) (Worker_PP1 pid=9) INFO x", RankTag(pp=1, dp=None, tp=None)),
    ("(Worker pid=9) INFO x", RankTag(pp=None, dp=None, tp=None)),
])
def test_rank_tags_as_the_engines_print_them(line, tag):
    assert tag_of(line) == tag


def test_lines_without_a_rank_prefix_have_no_tag():
    assert tag_of("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m')") is None
    assert tag_of("(EngineCore_DP0 pid=7) INFO 12-01 [core.py:1] Initializing") is None
    assert stage_of("INFO 07-09 [gpu_worker.py:508] Available KV cache memory: 6.01 GiB") is None


def test_scan_keeps_each_stage_s_own_values():
    scan = scan_log(SGLANG_PP.read_text())
    assert sorted(scan.stages) == [0, 1, 2, 3]
    assert [scan.stage(r).get("sglang_kv").groups[1] for r in range(4)] == [
        "16.81", "25.21", "25.21", "25.21"]
    # the memory the pipeline is sized from is the smallest rank's, over every stage
    assert scan.get("sglang_load_weight").groups[:2] == ("60.00", "20.00")
    # one stage logging two different pools is still two servers
    text = SGLANG_PP.read_text().replace(
        "[2026-01-01 00:01:11 PP1 TP1] KV Cache is allocated. dtype: torch.float8_e4m3fn, "
        "#tokens: 16084736, KV size: 25.21 GB",
        "[2026-01-01 00:01:11 PP1 TP1] KV Cache is allocated. dtype: torch.float8_e4m3fn, "
        "#tokens: 16084000, KV size: 25.21 GB")
    with pytest.raises(LogError, match="two servers in one paste"):
        scan_log(text)


def test_sglang_pipeline_log_reconciles_stage_by_stage():
    r = check_log(SGLANG_PP.read_text(), rules="sglang-0.5.23")
    assert r.verdict is Verdict.RECONCILES
    # each stage's pool bytes at the shared T: 2 full layers on stage 0, 3 on the others
    assert [row[1:] for row in _rows(r, "PP") if "KV size" in row[0]] == [
        ("16.81", "16.81"), ("25.21", "25.21"), ("25.21", "25.21"), ("25.21", "25.21")]
    # the state pool: K charged at the largest stage's share, allocated with each stage's own
    # 9 / 8 / 8 / 9 linear layers
    assert [row[1] for row in _rows(r, "PP") if "ssm_state" in row[0]] == [
        "21.92", "19.48", "19.48", "21.92"]
    assert dict(r.derived)["PP1: full + linear layers, token bytes"] == "3 + 8, 1,683"
    assert dict(r.derived)["PP0: full + linear layers, token bytes"] == "2 + 9, 1,122"
    # T is not monotonic over the logged interval (one more state slot costs tokens): the
    # count lies between the interval's ends, below both
    assert dict((q, k) for q, _, k in _rows(r, "max_total")) == {
        "max_total_num_tokens": "16,084,736 … 16,094,720"}


def test_a_stage_logging_another_stage_s_pool_differs():
    text = SGLANG_PP.read_text().replace("PP1 TP0] KV Cache is allocated. dtype: "
                                         "torch.float8_e4m3fn, #tokens: 16084736, KV size: 25.21",
                                         "PP1 TP0] KV Cache is allocated. dtype: "
                                         "torch.float8_e4m3fn, #tokens: 16084736, KV size: 16.81")
    text = text.replace("PP1 TP1] KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: "
                        "16084736, KV size: 25.21", "PP1 TP1] KV Cache is allocated. dtype: "
                        "torch.float8_e4m3fn, #tokens: 16084736, KV size: 16.81")
    r = check_log(text, rules="sglang-0.5.23")
    assert [(d.quantity, d.logged, d.kvledger) for d in r.differs] == [
        ("PP1: KV size (GB)", "16.81", "25.21")]


def test_sglang_decode_role_logs_its_request_pool_s_state_slots():
    r = check_log(SGLANG_DECODE.read_text(), rules="sglang-0.5.23")
    assert r.verdict is Verdict.RECONCILES
    slots = [row for row in r.rows if row.quantity.startswith("max_mamba_cache_size")]
    assert [(s.quantity, s.logged, s.kvledger) for s in slots] == [
        ("max_mamba_cache_size (decode request pool's slots)", "48", "48")]
    derived = dict(r.derived)
    assert derived["decode role: state slots charged / allocated"] == "17 / 49 (0.58 GiB unbudgeted)"
    assert derived["decode role: T had the budget charged the pools as built"] == "6,224,781"
    # the budget's K alone (16) is not what a decode server's MambaPool is built with
    charged = SGLANG_DECODE.read_text().replace("max_mamba_cache_size: 48", "max_mamba_cache_size: 16")
    assert [d.quantity for d in check_log(charged, rules="sglang-0.5.23").differs] == [
        "max_mamba_cache_size (decode request pool's slots)",
        "conv_state size (GB) at 16 slots", "ssm_state size (GB) at 16 slots"]


def test_sglang_aggregated_server_logs_the_budget_s_slots():
    # the same log as an aggregated server: the radix cache stays on, the hybrid state ratio
    # sizes K, and its MambaPool holds K slots, not the decode pool's 48
    text = SGLANG_DECODE.read_text().replace(", disaggregation_mode='decode'", "")
    r = check_log(text, rules="sglang-0.5.23")
    row = next(row for row in r.rows if row.quantity.startswith("max_mamba_cache_size"))
    assert (row.quantity, row.kvledger, row.status) == (
        "max_mamba_cache_size (state slots)", "959 … 960", Status.DIFFERS)


def test_vllm_pipeline_log_takes_the_min_of_each_stage_s_blocks():
    r = check_log(VLLM_PP.read_text(), model="llama-3.1-8b")
    assert r.verdict is Verdict.RECONCILES
    assert [(q, k) for q, _, k in _rows(r, "PP")] == [
        ("PP0: Available KV cache memory (GiB)", "53,665 … 53,694 blocks"),
        ("PP1: Available KV cache memory (GiB)", "54,350 … 54,379 blocks"),
        ("PP2: Available KV cache memory (GiB)", "58,638 … 58,671 blocks")]
    assert "stage 0 holds the fewest of its own" in " ".join(r.notes)
    assert dict(r.derived)["bytes per block"] == "PP0 360,448 / PP1 360,448 / PP2 327,680"
    # stage 2 with less memory: its own 49,135 … 49,168 blocks (15.00 GiB // 327,680 B) bind,
    # 16 tokens each, and the logged count differs
    text = VLLM_PP.read_text().replace("Available KV cache memory: 17.90", "Available KV "
                                       "cache memory: 15.00")
    less = check_log(text, model="llama-3.1-8b")
    assert [(d.quantity, d.kvledger) for d in less.differs][0] == (
        "GPU KV cache size (tokens)", "786,160 … 786,688")
    assert "stage 2 holds the fewest of its own" in " ".join(less.notes)


def test_vllm_pipeline_smallest_memory_alone_would_pick_the_wrong_stage():
    # every stage given stage 2's 17.90 GiB (the old per-rank minimum) holds fewer blocks
    # than the log's count: the stages' own memory is what reconciles
    lines = [line for line in VLLM_PP.read_text().splitlines()
             if "Available KV cache memory" not in line or "Worker_PP2" in line]
    r = check_log("\n".join(lines) + "\n", model="llama-3.1-8b")
    assert [d.quantity for d in r.differs] == ["GPU KV cache size (tokens)",
                                               "Maximum concurrency"]


def test_decode_request_pool_warning_is_reconciled_number_by_number():
    r = check_log(SGLANG_DECODE.read_text(), rules="sglang-0.5.23")
    assert [(q, k) for q, _, k in _rows(r, "decode pool:")] == [
        ("decode pool: mamba_size (the budget's K)", "16"),
        ("decode pool: max_slots_needed", "48"),
        ("decode pool: reqs (N + extra rows)", "48"),
        ("decode pool: slots per request", "1"),
        ("decode pool: effective_mamba_size", "48")]
    # a decode server that kept the radix cache and extra_buffer's ping-pong slots would say
    # 3 slots a request; this plan has the radix cache forced off
    text = SGLANG_DECODE.read_text().replace("(48 = 48 reqs * 1 slots/req), raising "
                                             "effective_mamba_size to 48",
                                             "(144 = 48 reqs * 3 slots/req), raising "
                                             "effective_mamba_size to 144")
    assert [d.quantity for d in check_log(text, rules="sglang-0.5.23").differs] == [
        "decode pool: max_slots_needed", "decode pool: slots per request",
        "decode pool: effective_mamba_size"]


def test_stage_tags_without_a_pipeline_deployment_name_the_flag():
    text = SGLANG_PP.read_text().replace(", pp_size=4", "")
    with pytest.raises(LogError, match=r"name 4 pipeline stages \(PP0, PP1, PP2, PP3\) but the "
                                       r"deployment it states has one; pass -- --pp-size 4"):
        check_log(text, rules="sglang-0.5.23")
    # the flag after -- is the fix
    assert check_log(text, rules="sglang-0.5.23", flags=("--pp-size", "4")).verdict is (
        Verdict.RECONCILES)
    vtext = VLLM_PP.read_text().replace("pipeline_parallel_size=3", "pipeline_parallel_size=1")
    with pytest.raises(LogError, match="pass -- --pipeline-parallel-size 3"):
        check_log(vtext, model="llama-3.1-8b")


def test_a_prefill_and_a_decode_server_in_one_paste_are_named_as_such():
    decode = SGLANG_DECODE.read_text()
    prefill = decode.replace("disaggregation_mode='decode'", "disaggregation_mode='prefill'")
    first = next(i for i, line in enumerate(decode.splitlines(), 1) if "server_args=" in line)
    second = len(decode.splitlines()) + first  # the prefill server's, after the decode's lines
    with pytest.raises(LogError, match=rf"line {first} starts a decode server and line {second} "
                                       r"a prefill one: a prefill/decode pair's logs in one "
                                       rf"paste; .*split the paste at line {second}"):
        check_log(decode + prefill, rules="sglang-0.5.23")


DCP_CONFIG = ("model='deepseek-ai/DeepSeek-V3.2', max_seq_len=131072, tensor_parallel_size=8, "
              "pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=8, "
              "kv_cache_dtype=auto, enable_prefix_caching=True")


def _dcp_log(config: str) -> str:
    # vLLM 0.33's lines for DeepSeek-V3.2 at tp 8 × dcp 8 on B200 (worker names carry _DCP);
    # 12,852 blocks of 64 tokens, a 131,072-token request sharded over 8 ranks takes
    # cdiv(131,072, 64 × 8) = 256 of them: 50.20 requests, int(50.203125 × 131,072) tokens
    return (f"(EngineCore pid=1) INFO [core.py:1] Initializing a V1 LLM engine (v0.33.0) with "
            f"config: {config}\n"
            "(EngineCore pid=1) (Worker_TP0_DCP0 pid=2) INFO [gpu_model_runner.py:1] Model "
            "loading took 80.00 GiB memory\n"
            "(EngineCore pid=1) (Worker_TP0_DCP0 pid=2) INFO [gpu_worker.py:1] Available KV "
            "cache memory: 60.00 GiB\n"
            "(EngineCore pid=1) INFO [kv_cache_utils.py:1] GPU KV cache size: 6,580,224 tokens, "
            "Maximum concurrency for 131,072 tokens per request: 50.20x\n")


def test_vllm_dcp_log_reconciles_with_the_sharded_block_table():
    r = check_log(_dcp_log(DCP_CONFIG), model="deepseek-v3.2", gpu="B200")
    assert r.verdict is Verdict.RECONCILES
    assert dict(r.derived)["blocks per max_model_len request"] == "256"
    assert dict(r.derived)["num_gpu_blocks"] == "12,851 … 12,853"  # 60.00 GiB ± 0.005
    # read without DCP, a request takes 8 × the blocks, and both counts differ
    plain = check_log(_dcp_log(DCP_CONFIG.replace("decode_context_parallel_size=8",
                                                  "decode_context_parallel_size=1")),
                      model="deepseek-v3.2", gpu="B200")
    assert dict(plain.derived)["blocks per max_model_len request"] == "2,048"
    assert [d.quantity for d in plain.differs] == ["GPU KV cache size (tokens)",
                                                   "Maximum concurrency"]
