"""Engine-neutral basics every other package stands on.

Files:
- `units.py`: byte units and integer helpers (`GiB`, `cdiv`, `align_down`).
- `limits.py`: the one table of input bounds and how values are shown in errors.
- `errors.py`: `DeploymentError`, raised for bad deployment input by either engine.
- `ledger.py`: `LedgerRow` and `Ledger`, the itemised shape of every byte account, and its JSON.
- `engines.py`: `Engine`, the serving engines kvledger plans for.
- `totals.py`: `DeploymentTotals`, the whole deployment's numbers for every engine.
- `plan.py`: `EnginePlan`, the interface SGLang's and vLLM's plans share (`Binding`,
  `ContextFit`).
- `terms.py`: `MemoryTerms`, the memory figures a user may know better than the defaults.
- `envelope.py`: the one `--json` envelope and the schema names.
- `version.py`: the package version.
- `values.py`: flag-value parsers (`integer`, `human_int`, choices).
- `words.py`: a pasted command line split as a POSIX shell splits it.
- `inputs.py`: text inputs of bounded size (regular files only, bounded lines).
- `registry.py`: `RuleRegistry`, the release table each engine's rule sets live in.
- `gpus.py`: the GPU catalogue behind `--gpu`.
- `extras.py`: which optional extra installs what, and the error when it is missing.
- `lazy.py`: lazy package exports (PEP 562).
"""
