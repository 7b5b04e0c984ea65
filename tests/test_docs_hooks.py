"""The docs' build hooks: doctests render as code, and the flag reference lists every option.

The hooks live in docs/_hooks/ (mkdocs loads them by path); the build itself is
`mkdocs build --strict` in CI.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
markdown = pytest.importorskip("markdown")

HOOKS = Path(__file__).resolve().parents[1] / "docs" / "_hooks" / "kvledger_docs.py"


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location("kvledger_docs", HOOKS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_bare_doctest_becomes_a_code_block_not_nested_quotes(hooks):
    text = ("A module docstring.\n\n>>> 1 + 1\n2\n>>> 'a|b'\n'a|b'\n\nAfter.\n\n"
            "```python\n>>> already_code\n```\n")
    html = markdown.markdown(text, extensions=["fenced_code", hooks.DoctestExtension()])
    assert "<blockquote>" not in html
    assert html.count("<pre>") == 2 and "&gt;&gt;&gt; 1 + 1\n2\n" in html
    assert "<p>After.</p>" in html


def test_the_flag_reference_lists_every_plan_and_simulate_option(hooks):
    import typer

    from kvledger.cli import app

    commands = typer.main.get_command(app).commands
    for name in ("plan", "simulate"):
        table = hooks.command_flags(name)
        for param in commands[name].params:
            if param.param_type_name == "option" and not param.hidden:
                assert f"`{param.opts[0]}`" in table, (name, param.opts[0])
    assert "one of `engine`, `marconi`" in hooks.command_flags("simulate")
    sglang = hooks.sglang_flags()
    assert "`--tp-size`, `--tensor-parallel-size`, `--tp`" in sglang
    assert "`--enable-prefix-caching` | `enable_prefix_caching`" in hooks.vllm_flags()


def test_placeholders_are_replaced_and_pipes_escaped(hooks):
    page = hooks.on_page_markdown("# x\n\n<!-- flags: vllm -->\n")
    assert "<!-- flags" not in page and "| `--max-model-len` | `max_model_len` |" in page
    assert hooks._cell("a | b") == "a \\| b"
