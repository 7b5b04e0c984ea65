"""The commands, one module per command family; each registers itself on `cli.app`.

- `plan.py`: `plan`, `explain`, `models`, `gpus`;
- `sweep.py`: `sweep`, `compare`, `recommend`;
- `sim.py`: `simulate`; `replay.py`: `replay`; `report.py`: `figures`, `report`;
- `pools.py`: `pools`; `verify.py`: `verify`; `checklog.py`: `check-log`.
"""
