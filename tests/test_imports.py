"""The import graph is the data flow and points one way; the planner never imports torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "kvledger"

# Lower rank = closer to the bottom. A module may import only modules of rank ≤ its own
# (equal rank only inside one package), never `cli` or `report` from below them.
RANKS = {
    "units": 0, "registry": 0, "lazy": 0, "limits": 0, "extras": 0, "model": 1, "deploy": 2, "rules": 2, "gpus": 2,
    "specs": 2, "launch": 3,
    "memfraction": 2, "resolve": 3, "ledger": 4, "statebudget": 4, "requestlimits": 4,
    "rankweights": 5, "capacity": 5, "hicache_share": 4.5, "hicache": 5,
    "plan": 6, "vllm": 6, "scaling": 6.5, "logs": 7, "sizing": 7, "pools": 7, "tree": 7,
    "store": 7, "l3plan": 6, "host": 8, "cache": 9, "engine": 10, "sim": 10, "sequential": 10.5, "report": 11, "api": 11,
    "cli": 12, "__main__": 13, "__init__": 14,
}
PLANNING = {"units", "registry", "limits", "model", "deploy", "rules", "gpus", "specs", "launch", "resolve", "ledger",
            "statebudget", "requestlimits", "memfraction", "rankweights", "capacity", "hicache",
            "hicache_share",
            "plan", "vllm", "logs", "scaling", "sizing", "extras", "l3plan"}
HEAVY = {"torch", "matplotlib"}


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _modules():
    return [p for p in PACKAGE.rglob("*.py") if "configs" not in p.parts]


def test_imports_point_one_way():
    bad = []
    for path in _modules():
        top = _top(path)
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != "kvledger" or len(parts) < 2:
                continue
            target = parts[1]
            if target == top:
                continue
            if RANKS.get(target, 99) > RANKS.get(top, -1) or (
                RANKS.get(target) == RANKS.get(top) and top not in {"__init__"}
            ):
                bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not bad, "imports against the data flow:\n" + "\n".join(bad)


def test_tree_never_imports_pools():
    for path in (PACKAGE / "tree").rglob("*.py"):
        assert not any(n.startswith("kvledger.pools") for n in _imports(path)), path


def test_planning_path_imports_no_heavy_module_at_top_level():
    for path in _modules():
        if _top(path) not in PLANNING:
            continue
        heavy = {n.split(".")[0] for n in _imports(path)} & HEAVY
        assert not heavy, f"{path.relative_to(PACKAGE)} imports {heavy}"


def test_kvledger_plan_does_not_load_torch():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from kvledger.cli import app\n"
        "r = CliRunner().invoke(app, ['plan', '--json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in ('torch', 'matplotlib', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "torch" not in out.stdout and "matplotlib" not in out.stdout, out.stdout
