"""The edge's renderers: rich tables, `--json` documents, the HTML page and the figures.

Files:
- `envelope.py`: the one `--json` envelope and the schema names inside it;
- `plan_view.py`, `plan_json.py`, `explain.py`: an SGLang plan as tables, JSON, derivations;
- `vllm_view.py`, `vllm_json.py`: a vLLM plan likewise; `side_by_side.py`: both engines;
- `l3_view.py`: the store tier's sizing;
- `sim_view.py`, `sim_json.py`, `policy_compare.py`: simulation results, and policies compared;
- `sweep_view.py`, `sweep_json.py`: `sweep`, `compare` and `recommend`;
- `html_page.py`, `html_tables.py`: `kvledger report`'s self-contained page;
- `figures/`: the article's figures and the simulation plots (matplotlib, imported lazily).
"""
