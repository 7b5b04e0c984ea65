"""Where a command's independent runs execute: `--jobs N` local processes or `--ray ADDRESS`.

The options build one runner (`kvledger.core.runner`) that the command hands to the library
call; nothing below the command sees the flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from kvledger.core.extras import RAY
from kvledger.core.limits import MAX_JOBS, check_count
from kvledger.core.runner import SERIAL, Processes, RayCluster, Runner

JobsOpt = Annotated[int, typer.Option(
    "--jobs", help=f"Run the independent runs in N local processes at once (1..{MAX_JOBS:,}; "
    "1: one after another here). The results are the same.")]
RayOpt = Annotated[str | None, typer.Option(
    "--ray", metavar="ADDRESS|auto", help="Run the independent runs as Ray tasks on the "
    "cluster at ADDRESS (auto: the one `ray start` runs here); needs kvledger[ray] here and "
    "kvledger on the cluster. Not with --jobs.")]


@dataclass(frozen=True, slots=True)
class JobsInputs:
    jobs: JobsOpt = 1
    ray: RayOpt = None

    def runner(self) -> Runner:
        """The runner the options name, checked (a missing Ray says the extra: exit 2)."""
        check_count("--jobs", self.jobs, high=MAX_JOBS)
        if self.ray is None:
            return SERIAL if self.jobs == 1 else Processes(self.jobs)
        if self.jobs != 1:
            raise ValueError(f"--jobs {self.jobs} and --ray: give one (on Ray, as many run at "
                             "once as the cluster has CPUs)")
        if not self.ray.strip():
            raise ValueError("--ray: expected a Ray address (host:port, ray://host:port) or "
                             "auto")
        RAY.require("--ray")
        return RayCluster(self.ray.strip())
