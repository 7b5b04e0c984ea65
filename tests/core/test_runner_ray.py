"""The Ray runner on a local Ray instance this module starts (2 CPUs, no dashboard): the
same results as the serial runner, a task's error raised here, and the CLI's `--ray auto`
printing the serial document byte for byte.

Skipped without Ray (`pip install 'kvledger[ray]'`); `.ci/run` installs the extra and runs
this file after the suite with KVLEDGER_REQUIRE_RAY=1, where a missing Ray fails instead.
"""

from __future__ import annotations

import operator
import os

import pytest
from typer.testing import CliRunner

if os.environ.get("KVLEDGER_REQUIRE_RAY"):
    import ray
else:
    ray = pytest.importorskip("ray", reason="needs ray: pip install 'kvledger[ray]'")

from kvledger.cli import app  # noqa: E402
from kvledger.core.runner import SERIAL, RayCluster, RunObserver, Task  # noqa: E402

runner = CliRunner()


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


ARITHMETIC = [Task(fn=pow, args=(2, 10), label="2^10"),
              Task(fn=operator.add, args=(1,), label="1 + 2^10", after=0),
              Task(fn=operator.mul, args=(3, 7), label="3 × 7")]


def test_ray_tasks_give_the_serial_results_in_list_order():
    done: list[int] = []

    class Seen(RunObserver):
        def finished(self, index):
            done.append(index)

    # the instance the fixture started is used as it is (and left running)
    assert RayCluster("auto").run(ARITHMETIC, Seen()) == SERIAL.run(ARITHMETIC) == [
        1024, 1025, 21]
    assert sorted(done) == [0, 1, 2] and done.index(0) < done.index(1)
    assert ray.is_initialized()


def test_a_ray_tasks_error_is_raised_here_as_its_own_type():
    with pytest.raises(ValueError, match="invalid literal for int"):
        RayCluster("auto").run([Task(fn=int, args=("x",), label="bad")])


@pytest.mark.parametrize("args", [
    ("simulate", "--workload", "shared-prompt", "--num-requests", "40", "--compare",
     "--no-progress", "--json"),
    ("sweep", "--gpu", "H200", "--tp", "1,2,4,8", "--dp", "1,2", "--no-progress", "--json"),
], ids=["simulate --compare", "sweep"])
def test_ray_auto_prints_the_serial_document_byte_for_byte(args):
    serial = runner.invoke(app, list(args))
    on_ray = runner.invoke(app, [*args, "--ray", "auto"])
    assert serial.exit_code == on_ray.exit_code == 0, on_ray.output
    assert "wall_s" not in serial.stdout  # no timing field to remove first
    assert on_ray.stdout == serial.stdout
