"""`--jobs N` (local processes) and `--ray` at the CLI boundary: a parallel run prints the
serial run's document byte for byte, and the options are checked before any work starts.
(The Ray path on a local Ray instance: tests/core/test_runner_ray.py.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()
TRACE = str(Path(__file__).resolve().parents[1] / "data" / "synthetic_trace.jsonl")
COMPARE = ("simulate", "--workload", "shared-prompt", "--num-requests", "60", "--compare",
           "--no-progress", "--json")
VLLM_COMPARE = ("simulate", "--trace", TRACE, "--num-requests", "12", "--model",
                "qwen3-next-80b-a3b-instruct", "--gpu", "h200", "--tp", "2", "--engine", "vllm",
                "--compare", "--no-progress", "--json")
SWEEP = ("sweep", "--gpu", "H200,B200", "--tp", "1,2,4,8", "--dp", "1,2", "--engine",
         "sglang,vllm", "--no-progress", "--json")
RECOMMEND = ("recommend", "--gpu", "H200", "--requests", "64", "--context", "8192",
             "--no-progress", "--json")


def _stdout(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("args", [COMPARE, VLLM_COMPARE, SWEEP, RECOMMEND],
                         ids=["simulate --compare", "simulate --engine vllm --compare",
                              "sweep", "recommend"])
def test_two_jobs_print_the_serial_document_byte_for_byte(args):
    serial = _stdout(*args)
    # these documents carry no timing field (no wall_s): nothing to remove before comparing
    assert "wall_s" not in serial
    assert _stdout(*args, "--jobs", "2") == serial


def test_ray_without_the_extra_says_so_and_exits_2(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as if not installed
    for args in (COMPARE, SWEEP, RECOMMEND):
        result = runner.invoke(app, [*args, "--ray", "auto"])
        assert result.exit_code == 2, result.output
        assert result.stderr == ("error: --ray needs ray, which is not installed: "
                                 "pip install 'kvledger[ray]'\n")


@pytest.mark.parametrize(("args", "message"), [
    ((*SWEEP, "--jobs", "0"), "error: --jobs 0: expected a positive integer (at most 1,024)"),
    ((*SWEEP, "--jobs", "2", "--ray", "auto"), "error: --jobs 2 and --ray: give one"),
    ((*SWEEP, "--ray", " "), "error: --ray: expected a Ray address"),
    (("simulate", "--workload", "chat", "--num-requests", "5", "--jobs", "2"),
     "error: --jobs/--ray: run --compare's independent replays at once; needs --compare"),
    (("simulate", "--workload", "chat", "--num-requests", "5", "--replicas", "2", "--jobs",
      "2"), "(a --replicas fleet is one coupled replay)"),
])
def test_job_options_are_checked_before_any_work(args, message):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    assert message in result.stderr
