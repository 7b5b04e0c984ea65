"""vLLM command lines (EngineArgs spellings, vllm/engine/arg_utils.py) → VllmDeployment."""

from __future__ import annotations

import pytest

from kvledger.core.errors import DeploymentError
from kvledger.vllm.flags import is_vllm_command, parse_vllm_command
from kvledger.vllm.rules import MambaCacheMode
from kvledger.vllm.serve_line import vllm_command


def test_vllm_serve_with_every_memory_flag():
    p = parse_vllm_command(
        "CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct "
        "--tensor-parallel-size 2 --gpu-memory-utilization 0.85 --max-model-len 65536 "
        "--max-num-seqs 128 --kv-cache-dtype fp8 --mamba-ssm-cache-dtype float32 "
        "--block-size 32 --enable-prefix-caching --mamba-cache-mode align "
        "--speculative-config '{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}' "
        "--data-parallel-size 2 --port 8000 --served-model-name qn 2>&1 | tee log")
    d = p.deployment
    assert p.model_ref == "Qwen/Qwen3-Next-80B-A3B-Instruct"
    assert (d.tensor_parallel_size, d.gpu_memory_utilization, d.max_model_len, d.max_num_seqs) == (
        2, 0.85, 65536, 128)
    assert (d.kv_cache_dtype, d.mamba_ssm_cache_dtype, d.block_size) == ("fp8", "float32", 32)
    assert d.enable_prefix_caching and d.mamba_cache_mode is MambaCacheMode.ALIGN
    assert d.num_speculative_tokens == 2 and d.data_parallel_size == 2
    assert p.ignored == ("--port", "--served-model-name")


def test_api_server_module_with_short_and_equals_spellings():
    p = parse_vllm_command(["python3", "-m", "vllm.entrypoints.openai.api_server", "--model",
                            "meta-llama/Llama-3.1-8B", "-tp=4", "--kv-cache-memory-bytes=20G",
                            "--no-enable-prefix-caching", "--enforce-eager"])
    d = p.deployment
    assert p.model_ref == "meta-llama/Llama-3.1-8B" and d.tensor_parallel_size == 4
    assert d.kv_cache_memory_bytes == 20 * 2**30
    assert d.enable_prefix_caching is False and d.enforce_eager


def test_bare_flags_and_detection():
    assert parse_vllm_command(["-tp", "8"]).deployment.tensor_parallel_size == 8
    assert is_vllm_command("vllm serve x -tp 2")
    assert is_vllm_command(["python", "-m", "vllm.entrypoints.openai.api_server"])
    assert not is_vllm_command("python -m sglang.launch_server --tp 2")


@pytest.mark.parametrize("cmd,message", [
    ("vllm serve m --cpu-offload-gb 4", "--cpu-offload-gb 4: not modelled"),
    ("vllm serve m --gpu-memory-utilization 1.2", "--gpu-memory-utilization 1.2: expected"),
    ("vllm serve m --kv-cache-dtype fp4", "--kv-cache-dtype fp4: expected one of"),
    ("vllm serve m --mamba-cache-mode all", "--mamba-cache-mode 'all'"),
    ("vllm serve m -tp 2 --tensor-parallel-size 4", "given twice with different values"),
    ("vllm serve m --max-model-len", "--max-model-len: expected a value"),
    ("vllm serve m --speculative-config {bad", "--speculative-config '{bad': not JSON"),
    ("vllm serve m --model other", "--model 'other' contradicts"),
    ("python -m sglang.launch_server --tp 2", "not a vLLM launch"),
    ("vllm serve m stray", "'stray': a vLLM command takes its model"),
    ("vllm serve m --enforce-eager=1", "--enforce-eager: a switch takes no value"),
])
def test_bad_flags_name_the_flag(cmd, message):
    with pytest.raises(DeploymentError, match=message.replace("(", r"\(").replace("{", r"\{")):
        parse_vllm_command(cmd)


def test_scale_out_flags_and_their_short_spellings():
    # EngineArgs.add_cli_args (vllm/engine/arg_utils.py): -pp, -dcp, -pcp
    p = parse_vllm_command("vllm serve m -tp 8 -pp 2 -dcp 4 -pcp 1 --port 8000")
    dep = p.deployment
    assert (dep.tensor_parallel_size, dep.pipeline_parallel_size,
            dep.decode_context_parallel_size, dep.prefill_context_parallel_size) == (8, 2, 4, 1)
    assert dep.gpus_per_engine == 16
    # SGLang's --pp-size and --dcp-size mean the same: read as vLLM's flags
    assert parse_vllm_command("--pp-size 3 --dcp-size 2").deployment.pipeline_parallel_size == 3
    # and the serve line writes them back in vLLM's spelling
    line = vllm_command("m", dep)
    assert "--pipeline-parallel-size 2 --decode-context-parallel-size 4" in line
    assert parse_vllm_command(line).deployment == dep
