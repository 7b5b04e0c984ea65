"""Every hostile input of issue 13, through the real CLI: a clear error (exit 2) naming the
flag, file, line or field and the range expected — never a traceback, a hang or a silently
wrong number. One test per listed case; the fuzz suite (tests/fuzz) covers the space around."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.model.config import CONFIG_DIR

runner = CliRunner()


def _error(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"traceback: {result.exception!r}")
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize(("args", "message"), [
    (("--available-gib", "1e308"), "--available-gib 1e+308: expected a finite number in (0, "
                                   "1,073,741,824]"),
    (("--weights-gib", "1e308"), "--weights-gib 1e+308: expected a finite number in [0, "
                                 "1,073,741,824]"),
    (("--max-mamba-cache-size", "9" * 400), "--max-mamba-cache-size of 400 digits: expected "
                                            "at most 1,099,511,627,776"),
    (("--model", ""), "--model '': expected an embedded name"),
    (("--enable-hierarchical-cache", "--hicache-ratio", "1e300"),
     "--hicache-ratio 1e+300: expected at most 10,000"),
    (("--available-gib", "nan"), "--available-gib nan: expected a finite number"),
    (("--context", "9" * 30), "--context of 30 digits: expected a positive integer (at most "
                              "1,099,511,627,776)"),
])
def test_plan_flags(args, message):
    assert message in _error("plan", *args)


def _config(tmp_path, name: str, **changes) -> str:
    data = json.loads((CONFIG_DIR / "qwen3-next-80b-a3b-instruct.json").read_text())
    data.update(changes)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_a_config_without_a_full_attention_layer(tmp_path):
    # Qwen3-Next's pattern puts full attention every 4th layer: 3 layers have none (was a
    # ZeroDivisionError in capacity.py).
    path = _config(tmp_path, "three.json", num_hidden_layers=3)
    assert f"{path}: no full-attention layer among 3 layers" in _error("plan", "--model", path)


@pytest.mark.parametrize("model", ["qwen3-next-80b-a3b-instruct.json", "glm-5.3-flash.json",
                                   "kimi-linear-48b-a3b-instruct.json", "deepseek-v3.json"])
def test_a_config_with_1e30_layers_is_refused_before_any_work(tmp_path, model):
    data = json.loads((CONFIG_DIR / model).read_text())
    section = data.get("text_config", data)
    section["num_hidden_layers"] = 10**30  # was minutes of work, then a MemoryError
    path = tmp_path / model
    path.write_text(json.dumps(data))
    assert "field" in (msg := _error("plan", "--model", str(path)))
    assert "num_hidden_layers' is of 31 digits (expected an integer <= 4096)" in msg


def test_a_config_of_100000_nested_brackets(tmp_path):
    path = tmp_path / "nested.json"
    path.write_text("[" * 100_000)  # was a RecursionError
    assert f"{path}: JSON nested deeper than 64 levels" in _error("plan", "--model", str(path))


def test_a_config_that_is_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"model_type": "caf\xe9"}')
    assert f"{path}: not UTF-8 text (byte 19: invalid continuation byte)" in _error("plan", "--model", str(path))


def _trace(tmp_path, stamp: str) -> str:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 600, "output_length": 2, '
                    '"hash_ids": [1, 2]}\n'
                    f'{{"timestamp": {stamp}, "input_length": 100, "output_length": 2, '
                    '"hash_ids": [1]}\n')
    return str(path)


@pytest.mark.parametrize(("stamp", "message"), [
    ("NaN", "not valid JSON (NaN is not a number JSON allows)"),  # was: never ends
    ("Infinity", "not valid JSON (Infinity is not a number JSON allows)"),  # OverflowError
    ("1" + "0" * 400, "field 'timestamp' must be a non-negative number of ms (finite, at most "
                      "1e+13), got of 401 digits"),  # was an OverflowError in trace.py
    ("1e400", "field 'timestamp' must be a non-negative number of ms (finite, at most 1e+13), "
              "got inf"),  # was exit 0 with "simulated_ms": inf
])
def test_trace_timestamps(tmp_path, stamp, message):
    msg = _error("simulate", "--trace", _trace(tmp_path, stamp), "--no-progress", "--json")
    assert f"trace.jsonl line 2: {message}" in msg


def test_a_trillion_generated_requests_are_refused_before_generation():
    msg = _error("simulate", "--workload", "chat", "--num-requests", "1000000000000",
                 "--no-progress")
    assert "--num-requests 1000000000000: expected an integer in [1, 1,000,000]" in msg


def test_pools_full_on_cpu_is_checked_against_the_machine(monkeypatch):
    monkeypatch.setattr("kvledger.core.limits.available_memory_bytes", lambda: 24 << 30)
    msg = _error("pools", "--full")
    # SPEC §5 pools of GLM-5.3-Flash at 100 GiB, bf16 rows by default here: ~100 GiB.
    assert "pools --full on cpu (glm-5.3-flash) needs 100." in msg
    assert "this machine has 24.00 GiB available; use --device meta" in msg


@pytest.mark.parametrize(("args", "message"), [
    (("--rate", "0"), "--rate 0: expected a finite number in (0, 1,000,000]"),  # was rate 1
    (("--time-scale", "inf"), "--time-scale inf: expected a finite number in (0, 1,000,000]"),
    (("--seed", "-1"), "--seed -1: expected an integer in [0, 4,294,967,295]"),
    (("--rate", "nan"), "--rate nan: expected a finite number"),
    (("--step-overhead-ms", "nan"), "--step-overhead-ms nan: expected a finite number"),
    (("--decode-ms-per-token", "-1"), "--decode-ms-per-token -1: expected a finite number in "
                                      "[0, 1,000,000,000]"),
])
def test_simulate_flags(args, message):
    msg = _error("simulate", "--workload", "chat", "--num-requests", "5", "--no-progress",
                 "--json", *args)
    assert message in msg


@pytest.mark.parametrize(("args", "message"), [
    (("--tp", "2"), "--tp: unknown flag"),  # the one CLI convention (issue 15)
    (("--workload", "branching", "extra"), "unexpected extra argument"),
])
def test_verify_refuses_what_it_would_ignore(args, message):
    assert message in _error("verify", *args)
