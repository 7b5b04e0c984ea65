"""The light install (issue 15): the base package needs no torch, the `memory` extra pins it,
Python 3.11–3.13 are accepted, and every JSON schema is documented."""

from __future__ import annotations

import tomllib
from pathlib import Path

from kvledger.core.envelope import SCHEMAS, schema_name

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_base_install_has_no_torch_and_the_memory_extra_pins_it():
    assert not [d for d in PROJECT["dependencies"] if d.startswith("torch")]
    # exactly 2.13.0: a looser pin pulls a multi-GB CUDA build
    memory = PROJECT["optional-dependencies"]["memory"]
    assert [d for d in memory if d.startswith("torch")] == ["torch==2.13.0"]
    assert memory == ["torch==2.13.0", "xxhash>=3.4"]  # xxhash: the host tier's digests
    assert {"test", "docs", "memory"} <= set(PROJECT["optional-dependencies"])


def test_python_3_11_to_3_13_are_accepted():
    # requires-python was ">=3.11,<3.12", refusing 3.12 and 3.13
    assert PROJECT["requires-python"] == ">=3.11"


def test_every_json_schema_is_documented():
    docs = (ROOT / "docs" / "json.md").read_text()
    # each document's schema is stated in the module that writes it (plans and sizing results
    # write their own, report/ the rest)
    modules = "".join(p.read_text() for p in (ROOT / "src" / "kvledger").rglob("*.py"))
    for command in SCHEMAS:
        name = schema_name(command)
        assert f"`{name}`" in docs or f"`{name}`" in modules, name
    assert "::: kvledger.report.sim_json" in docs  # the simulate schema was undocumented


def test_ci_runs_the_readme_test_command_verbatim():
    """CI must run the quick start's second command as written, not a variant of it."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line for line in block.strip().splitlines() if line.strip()]
    assert len(commands) == 2, commands
    assert commands[1] in (root / ".ci" / "run").read_text()


def test_the_store_extra_carries_the_manifest_digest_library():
    # kvledger.store stays torch-free and digests every object with XXH3-64 (store/group.py)
    store = PROJECT["optional-dependencies"]["store"]
    assert "xxhash>=3.4" in store
    assert not [d for d in store if d.startswith("torch")]


def test_the_ray_extra_pins_ray_and_ci_runs_the_ray_tests_with_it():
    # `--ray` runs on Ray 2.60.0; CI installs the extra after the suite and runs the Ray tests
    # on a local instance, failing (not skipping) when Ray is absent
    assert PROJECT["optional-dependencies"]["ray"] == ["ray==2.60.0"]
    ci = (ROOT / ".ci" / "run").read_text()
    readme_test = ci.index(".venv/bin/python -m pytest\n")
    install = ci.index("pip install -q -e '.[ray]'")
    run = ci.index("KVLEDGER_REQUIRE_RAY=1 .venv/bin/python -m pytest -p no:cacheprovider -n 0 "
                   "tests/core/test_runner_ray.py")
    assert readme_test < install < run
