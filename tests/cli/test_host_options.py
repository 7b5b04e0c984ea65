"""kvledger's host options through the real CLI: `--host-state-backup` and
`--hicache-state-share` on `simulate` and `verify`, with their errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app

runner = CliRunner()
SIM = ("simulate", "--workload", "chat", "--num-requests", "40", "--no-progress", "--json",
       "--kv-cache-dtype", "fp8_e4m3")


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_simulate_reports_the_host_options():
    out = invoke(*SIM, "--enable-hierarchical-cache", "--host-state-backup", "junctions",
                 "--hicache-state-share", "0.25")
    assert out.exit_code == 0, out.output
    host = json.loads(out.stdout)["host"]
    # 100 GiB plan, ratio 2: 0.25 of the 214,242,567,680 B budget is 362 slots (+1)
    assert (host["state_backup"], host["state_share"], host["capacity_slots"]) == (
        "junctions", 0.25, 363)
    assert "state backup junctions (kvledger)" in host["note"]
    default = json.loads(invoke(*SIM, "--enable-hierarchical-cache").stdout)["host"]
    assert (default["state_backup"], default["state_share"], default["capacity_slots"]) == (
        "all", None, 687)


@pytest.mark.parametrize(("args", "message"), [
    (("--host-state-backup", "junctions"),
     "--host-state-backup junctions: has no effect without --enable-hierarchical-cache"),
    (("--hicache-state-share", "0.5"),
     "--hicache-state-share 0.5: has no effect without --enable-hierarchical-cache"),
    (("--enable-hierarchical-cache", "--hicache-state-share", "1.5"),
     "--hicache-state-share 1.5: expected a fraction strictly between 0 and 1"),
    (("--enable-hierarchical-cache", "--hicache-state-share", "nan"),
     "--hicache-state-share nan: expected a fraction strictly between 0 and 1"),
])
def test_bad_host_options_name_the_flag(args, message):
    out = invoke(*SIM, *args)
    assert out.exit_code == 2
    assert message in " ".join(out.output.split())


def test_an_unknown_state_backup_is_a_usage_error():
    out = invoke(*SIM, "--enable-hierarchical-cache", "--host-state-backup", "some")
    assert out.exit_code == 2 and "junctions" in out.output
