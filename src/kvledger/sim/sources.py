"""Where a simulated workload comes from: a trace file or a named generator.

>>> w = load_workload(generator="zipf", num_requests=20, seed=2)
>>> len(w.requests), w.name
(20, 'zipf (seed 2)')
"""

from __future__ import annotations

from pathlib import Path

from kvledger.core.limits import MAX_TIMESTAMP_MS, check_allocation
from kvledger.sim.generators import GeneratorParams, get_generator
from kvledger.sim.trace import read_trace
from kvledger.sim.workload import Workload, WorkloadError

GENERATED_REQUEST_BYTES = 2_048  # a generated request in memory (measured ~0.5-1 KiB: chat, agent)


def load_workload(*, trace: Path | str | None = None, generator: str | None = None,
                  num_requests: int | None = None, seed: int = 0, rate_per_s: float | None = None,
                  time_scale: float = 1.0) -> Workload:
    """Exactly one of `trace` and `generator`. For a trace, `num_requests` keeps its first
    requests; for a generator it is how many to make (default 1,000). Arrivals must end within
    MAX_TIMESTAMP_MS, as a trace's must: a rate of 1e-300 would simulate 1e303 ms."""
    if (trace is None) == (generator is None):
        raise WorkloadError("give exactly one of --trace FILE and --workload NAME")
    if num_requests is not None and num_requests < 1:
        raise WorkloadError(f"--num-requests {num_requests}: expected at least 1")
    if trace is not None:
        if rate_per_s is not None:
            raise WorkloadError("--rate applies to generated workloads; use --time-scale for "
                                "a trace")
        workload = read_trace(Path(trace))
        if num_requests is not None:
            workload = workload.head(num_requests)
    else:
        defaults = GeneratorParams()  # `is None`, not `or`: --rate 0 is an error, not the default
        count = defaults.num_requests if num_requests is None else num_requests
        check_allocation(f"--num-requests {count:,}", count * GENERATED_REQUEST_BYTES,
                         "ask for fewer requests")
        params = GeneratorParams(num_requests=count, seed=seed,
                                 rate_per_s=defaults.rate_per_s if rate_per_s is None
                                 else rate_per_s)
        workload = get_generator(generator).generate(params)
    workload = workload.stretched(time_scale) if time_scale != 1 else workload
    last_ms = max(r.arrival_ms for r in workload.requests)
    if not last_ms <= MAX_TIMESTAMP_MS:
        cause = ("lower --time-scale" if trace is not None
                 else "raise --rate or lower --time-scale")
        raise WorkloadError(f"arrivals span {last_ms:,.4g} ms, beyond {MAX_TIMESTAMP_MS:g} ms "
                            f"(~317 years): {cause}")
    return workload
