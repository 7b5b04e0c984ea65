"""The edge's renderers: rich tables, the HTML page and the figures.

The `--json` documents are written by what they describe (`SglangPlan.to_json()`,
`VllmPlan.to_json()`, the sizing results, `core.envelope`); only the simulation's is here.

Files:
- `plan_view.py`, `explain.py`: an SGLang plan as tables and as derivations; `stage_view.py`:
  its pipeline-stage table;
- `vllm_view.py`: a vLLM plan's tables; `side_by_side.py`: both engines; `plan_views.py`: any
  `EnginePlan` to its view;
- `l3_view.py`: the store tier's sizing;
- `sim_view.py`, `sim_json.py`: simulation results; `policy_compare.py`: policies compared
  (the runs, with the bounds), `policy_compare_view.py`: its table and JSON;
- `vllm_sim_view.py`, `vllm_sim_json.py`: `simulate --engine vllm` and both engines side by side;
  `vllm_compare_view.py`: `simulate --engine vllm --compare` (table and JSON);
- `fleet_view.py`, `fleet_json.py`: a fleet's replay (`simulate --replicas`); `pd_view.py`,
  `pd_json.py`: a disaggregated fleet against the aggregated one;
- `sweep_view.py`: `sweep`, `compare` and `recommend`; `slo_view.py`, `slo_json.py`:
  `recommend --trace … --ttft-p95-ms X` (a fleet sized for an SLO);
- `checklog_view.py`: `check-log`'s reconciliation table; `hit_rates.py`: what each hit rate
  measures (the notes under `replay`, `simulate` and `--compare`);
- `show.py`: the one convention for units in every table;
- `html_page.py`, `html_tables.py`: `kvledger report`'s self-contained page;
- `figures/`: the article's figures and the simulation plots (matplotlib, imported lazily).
"""
