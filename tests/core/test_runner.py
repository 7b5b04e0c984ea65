"""kvledger.core.runner: the serial and local-process runners give the same results in list
order, honour `after`, forward progress, and raise a task's error (the Ray runner: in
tests/core/test_runner_ray.py)."""

from __future__ import annotations

import operator
from dataclasses import replace

import pytest

from kvledger.core.runner import SERIAL, Processes, RunObserver, Task
from kvledger.report.policy_compare import COMPARE_PAIRS, replay_pair
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.generators import GENERATORS, GeneratorParams


class Events(RunObserver):
    def __init__(self) -> None:
        self.log: list[tuple] = []

    def started(self, index, task):
        self.log.append(("start", index))

    def ticked(self, index, done, total):
        self.log.append(("tick", index, done, total))

    def finished(self, index):
        self.log.append(("done", index))


# stdlib functions are module level, so they travel to a worker by reference
ARITHMETIC = [Task(fn=pow, args=(2, 10), label="2^10"),
              Task(fn=operator.add, args=(1,), label="1 + 2^10", after=0),
              Task(fn=operator.mul, args=(3, 7), label="3 × 7"),
              Task(fn=operator.sub, args=(100,), label="100 − 21", after=2)]


def test_serial_appends_the_awaited_result_and_starts_awaited_tasks_first():
    seen = Events()
    assert SERIAL.run(ARITHMETIC, seen) == [1024, 1025, 21, 79]
    # tasks 0 and 2 are awaited (contract 3), so they start before 1 and 3
    assert seen.log == [("start", 0), ("done", 0), ("start", 2), ("done", 2),
                        ("start", 1), ("done", 1), ("start", 3), ("done", 3)]


def test_the_costliest_ready_task_starts_first_ties_in_list_order():
    tasks = [Task(fn=pow, args=(2, i), label=str(i), cost=cost)
             for i, cost in enumerate((1.0, 3.0, 1.0, 2.0))]
    seen = Events()
    assert SERIAL.run(tasks, seen) == [1, 2, 4, 8]  # results stay in list order
    assert [e[1] for e in seen.log if e[0] == "start"] == [1, 3, 0, 2]


def test_processes_give_the_serial_results_and_start_a_task_after_the_one_it_awaits():
    seen = Events()
    assert Processes(2).run(ARITHMETIC, seen) == [1024, 1025, 21, 79]
    log = seen.log
    assert log.index(("done", 0)) < log.index(("start", 1))
    assert log.index(("done", 2)) < log.index(("start", 3))
    assert sorted(e for e in log if e[0] == "done") == [("done", i) for i in range(4)]


def test_a_tasks_error_reaches_the_caller_from_a_worker():
    bad = [Task(fn=pow, args=(2, 3), label="fine"), Task(fn=int, args=("x",), label="bad")]
    with pytest.raises(ValueError, match="invalid literal for int"):
        Processes(2).run(bad)
    with pytest.raises(ValueError, match="invalid literal for int"):
        SERIAL.run(bad)


def test_a_task_may_only_await_an_earlier_one():
    with pytest.raises(AssertionError, match="waits on task 1, not an earlier one"):
        SERIAL.run([Task(fn=pow, args=(2,), label="x", after=1),
                    Task(fn=pow, args=(2, 2), label="y")])


def test_replays_in_workers_equal_replays_here_and_forward_their_progress():
    # 20 requests of the shared-prompt generator; both pairs of the table's first two rows
    plan = make_plan(kv_cache_dtype="fp8_e4m3")
    work = GENERATORS["shared-prompt"].generate(GeneratorParams(num_requests=20, seed=3))
    tasks = [Task(fn=replay_pair, args=(plan, work, SimConfig(), pair), label=str(i),
                  ticks=True) for i, pair in enumerate(COMPARE_PAIRS[:2])]
    here, there = Events(), Events()
    # equal but for the replay's own wall time (wall_s, a timing field)
    def untimed(rows):
        return [replace(r, summary=replace(r.summary, wall_s=0.0)) for r in rows]
    assert untimed(SERIAL.run(tasks, here)) == untimed(Processes(2).run(tasks, there))
    # serially every tick the replay makes (`Replay.advance`: about every 1/200 of the
    # requests); from a worker at most one per TICK_S, always the last (20 of 20)
    for log in (here.log, there.log):
        for index in (0, 1):
            ticks = [e[2] for e in log if e[0] == "tick" and e[1] == index]
            assert ticks == sorted(ticks) and ticks[-1] == 20
            assert {e[3] for e in log if e[0] == "tick" and e[1] == index} == {20}
    assert len([e for e in here.log if e[0] == "tick"]) > len(
        [e for e in there.log if e[0] == "tick"])
