"""Use cases the commands run, from parsed options to results (no rendering of options).

- `engines.py`: one plan per engine asked for (`--engine sglang,vllm`);
- `compare_sides.py`: the two sides of `compare`, each SGLang's or vLLM's;
- `simulation.py`: load a workload and replay it, with a progress bar;
- `sim_engines.py`: `simulate --engine vllm` and `--engine sglang,vllm` (both engines, one
  trace and memory); `sim_vllm_compare.py`: `simulate --engine vllm --compare`;
- `sim_compare.py`, `sim_slot_economy.py`, `sim_lossy.py`: `simulate`'s side-by-side runs
  and what-ifs; `sim_fleet.py`: `simulate --replicas` and every run's overload verdict; `sim_pd.py`:
  `simulate --prefill-replicas P --decode-replicas D`;
  `verify_lossy.py`: `verify --lossy-checkpoints`; `recommend_slo.py`: `recommend --trace
  … --ttft-p95-ms X`; `recommend_pd.py`: `recommend --pd --nodes N` (prefill/decode splits).
"""
