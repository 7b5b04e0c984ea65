"""`kvledger plan`, `explain`, `models`, `gpus` through the real CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def plan_json(*args: str) -> dict:
    result = invoke("plan", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_default_plan_shows_the_article_ledgers():
    # The article's deployment: scaled fp8, fp32 state, extra_buffer + overlap, attn_tp 1,
    # 64 requests per worker.
    doc = plan_json("--max-running-requests", "64")
    assert doc["schema"] == "kvledger.plan/2"
    ledgers = doc["ledgers"]
    assert ledgers["per_token"]["total_bytes"] == 7_260
    assert ledgers["per_state_slot"]["total_bytes"] == 147_619_840
    assert ledgers["per_request"]["total_bytes"] == 738_099_200
    tail = ledgers["side_buffers"]["rows"][0]
    assert tail["component"].startswith("compress tail") and tail["total_bytes"] == 1_486_848
    cap = doc["capacity"]
    assert (cap["state_slots"], cap["max_running_requests"], cap["binding"]) == (
        343, 64, "max_running_requests")


def test_table_output_names_the_binding_constraint():
    result = invoke("plan")
    assert result.exit_code == 0, result.output
    assert "7,260" in result.output and "147,619,840" in result.output
    assert "binding constraint: state slots" in result.output


def test_pasted_launch_command():
    doc = plan_json("--", "python", "-m", "sglang.launch_server", "--model-path",
                    "zai-org/GLM-5.3-Flash", "--tp", "8", "--dp", "8", "--enable-dp-attention",
                    "--kv-cache-dtype", "fp8_e4m3", "--max-running-requests", "64",
                    "--port", "30000", "--trust-remote-code")
    dep = doc["deployment"]
    assert (dep["tp_size"], dep["dp_size"], dep["attn_tp_size"]) == (8, 8, 1)
    assert doc["model"]["name"] == "zai-org/GLM-5.3-Flash"
    assert "--port" in " ".join(doc["ignored_flags"])
    # SPEC §4: DP8 with 64 global requests → 8 per rank → 10 tail rows ≈ 0.215 MiB
    assert doc["capacity"]["max_running_requests"] == 8
    assert doc["ledgers"]["side_buffers"]["rows"][0]["total_bytes"] == 225_280


def test_workload_check_reports_the_first_overflow():
    doc = plan_json("--requests", "64", "--context", "131072")
    work = doc["workload"]
    assert not work["fits"] and work["first_overflow"] == "tokens"
    token = next(r for r in work["rows"] if r["ledger"] == "tokens")
    assert token["label"] == "token KV"
    assert token["need_bytes"] == 64 * 131_072 * 7_260


def test_gpu_plan_resolves_auto_dtype_by_architecture():
    hopper = plan_json("--gpu", "H200", "--tp", "8")
    blackwell = plan_json("--gpu", "B200", "--tp", "8")
    assert hopper["deployment"]["kv_cache_dtype"] == "bf16"
    assert blackwell["deployment"]["kv_cache_dtype"] == "fp8_e4m3"
    assert hopper["ledgers"]["per_token"]["total_bytes"] == 12_716


def test_rules_flag_selects_later_release():
    doc = plan_json("--rules", "sglang-0.5.23")
    assert doc["ledgers"]["per_token"]["total_bytes"] == 6_171
    assert doc["deployment"]["page_tokens"] == 256


def test_explain_prints_derivations():
    result = invoke("explain")
    assert result.exit_code == 0, result.output
    assert "528 B × 11 layers = 5,808 B/token" in result.output
    assert "conv = 3 × 24,576 × 2 B = 147,456 B" in result.output
    assert "K = floor(" in result.output


def test_explain_derives_caps_from_their_flags():
    # K comes from the flag, not the ratio formula; T is then capped and floored to the
    # 64-token page: min(12.7M, 100,000) // 64 × 64 = 99,968.
    result = invoke("explain", "--max-mamba-cache-size", "100", "--max-total-tokens", "100000")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "K = --max-mamba-cache-size 100 // attn_dp 1 = 100 slots" in text
    assert "min(T, --max-total-tokens 100,000) floored to 64 = 99,968 tokens" in text
    assert "K = floor(" not in text


def test_models_and_gpus_list():
    models = json.loads(invoke("models", "--json").stdout)["models"]
    assert {"name": "glm-5.3-flash", "family": "glm5_next"}.items() <= next(
        m for m in models if m["name"] == "glm-5.3-flash").items()
    gpus = json.loads(invoke("gpus", "--json").stdout)["gpus"]
    assert {g["name"] for g in gpus} >= {"H100", "H200", "B200", "MI300X"}


@pytest.mark.parametrize(("args", "message"), [
    (("--tp", "3"), "attn_tp"),
    (("--model", "no-such-model"), "not a file"),
    (("--available-gib", "-5"), "--available-gib"),
    (("--available-gib", "0.1"), "state slot"),
    (("--gpu", "Z80"), "Z80"),
    (("--rules", "sglang-0.1"), "--rules"),
    (("--mem-fraction-static", "1.5"), "--mem-fraction-static"),
    (("--mamba-scheduler-strategy", "no_buffer"), "no_buffer"),
    # Zero and negative workloads were once read as "not given" (1 request, full context).
    (("--requests", "0"), "--requests 0: expected a positive integer"),
    (("--context", "-1"), "--context -1: expected a positive integer"),
    # NaN and infinity once escaped as float-to-int conversion errors or a traceback.
    (("--available-gib", "nan"), "--available-gib nan"),
    (("--available-gib", "inf"), "--available-gib inf"),
    (("--gpu", "H200", "--weights-gib", "inf"), "--weights-gib inf"),
    (("--weights-gib", "-5"), "--weights-gib -5"),  # was accepted with --available-gib
    (("--max-total-tokens", "1"), "--max-total-tokens 1: less than one 64-token page"),
    (("--enable-hierarchical-cache", "--hicache-ratio", "1e308"), "--hicache-ratio 1e+308"),
])
def test_bad_input_is_one_clear_line(args, message):
    result = invoke("plan", *args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_malformed_config_file_names_the_file(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "num_hidden_layers": 2,')
    result = invoke("plan", "--model", str(bad))
    assert result.exit_code == 2 and "not valid JSON" in result.output


SPEC_FLAGS = ("--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
              "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4")


def test_speculative_qwen3_next_changes_k_and_reserves_scratch():
    # The case (H200, tp 4, --mem-fraction-static 0.8): without speculation
    # K = floor(rest·0.9/1.9 / S) − 1 (1,957 now that the CUDA context is not free memory; the
    # issue saw 1,979 before); with NEXTN (4 draft tokens, SGLang's 48 requests) _handle_max_mamba_cache's joint solve
    # gives K = floor((B − S·5) / (S·1.8)) and reserves S·(min(48, K // 5) + 1)·4.
    base = ("--model", "qwen3-next-80b-a3b-instruct", "--gpu", "H200", "--tp", "4",
            "--mem-fraction-static", "0.8")
    plain = plan_json(*base)["capacity"]
    doc = plan_json(*base, *SPEC_FLAGS)
    cap = doc["capacity"]
    slot = cap["slot_bytes"]
    budget = plain["rest_bytes"] * 0.9 / 1.9
    assert plain["state_slots"] == int(budget // slot) - 1 == 1_957
    assert cap["state_slots"] < plain["state_slots"]
    assert cap["state_slots"] == int((budget - 5 * slot) // (1.8 * slot))
    assert cap["verify_requests"] == 48 and cap["verify_bytes"] == slot * 49 * 4
    scratch = doc["ledgers"]["verify_scratch"]
    assert scratch["total_bytes"] == cap["verify_bytes"]
    assert scratch["rows"][0]["component"] == "intermediate SSM state cache"
    assert cap["state_source"] == "memory ratio"


def test_explain_shows_the_joint_solve_and_the_scratch():
    result = invoke("explain", "--available-gib", "60", *SPEC_FLAGS)
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "K = floor((B − 147,619,840 × (1 + 4)) / (147,619,840 × (1 + 4/5))) = 111 slots" in text
    assert "verify scratch = 147,619,840 × (n 22 + 1) × 4 draft tokens = 13,581,025,280 B" in text
    assert "rest' = 64,319,651,840 − 13,581,025,280 − 112 × 147,619,840 = 34,205,204,480 B" in text


def test_radix_off_explain_and_totals_with_dp_attention():
    args = ("--available-gib", "60", "--tp", "8", "--dp", "8", "--enable-dp-attention",
            "--disable-radix-cache", "--max-running-requests", "16")
    doc = plan_json(*args)
    cap, tot = doc["capacity"], doc["totals"]
    assert (cap["state_slots"], cap["max_running_requests"]) == (2, 2)
    assert cap["state_source"] == "--max-running-requests (radix cache off)"
    assert (tot["ranks"], tot["workers"], tot["running_requests"]) == (8, 8, 16)
    assert tot["tokens"] == cap["max_total_tokens"] * 8
    assert tot["state_pool_bytes"] == 3 * 147_619_840 * 8
    text = " ".join(invoke("explain", *args).stdout.split())
    assert "K = --max-running-requests 16 // attn_dp 8 = 2 slots (radix cache off)" in text
    assert "N × 8 = 16 requests" in text


def test_table_shows_verify_scratch_weights_and_totals():
    result = invoke("plan", "--model", "deepseek-v3.2", "--gpu", "H200", "--tp", "8", "--dp",
                    "8", "--enable-dp-attention", *SPEC_FLAGS)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Weights per rank, estimated" in text
    assert "MTP draft" in text and "201,064,448" in text  # one MTP layer's MLA + indexer, attn_tp 1
    assert "Deployment — 8 GPUs, 8 attention-DP workers" in text
    hybrid = invoke("plan", "--available-gib", "60", *SPEC_FLAGS)
    assert "Verify scratch per rank (speculative decoding)" in hybrid.stdout
    # 34 KDA layers × (22 + 1) rows × 4 draft tokens × 4,194,304 B fp32 temporal state
    assert "intermediate SSM" in hybrid.stdout and "13,119,782,912" in hybrid.stdout


def test_plan_tables_show_the_role_and_the_stages():
    # kvledger.sglang.rolepools / stages; numbers in tests/sglang/test_roles.py, test_stages.py
    decode = invoke("plan", "--kv-cache-dtype", "fp8_e4m3", "--disaggregation-mode", "decode",
                    "--max-running-requests", "32")
    assert decode.exit_code == 0, decode.output
    assert "; decode role" in decode.stdout and "Decode role pools per rank" in decode.stdout
    assert "9,447,669,760" in decode.stdout
    staged = invoke("plan", "--kv-cache-dtype", "fp8_e4m3", "--pp-size", "4")
    assert staged.exit_code == 0, staged.output
    assert "PP1 ← binds" in staged.stdout and "per-rank tables are stage PP1" in staged.stdout
    lines = json.loads(invoke("explain", "--json", "--kv-cache-dtype", "fp8_e4m3",
                              "--pp-size", "4").stdout)["lines"]
    assert "T = min over stages = 28,520,512 (binding PP1)" in lines


def test_simulate_says_why_a_decode_server_has_nothing_to_replay():
    # handle_pd_disaggregation forces the radix cache off on a decode server
    result = invoke("simulate", "--workload", "chat", "--num-requests", "5",
                    "--disaggregation-mode", "decode")
    assert result.exit_code == 2
    assert "--disaggregation-mode decode turns the radix cache off" in result.output
