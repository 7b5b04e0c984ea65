"""A verdict needs the whole log, and the engine-config line is the deployment.

Real logs: the quotes in tests/data/logs/ (each file says where it came from), put back in the
order of their timestamps and cut. The engine-config line is written in vLLM's format
(`VllmConfig.__str__`, vllm/config/vllm.py) because the quotes stop at "with config:"; the
values it states are the ones the quote's own `non-default args` line states.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.logs.check import check_log
from kvledger.logs.engine_config import parse_engine_config
from kvledger.logs.lines import LogError
from kvledger.logs.reconcile import Status, Verdict

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
CLUB_652 = LOGS / "vllm-0.24-qwen3.6-35b-a3b-rtx5090-club3090-652.log"
SGLANG = LOGS / "sglang-constructed-glm-5.3-flash-spec5.log"
MODEL = "qwen3.5-35b-a3b"
runner = CliRunner()

# The rest of the quote's engine-init line, in the order and spelling of VllmConfig.__str__
# for 0.24 (nested reprs shortened; kvledger reads only top-level keys).
CONFIG = ("model='~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4', speculative_config=None, "
          "tokenizer='~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4', skip_tokenizer_init=False, "
          "tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=True, "
          "dtype=torch.bfloat16, max_seq_len=131072, download_dir=None, load_format=auto, "
          "tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
          "disable_custom_all_reduce=False, quantization=modelopt, enforce_eager=False, "
          "kv_cache_dtype=fp8, device_config=cuda, "
          "structured_outputs_config=StructuredOutputsConfig(backend='auto', reasoning_parser='qwen3'), "
          "observability_config=ObservabilityConfig(otlp_traces_endpoint=None), seed=0, "
          "served_model_name=qwen3.6-35b-a3b, enable_prefix_caching={pc}, "
          "enable_chunked_prefill=True, pooler_config=None, "
          "compilation_config={{'mode': 3, 'cudagraph_capture_sizes': [1, 2], 'x': (1, 2)}}")


def in_time_order(path: Path) -> list[str]:
    """The quote's log lines sorted by their `MM-DD HH:MM:SS` stamps (comments dropped)."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return sorted(lines, key=lambda line: re.search(r"\d\d-\d\d \d\d:\d\d:\d\d", line).group())


def with_config(lines: list[str], pc: str = "True") -> list[str]:
    return [line.replace("with config:", "with config: " + CONFIG.format(pc=pc)) for line in lines]


def complete_652() -> list[str]:
    """The 652 quote, its config and the two lines the quote left out, in boot order.

    The two added lines are CONSTRUCTED: the block (2,096) is the one the quote's own numbers
    imply (int(300 / 69 × 131,072) = 569,878, see test_check_log); the weight figure is not
    reconciled (a quantized checkpoint), so its value is immaterial.
    """
    args, init, available, tokens, concurrency = with_config(in_time_order(CLUB_652))
    loading = ("(EngineCore pid=107) INFO 07-09 02:57:30 [gpu_model_runner.py:1] Model loading "
               "took 21.10 GiB memory and 80.0 seconds")
    block = ("(EngineCore pid=107) INFO 07-09 02:57:30 [interface.py:1] Setting attention block "
             "size to 2096 tokens to ensure that attention page size is >= mamba page size.")
    return [args, init, loading, block, available, tokens, concurrency]


def test_the_quote_in_boot_order_cut_after_the_memory_line_is_not_called_reconciled():
    # The case: cut right after `Available KV cache memory`, nothing derived is left
    # to differ. It used to exit 0 with "every logged number reconciles".
    lines = in_time_order(CLUB_652)
    assert "Available KV cache memory" in lines[2]
    r = check_log("\n".join(lines[:3]) + "\n", model=MODEL)
    assert [row.status for row in r.rows] == [Status.INPUT] and not r.differs
    assert r.verdict is Verdict.INCOMPLETE and r.exit_code == 1
    assert [m.text for m in r.missing] == [
        "Model loading took X GiB", "Setting attention block size to 2,096 tokens",
        "GPU KV cache size: N tokens", "Maximum concurrency for N tokens per request: Xx",
        "… with config: model=…, max_seq_len=…, enable_prefix_caching=…"]


def test_cli_says_incomplete_and_names_the_missing_lines(tmp_path):
    path = tmp_path / "cut.log"
    path.write_text("\n".join(in_time_order(CLUB_652)[:3]) + "\n")
    r = runner.invoke(app, ["check-log", str(path), "--model", MODEL], terminal_width=200)
    assert r.exit_code == 1, r.output
    assert "every logged number reconciles" not in r.output
    assert "incomplete: 5 line(s)" in r.output
    assert "MISSING" in r.output and "GPU KV cache size: N tokens" in r.output


def test_a_complete_log_reconciles_and_every_cut_of_it_does_not():
    lines = complete_652()
    full = check_log("\n".join(lines) + "\n", model=MODEL)
    assert full.verdict is Verdict.RECONCILES and full.exit_code == 0 and not full.missing
    assert {row.quantity: row.status for row in full.rows}["attention block size (tokens)"] \
        is Status.EQUAL
    answered = []
    for end in range(1, len(lines)):
        try:
            cut = check_log("\n".join(lines[:end]) + "\n", model=MODEL)
        except LogError as exc:
            # before the engine-init line, or before any memory line: an error, exit 2
            assert "names no vLLM version" in str(exc) or "truncated" in str(exc)
            continue
        answered.append(end)
        assert cut.verdict is Verdict.INCOMPLETE, end
        # what is missing is exactly the lines after the cut (each is expected)
        assert len(cut.missing) == len(lines) - end, end
    assert answered == [5, 6]


@pytest.mark.parametrize("drop,named", [
    (2, "Model loading took X GiB"), (3, "Setting attention block size to 2,096 tokens"),
    (5, "GPU KV cache size: N tokens"), (6, "Maximum concurrency for N tokens per request: Xx")])
def test_dropping_any_one_expected_line_names_it(drop, named):
    lines = complete_652()
    lines.pop(drop)
    r = check_log("\n".join(lines) + "\n", model=MODEL)
    assert r.verdict is Verdict.INCOMPLETE and [m.text for m in r.missing] == [named]


def test_the_engine_config_decides_prefix_caching_and_flips_the_verdict():
    # Same log, config says prefix caching off: mamba_cache_mode none, 1 state block per group,
    # cdiv(131072, 2096) + 3 = 66 blocks per request, 300 / 66 = 4.55, int(300/66 × 131072) =
    # 595,781 — not the logged 4.35 / 569,878 (align: 69 blocks). The engine's value wins over
    # the arguments' `enable_prefix_caching: True`, and a note says so.
    lines = complete_652()
    off = [line.replace("enable_prefix_caching=True", "enable_prefix_caching=False")
           for line in lines]
    r = check_log("\n".join(off) + "\n", model=MODEL)
    assert r.verdict is Verdict.DIFFERS
    assert [(d.quantity, d.kvledger) for d in r.differs] == [
        ("GPU KV cache size (tokens)", "595,781"), ("Maximum concurrency", "4.55")]
    assert dict(r.derived)["mamba_cache_mode"] == "none"
    assert any("ran enable_prefix_caching=False where the server arguments asked True" in n
               for n in r.notes)


def test_arguments_silent_on_prefix_caching_take_it_from_the_config():
    # The arguments do not mention prefix caching: before the config was read, vLLM 0.33's
    # hybrid default (on, align) was assumed, so a log of an engine that ran it off, with the
    # right numbers for that (595,781 tokens, 4.55x), was called wrong. Now it reconciles.
    lines = [line.replace("'enable_prefix_caching': True, ", "")
             .replace("enable_prefix_caching=True", "enable_prefix_caching=False")
             .replace("569,878 tokens", "595,781 tokens").replace("4.35x", "4.55x")
             for line in complete_652()]
    assert "enable_prefix_caching" not in lines[0]
    r = check_log("\n".join(lines) + "\n", model=MODEL)
    assert r.verdict is Verdict.RECONCILES, (r.differs, r.missing)
    # Without the config line the release's default decides: v0.24.0 turns prefix caching on
    # for hybrids only when asked (is_prefix_caching_supported is False for them before
    # v0.27.0), so these numbers are its default too (vLLM 0.24.0's own planning on a pretended
    # RTX 5090: 300 blocks, 595,781 tokens); under vllm-0.33's default (on) they differ.
    cut = [re.sub(r"with config: .*", "with config:", line) for line in lines]
    unread = check_log("\n".join(cut) + "\n", model=MODEL)
    assert unread.rules == "vllm-0.24" and not unread.differs
    later = check_log("\n".join(cut) + "\n", model=MODEL, rules="vllm-0.33", gpu="RTX 5090")
    assert [d.quantity for d in later.differs] == [
        "attention block size (tokens)", "GPU KV cache size (tokens)", "Maximum concurrency"]


def test_the_config_states_kv_dtype_length_and_parallelism():
    # kv_cache_dtype=auto (bf16) doubles the attention bytes per token to 2 heads × 256 × 2
    # (K, V) × 2 B = 2,048 B, so the block covering the 2,146,304 B GDN state is
    # 16 × cdiv(2146304, 16 × 2048) = 1,056 tokens, not the logged 2,096: the engine's dtype
    # is used over the arguments' fp8. max_seq_len must agree with the concurrency line.
    lines = complete_652()
    bf16 = [line.replace("kv_cache_dtype=fp8,", "kv_cache_dtype=auto,") for line in lines]
    r = check_log("\n".join(bf16) + "\n", model=MODEL)
    assert [(d.quantity, d.kvledger) for d in r.differs][0] == (
        "attention block size (tokens)", "1,056")
    longer = [line.replace("max_seq_len=131072", "max_seq_len=65536") for line in lines]
    with pytest.raises(LogError, match="logs max_model_len 131,072 but the server arguments "
                                       "say 65,536"):
        check_log("\n".join(longer) + "\n", model=MODEL)
    # the config's pipeline stages are read: 40 layers in 2 stages of 20, so each worker's
    # block is half the one-stage 21,463,040 B and the same 6.01 GiB holds twice the blocks;
    # this log ran one stage, so its token count differs from that
    pipeline = [line.replace("pipeline_parallel_size=1", "pipeline_parallel_size=2")
                for line in lines]
    staged = check_log("\n".join(pipeline) + "\n", model=MODEL)
    assert [(r.quantity, r.kvledger) for r in staged.rows if r.status is Status.INPUT] == [
        ("PP0: Available KV cache memory (GiB)", "600 … 601 blocks"),
        ("PP1: Available KV cache memory (GiB)", "600 … 601 blocks")]
    assert staged.rows[2].reason.startswith("10,731,520 B per block (layers 0..19")
    assert [(d.quantity, d.kvledger) for d in staged.differs] == [
        ("GPU KV cache size (tokens)", "1,139,756 … 1,141,656"),
        ("Maximum concurrency", "8.70 … 8.71")]


def test_parse_engine_config_reads_nested_reprs_and_spec_tokens():
    cfg = parse_engine_config(
        "model='m', speculative_config=SpeculativeConfig(method='mtp', model='m', "
        "num_spec_tokens=3), max_seq_len=8192, tensor_parallel_size=4, kv_cache_dtype=fp8_e4m3, "
        "compilation_config={'a': 'x, y=1', 'b': [1, 2]}, enable_prefix_caching=True")
    assert cfg.settings == {"max_model_len": 8192, "tensor_parallel_size": 4,
                            "kv_cache_dtype": "fp8_e4m3", "enable_prefix_caching": True,
                            "num_speculative_tokens": 3}
    assert cfg.model == "m" and cfg.cut == ()
    # a quote cut inside a nested value keeps what came before it
    cut = parse_engine_config("model='m', max_seq_len=8192, compilation_config={'a': [1,")
    assert cut.settings == {"max_model_len": 8192}
    assert cut.cut == ("tensor_parallel_size", "kv_cache_dtype", "enable_prefix_caching")


def test_a_partly_cut_config_is_named():
    lines = complete_652()
    lines[1] = lines[1].split(" kv_cache_dtype=")[0]
    r = check_log("\n".join(lines) + "\n", model=MODEL)
    assert r.verdict is Verdict.INCOMPLETE
    assert [m.why for m in r.missing] == [
        "line 2 is cut before kv_cache_dtype=, enable_prefix_caching="]


@pytest.mark.parametrize("needle", ["Mamba Cache is allocated", "max_total_num_tokens=",
                                    "server_args="])
def test_sglang_log_missing_a_line_is_incomplete(needle):
    text = SGLANG.read_text()
    assert check_log(text).verdict is Verdict.RECONCILES
    cut = "\n".join(line for line in text.splitlines() if needle not in line) + "\n"
    r = check_log(cut, model="glm-5.3-flash")
    assert r.verdict is Verdict.INCOMPLETE and r.exit_code == 1
    assert len(r.missing) == 1 and needle.split("=")[0].split(" is")[0] in r.missing[0].text


def test_a_padding_warning_kvledger_does_not_expect_is_a_difference_not_a_crash():
    # 10 attention + 30 GDN layers fill groups of 10 exactly: vLLM pads nothing, so a logged
    # padding warning (e.g. an MTP draft layer joining the attention bucket) differs.
    lines = complete_652()
    lines.insert(4, "(EngineCore pid=107) WARNING 07-09 02:58:11 [kv_cache_utils.py:1] Add 3 "
                    "padding layers, may waste at most 10.00% KV cache memory")
    r = check_log("\n".join(lines) + "\n", model=MODEL)
    assert [(d.quantity, d.logged, d.kvledger) for d in r.differs] == [
        ("padding layers, % wasted", "3, 10.00", "none")]


def test_an_internal_kv_dtype_in_the_config_keeps_the_arguments_value():
    lines = [line.replace("kv_cache_dtype=fp8,", "kv_cache_dtype=fp8_ds_mla,")
             for line in complete_652()]
    r = check_log("\n".join(lines) + "\n", model=MODEL)
    assert r.verdict is Verdict.RECONCILES  # the arguments' fp8 stands
    assert any("kv_cache_dtype=fp8_ds_mla is not a --kv-cache-dtype choice" in n for n in r.notes)
