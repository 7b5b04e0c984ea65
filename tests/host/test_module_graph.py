"""host/ has no import circle: the controller sits on top; backup, loadback and write-back
act on `Transfers` and never import the controller (not even for type checking)."""

from __future__ import annotations

import ast
from pathlib import Path

HOST = Path(__file__).resolve().parents[2] / "src" / "kvledger" / "host"


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in HOST.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("kvledger.host."):
                found.add(node.module.removeprefix("kvledger.host."))
        graph[path.stem] = found
    return graph


def test_host_modules_import_without_a_cycle():
    graph, done, path = _graph(), set(), []

    def visit(module: str) -> None:
        assert module not in path, f"import cycle: {' → '.join([*path, module])}"
        if module in done:
            return
        path.append(module)
        for target in sorted(graph.get(module, ())):
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def test_no_host_module_imports_the_controller():
    importers = {m for m, targets in _graph().items() if "controller" in targets}
    assert importers == set()
    assert {"transfers"} <= _graph()["backup"] and {"transfers"} <= _graph()["loadback"]
    assert "transfers" in _graph()["write_back"] and "transfers" in _graph()["tiers"]
