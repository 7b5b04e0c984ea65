"""Option schemas: dataclasses of typer options, one per group of flags.

- `plan.py`: `PlanInputs` (model, GPU, memory, workload check, SGLang flags after `--`), the
  engine choice (`--engine`, `--rules`) and `plan_from`;
- `terms.py`: vLLM's memory terms (activations, non-torch, CUDA graphs, utilization);
- `sim.py`: `SimInputs`, the workload and simulation options of `simulate`, `figures`, `report`;
- `fleet.py`: `FleetInputs`, `simulate`'s `--replicas`, `--router`, `--rate-scale`,
  `--prefill-replicas`, `--decode-replicas`, `--link`;
- `slo.py`: `SloInputs`, `recommend`'s workload, SLO, search and price options;
- `groups.py`: `option_group`, which folds a dataclass of options into one parameter.
"""
