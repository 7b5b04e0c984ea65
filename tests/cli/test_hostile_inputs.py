"""Every hostile input of issues 13 and 21, through the real CLI: a clear error (exit 2)
naming the flag, file, line or field and the range expected — never a traceback, a hang or a
silently wrong number. One test per listed case; the fuzz suite (tests/fuzz) covers the space
around. Faults that need a real file descriptor (a closed or full stdout, an encoding, a FIFO)
run as subprocesses, all started at once (`streams`)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import get_args

import pytest
import typer
from rich.console import Console
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
    (("--rate", "0"), "--rate 0: expected a finite number in [1e-06, 1,000,000]"),  # was rate 1
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


# ---- issue 21: in-process -----------------------------------------------------------------


def _one_error(*args: str, input: str | None = None) -> str:  # noqa: A002 (CliRunner's name)
    """The one `error:` line of a refused invocation (exit 2, no traceback)."""
    result = runner.invoke(app, list(args), input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"traceback: {result.exception!r}")
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and result.stderr.startswith("error: "), result.stderr
    return errors[0]


BIG = str(2**64)


@pytest.mark.parametrize(("args", "message"), [
    # silent wrongs: each was exit 0 with a number no deployment has
    (("sweep", "--replicas", "-1"), "--replicas '-1': expected a positive integer (at most "
                                    "1,048,576)"),  # was ok: true, nodes -1
    (("sweep", "--replicas", "0"), "--replicas '0': expected a positive integer"),
    (("sweep", "--replicas", BIG), "--replicas '18446744073709551616': expected a positive "
                                   "integer"),  # was 2.3e18 nodes
    (("sweep", "--replicas", "1048576", "--tp", "8"), "--replicas 1,048,576: 1,048,576 × 8 GPUs "
                                                      "is 8,388,608 GPUs"),
    (("simulate", "--workload", "chat", "--flops-efficiency", "1e-310"),
     "--flops-efficiency 1e-310: expected a finite number in [0.001, 1]"),  # was TTFT inf
    (("simulate", "--workload", "chat", "--hbm-efficiency", "1e-310"),
     "--hbm-efficiency 1e-310: expected a finite number in [0.001, 1]"),  # was TPOT nan
    (("simulate", "--workload", "chat", "--rate", "1e-300"),
     "--rate 1e-300: expected a finite number in [1e-06, 1,000,000]"),  # was 1.6e303 ms
    (("simulate", "--workload", "chat", "--num-requests", "50", "--rate", "1e-6",
      "--time-scale", "1e6"), "arrivals span 1.385e+16 ms, beyond 1e+13 ms (~317 years): "
                              "raise --rate or lower --time-scale"),
    (("simulate", "--workload", "chat", "--step-overhead-ms", "1e-310"),
     "--step-overhead-ms 1e-310: expected a finite number in [1e-06, 1,000,000,000]"),
    (("plan", "--l3-size", "100", "--l3-instances", BIG),
     "--l3-instances of 20 digits: expected a positive integer (at most 1,048,576)"),
    # unclear errors: each was "nothing fits" (exit 1), a row, or accepted
    (("recommend", "--requests", "0", "--context", "1000"), "--requests 0: expected a positive "
                                                            "integer"),
    (("recommend", "--requests", "-1", "--context", "1000"), "--requests -1: expected a "
                                                             "positive integer"),
    (("recommend", "--requests", BIG, "--context", "1000"), "--requests of 20 digits: expected "
                                                            "a positive integer"),
    (("recommend", "--requests", "8", "--context", "0"), "--context 0: expected a positive "
                                                         "integer"),
    (("recommend", "--requests", "8", "--context", "1000", "--gpu", "nope"),
     "--gpu 'nope': not in the catalogue; choose one of H100, H200"),
    (("sweep", "--requests", "0"), "--requests 0: expected a positive integer"),
    (("sweep", "--gpu", "H200,nope"), "--gpu 'nope': not in the catalogue"),
    (("sweep", "--available-gib", "nan"), "--available-gib nan: expected a finite number"),
    (("plan", "--activation-gib", "nan"), "--activation-gib nan: expected a finite number in "
                                          "[0, 1,073,741,824]"),  # was accepted under SGLang
    (("plan", "--gpu", ""), "--gpu '': expected a GPU name"),  # was silently no GPU
    # values that do not parse name the option, not a pydantic sentence
    (("plan", "--context", "32x"), "--context '32x': expected an integer"),
    (("simulate", "--workload", "chat", "--rate", "abc"), "--rate 'abc': expected a number"),
    # --engine is simulate's own option now (never --engine-info-bootstrap-port), and an
    # SGLang-only option with vllm alone is refused by name
    (("simulate", "--engine", "vllm", "--workload", "chat", "--state-admission", "marconi"),
     "--state-admission: an option of SGLang's replay; --engine vllm takes"),
    (("pools", "--engine", "vllm"),
     "--engine: unknown flag; it abbreviates only --engine-info-bootstrap-port"),
    (("plan", "--max-mod", "32k"), "--max-mod: unknown flag; did you mean --max-model-len"),
])
def test_issue_21_inputs_exit_2_naming_the_flag(args, message):
    assert message in _one_error(*args, *(["--no-progress"] if args[0] == "simulate" else []))


def test_huge_values_are_never_echoed_whole(tmp_path):
    for args in (("replay", "--trace", _trace(tmp_path, "5"), "--pool-tokens", "64",
                  "--state-slots", "9" * 400),
                 ("plan", "--model", "x" * 100_000),
                 ("plan", "--tp", "9" * 400)):
        line = _one_error(*args)
        assert len(line) < 700 and ("400 digits" in line or "more characters" in line), line


def test_replay_page_size_beyond_the_limit_names_the_page_size(tmp_path):
    trace = _trace(tmp_path, "5")
    line = _one_error("replay", "--trace", trace, "--pool-tokens", "8192", "--state-slots", "8",
                      "--page-size", BIG)  # blamed --pool-tokens
    assert line == "error: --page-size of 20 digits: expected a positive integer (at most " \
                   "1,099,511,627,776)"


def _json(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_one_spelling_policy_for_context_and_nodes():
    # --context takes human counts as --context-length does (was a pydantic error)
    assert _json("plan", "--context", "32k")["workload"]["context_tokens"] == 32_000
    assert _json("plan", "--context=32K")["workload"]["context_tokens"] == 32_768
    # vLLM's --max-model-len is SGLang's --context-length, under either engine
    ours, theirs = _json("plan", "--max-model-len", "32k"), _json("plan", "--context-length", "32k")
    assert ours["deployment"]["context_length"] == 32_000 and ours["ignored_flags"] == []
    assert ours["deployment"] == theirs["deployment"] and ours["capacity"] == theirs["capacity"]
    both = _json("plan", "--engine", "sglang,vllm", "--gpu", "H200", "--tp", "8",
                 "--max-model-len", "32k")
    assert both["vllm"]["layout"]["max_model_len"] == 32_000
    # sweep reads SGLang's --nnodes as its --nodes (was ignored: one node)
    nnodes, nodes = _json("sweep", "--nnodes", "2"), _json("sweep", "--nodes", "2")
    assert [r["nodes"] for r in nnodes["rows"]] == [r["nodes"] for r in nodes["rows"]] == [2]
    assert nnodes["ignored_flags"] == []


def test_every_numeric_option_of_every_command_has_a_bound():
    from kvledger.cli.bounds import BOUNDS

    unbounded, numeric = [], 0
    for name, command in typer.main.get_command(app).commands.items():
        for param in command.params:
            annotation = param.type_descriptor.annotation
            if {int, float} & {annotation, *get_args(annotation)}:
                numeric += 1
                if param.opts[0] not in BOUNDS:
                    unbounded.append(f"{name} {param.opts[0]} ({annotation})")
    assert not unbounded, unbounded
    assert numeric > 60  # the walk sees the options (simulate alone has 17)


def test_piped_help_is_never_cut(monkeypatch):
    # CliRunner's stdout is a pipe, not a terminal: help is printed wide enough for every
    # option name and word (was `--hicache-state-sha…` at 80 columns).
    import typer.rich_utils

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    names = list(typer.main.get_command(app).commands)
    piped = {n: runner.invoke(app, [n, "--help"]).stdout for n in names}
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 2_000)
    for name in names:
        wide = runner.invoke(app, [name, "--help"], env={"TERMINAL_WIDTH": "2000"}).stdout
        assert piped[name].count("…") == wide.count("…"), name  # no cut word grew a "…"
    assert "--hicache-state-share " in piped["plan"] and "--slot-economy " in piped["simulate"]


def test_a_generated_workload_shows_progress_while_it_is_made(monkeypatch):
    # A million zipf requests take a minute to generate before the replay's bar starts.
    screen = io.StringIO()
    monkeypatch.setattr("kvledger.cli.runners.simulation.err_console",
                        Console(file=screen, force_terminal=True, width=100))
    result = runner.invoke(app, ["simulate", "--workload", "zipf", "--num-requests", "5",
                                 "--json"])
    assert result.exit_code == 0, result.output
    assert "generating 5 zipf requests" in screen.getvalue()
    assert "replaying zipf (seed 0)" in screen.getvalue()


def test_trace_lines_and_inputs_are_bounded(tmp_path, monkeypatch):
    long_line = tmp_path / "long.jsonl"
    long_line.write_text("[" + " " * (4 << 20) + "]\n")  # one line past MAX_LINE_BYTES
    line = _one_error("simulate", "--trace", str(long_line), "--no-progress")
    assert "long.jsonl line 1: longer than 4,194,304 characters" in line
    assert "/dev/zero: a character device, not a regular file" in _one_error(
        "replay", "--trace", "/dev/zero", "--pool-tokens", "8192", "--state-slots", "8")
    monkeypatch.setattr("kvledger.cli.commands.checklog.MAX_LOG_BYTES", 1_000)
    line = _one_error("check-log", "-", input="INFO x\n" * 200)  # an endless pipe, cut short
    assert line.startswith("error: standard input: more than 1,000 bytes; a boot log is its "
                           "first lines")


# ---- issue 21: faults that need a real file descriptor, as subprocesses ----------------------

SRC = Path(__import__("kvledger").__file__).resolve().parents[1]
KVLEDGER = f"{sys.executable} -m kvledger"
HANG_S = 120.0  # a case that has not ended by then hangs (each takes ~2 s on a loaded machine)
# name → (shell command, environment overrides); `$K` is kvledger, `$F` a FIFO nobody writes
STREAM_CASES = {
    "stdout closed": ("$K plan >&-", {}),
    "stdin closed": ("$K check-log - <&-", {}),
    "disk full": ("$K plan > /dev/full", {}),
    "disk full, json": ("$K plan --json > /dev/full", {}),
    "reader gone": ("$K plan --json | true; exit ${PIPESTATUS[0]}", {}),
    "ascii": ("$K plan --requests 4 --context 8k", {"PYTHONIOENCODING": "ascii"}),
    "latin-1": ("$K sweep --tp 1,2", {"PYTHONIOENCODING": "latin-1"}),
    "fifo trace": ("$K simulate --trace $F --no-progress", {}),
}


@pytest.fixture(scope="module")
def streams(tmp_path_factory) -> dict[str, tuple[int, bytes, str]]:
    """Every case started at once (2 cores: ~5 s in all), then (exit status, stdout, stderr)."""
    fifo = tmp_path_factory.mktemp("streams") / "fifo"
    os.mkfifo(fifo)
    started = {}
    for name, (command, env) in STREAM_CASES.items():
        env = {**os.environ, "PYTHONPATH": str(SRC), "K": KVLEDGER, "F": str(fifo), **env}
        started[name] = subprocess.Popen(["bash", "-c", command.replace("$K", KVLEDGER)],
                                         env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE)
    done, deadline = {}, time.monotonic() + HANG_S
    for name, proc in started.items():
        try:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"{name}: still running after {HANG_S:.0f} s (a hang)")
        done[name] = (proc.returncode, out, err.decode("utf-8", "replace"))
    return done


@pytest.mark.parametrize(("name", "status", "stderr"), [
    ("stdout closed", 2, "error: standard output is closed, so nothing could be printed; "
                         "redirect it instead (> FILE, or > /dev/null to keep only the exit "
                         "status)\n"),
    ("stdin closed", 2, "error: -: standard input is closed; pipe the log in or give its file\n"),
    ("disk full", 2, "error: cannot write the output: No space left on device\n"),
    ("disk full, json", 2, "error: cannot write the output: No space left on device\n"),
    ("reader gone", 1, ""),
])
def test_a_closed_full_or_endless_stream_is_one_line_not_a_traceback(streams, name, status,
                                                                      stderr):
    code, _, err = streams[name]
    assert (code, err) == (status, stderr)


@pytest.mark.parametrize(("name", "encoding", "kept"), [("ascii", "ascii", ""),
                                                        ("latin-1", "latin-1", "×")])
def test_tables_degrade_to_ascii_where_the_encoding_cannot_carry_them(streams, name, encoding,
                                                                     kept):
    code, out, err = streams[name]
    assert code == 0 and err == "", err
    text = out.decode(encoding)  # raises if anything slipped through unencoded
    assert {c for c in text if ord(c) >= 128} <= set(kept)  # latin-1 has ×, not − or —
    assert "?" not in text  # every character kvledger writes has an ASCII spelling
    assert ("x " if not kept else "× ") in text and "-- " in text  # ×, — as x, --


FIFO_REFUSED = ": a FIFO, not a regular file (an input must end; save it to a file first)"


def test_a_fifo_trace_is_refused_before_it_is_opened(streams):
    code, _, err = streams["fifo trace"]
    assert code == 2 and err.count("error:") == 1, err
    assert FIFO_REFUSED in err


@pytest.mark.parametrize("args", [("replay", "--trace", "{fifo}", "--pool-tokens", "8192",
                                   "--state-slots", "8"), ("check-log", "{fifo}")])
def test_every_reader_of_a_file_refuses_a_fifo(tmp_path, args):
    # In-process, on a thread: were the check lost, open() would block forever on the FIFO.
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    words = [w.format(fifo=fifo) for w in args]
    results: list = []
    worker = threading.Thread(target=lambda: results.append(runner.invoke(app, words)),
                              daemon=True)
    worker.start()
    worker.join(HANG_S)
    assert results, f"kvledger {' '.join(args)} still blocked after {HANG_S:.0f} s"
    assert results[0].exit_code == 2 and FIFO_REFUSED in results[0].stderr
