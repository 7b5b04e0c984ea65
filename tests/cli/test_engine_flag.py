"""`--engine` never reads as an ignored SGLang flag: SGLang's argparse would take `--engine`
for `--engine-info-bootstrap-port` (an unambiguous prefix), a flag kvledger ignores. It is a
real option of `replay` and `simulate` (simulate runs vllm and sglang,vllm, and refuses
SGLang-only modes with vllm by name; --compare takes one engine), and every other
command that takes deployment flags refuses it (exit 2, one error line)."""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()
COMMANDS = typer.main.get_command(app).commands


def _errors(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def test_replay_and_simulate_own_the_engine_option():
    for name in ("replay", "simulate", "plan"):
        assert "--engine" in {o for p in COMMANDS[name].params for o in p.opts}, name


@pytest.mark.parametrize("engine", ["vllm", "sglang,vllm"])
def test_simulate_with_vllm_refuses_sglang_only_modes_by_name(engine):
    result = runner.invoke(app, ["simulate", "--engine", engine, "--workload", "chat",
                                 "--num-requests", "2", "--no-progress", "--csv", "out.csv"])
    assert result.exit_code == 2
    assert _errors(result) == [
        f"error: --csv: an SGLang simulation mode; not with --engine {engine}"]


def test_compare_runs_one_engine_at_a_time():
    # --engine vllm --compare is vLLM's own knob table (tests/cli/test_sim_vllm_compare.py)
    result = runner.invoke(app, ["simulate", "--engine", "sglang,vllm", "--workload", "chat",
                                 "--num-requests", "2", "--no-progress", "--compare"])
    assert result.exit_code == 2
    assert _errors(result) == [
        "error: --compare: one engine at a time (--engine sglang or --engine vllm)"]


def test_both_engines_need_one_gpu():
    result = runner.invoke(app, ["simulate", "--engine", "sglang,vllm", "--workload", "chat",
                                 "--num-requests", "2", "--no-progress"])
    assert result.exit_code == 2
    assert _errors(result)[0].startswith("error: --gpu: --engine sglang,vllm needs the GPU")


def test_simulate_reads_engine_sglang_and_refuses_other_words():
    bad = runner.invoke(app, ["simulate", "--engine", "trt", "--workload", "chat"])
    assert bad.exit_code == 2 and _errors(bad)[0].startswith("error: --engine 'trt':")


def test_a_shorter_prefix_is_ambiguous_not_the_ignored_flag():
    result = runner.invoke(app, ["simulate", "--eng", "vllm"])
    assert result.exit_code == 2
    assert _errors(result) == ["error: --eng: ambiguous flag, could be --engine, "
                               "--engine-info-bootstrap-port"]


@pytest.mark.parametrize("name", sorted(
    n for n, c in COMMANDS.items() if getattr(c, "takes_deployment", False)
    and "--engine" not in {o for p in c.params for o in p.opts}))
def test_commands_without_engine_refuse_it(name):
    result = runner.invoke(app, [name, "--engine", "vllm"])
    assert result.exit_code == 2, result.output
    errors = _errors(result)
    assert len(errors) == 1 and errors[0].startswith("error: --engine: unknown flag; it "
                                                     "abbreviates only --engine-info-bootstrap-port")
