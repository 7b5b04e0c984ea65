"""The import graph is the data flow: packages in layers, imports pointing down, no circles.

The layering is stated by package, bottom first. A module may import from its own package and
from any package of a lower layer; packages of one layer are peers and never import each
other (so `sglang/` and `vllm/` sit side by side on `model/` and `core/`). The planner never
imports torch or matplotlib at module level.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "kvledger"

LAYERS = (
    {"core"},
    {"model"},
    {"sglang", "vllm"},  # the two engines' planners, side by side
    {"logs", "sizing", "pools", "tree", "blocks", "store"},  # planner consumers; the caches
    {"host"},
    {"cache"},  # the one facade
    {"engine", "sim"},  # both drive the facade
    {"sequential", "bound"},  # bound: the offline optimum over a simulated workload
    {"report"},
    {"api"},
    {"cli"},
    {"__main__", "__init__"},
)
LAYER = {name: i for i, layer in enumerate(LAYERS) for name in layer}
PLANNING = {"core", "model", "sglang", "vllm", "logs", "sizing"}
HEAVY = {"torch", "matplotlib"}
MAX_LOOSE_ROOT_MODULES = 6


def _top(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "configs" not in p.parts]


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside |= {id(n) for n in ast.walk(node)}
    return inside


def _imports(path: Path, *, runtime_only: bool = False) -> set[str]:
    """Dotted names imported; `from a import b` also yields `a.b` (b may be a module)."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree) if runtime_only else set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_every_package_has_a_layer():
    tops = {_top(p) for p in _modules()}
    assert tops <= set(LAYER), f"packages without a layer: {sorted(tops - set(LAYER))}"


def test_imports_point_down_the_layers():
    bad = []
    for path in _modules():
        top = _top(path)
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != "kvledger" or len(parts) < 2 or parts[1] == top:
                continue
            if parts[1] in LAYER and LAYER[parts[1]] >= LAYER[top]:
                bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not bad, "imports against the data flow:\n" + "\n".join(sorted(set(bad)))


def test_no_module_imports_itself_in_a_circle():
    modules = {_module(p): p for p in _modules()}
    graph = {m: {n for n in _imports(p, runtime_only=True) if n in modules and n != m}
             for m, p in modules.items()}
    # a package's __init__ importing its children is the normal direction; a child
    # importing its own package's __init__ back is the circle we look for
    circles = _strongly_connected(graph)
    assert not circles, "import circles:\n" + "\n".join(" ↔ ".join(c) for c in circles)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle():
    assert _strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_the_package_root_holds_only_a_handful_of_modules():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_LOOSE_ROOT_MODULES, loose


def test_the_engine_packages_import_cleanly():
    code = "import kvledger.core, kvledger.sglang, kvledger.vllm"
    subprocess.run([sys.executable, "-c", code], check=True)


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
