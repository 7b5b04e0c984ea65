"""mkdocs hooks for kvledger's docs: doctests as code, and the generated flag reference.

- Doctests: a `>>>` run outside a code block (module docstrings keep them as plain lines, so
  Markdown reads `>>>` as three nested quotes) becomes a `pycon` code block, in the pages and
  in every docstring mkdocstrings renders (they share the configured Markdown extensions).
- Flags: `<!-- flags: COMMAND -->` in a page becomes the table of that command's options,
  read from the command line itself (`kvledger.cli.app`), so the reference cannot drift from
  `--help`; `<!-- flags: sglang -->` and `<!-- flags: vllm -->` list the engine flags the
  planning commands read (`kvledger.sglang.launch.flags`, `kvledger.vllm.deploy`).
"""

from __future__ import annotations

import enum
import re
import typing
from pathlib import Path

from markdown import Extension
from markdown.preprocessors import Preprocessor
from mkdocs.plugins import event_priority

FENCES = ("```", "~~~")
PLACEHOLDER = re.compile(r"^<!-- flags: ([a-z-]+) -->$", re.M)


class DoctestBlocks(Preprocessor):
    """Wrap every `>>>` run (up to the next blank line) that is not already code in a fence."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fence: str | None = None
        i = 0
        while i < len(lines):
            line = lines[i]
            text = line.lstrip()
            indent = len(line) - len(text)
            if fence is not None:
                out.append(line)
                fence = None if text.startswith(fence) else fence
            elif text.startswith(FENCES):
                fence = text[:3]
                out.append(line)
            elif indent < 4 and text.startswith(">>>"):
                block = []
                while i < len(lines) and lines[i].strip():
                    block.append(lines[i][indent:] if not lines[i][:indent].strip() else lines[i])
                    i += 1
                out += ["", "```pycon", *block, "```", ""]
                continue
            else:
                out.append(line)
            i += 1
        return out


class DoctestExtension(Extension):
    def extendMarkdown(self, md) -> None:  # noqa: N802 (Markdown's API)
        # after whitespace normalisation (30), before fenced code (25) reads the fences
        md.preprocessors.register(DoctestBlocks(md), "kvledger_doctests", 27)


@event_priority(100)  # before mkdocstrings copies the extension list into its handlers
def on_config(config, **_):
    config.markdown_extensions.append(DoctestExtension())
    return config


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _value(param) -> str:
    """What the option takes, in words (never a `|`: the table would split it)."""
    if getattr(param, "is_flag", False):
        return "switch"
    annotation = param.type_descriptor.annotation
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    kind = args[0] if args else annotation
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return "one of " + ", ".join(f"`{m.value}`" for m in kind)
    names = {int: "integer", float: "number", str: "text", Path: "path", bool: "switch"}
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def _default(param) -> str:
    default = param.default
    if default is None or default is False or getattr(param, "is_flag", False) and not default:
        return ""
    if isinstance(default, enum.Enum):
        default = default.value
    return f"`{default}`"


def command_flags(name: str) -> str:
    import typer

    from kvledger.cli import app

    command = typer.main.get_command(app).commands[name]
    rows = ["| flag | takes | default | what it does |", "|---|---|---|---|"]
    for param in command.params:
        if param.param_type_name != "option" or param.hidden:
            continue
        flags = ", ".join(f"`{o}`" for o in (*param.opts, *param.secondary_opts))
        rows.append(f"| {flags} | {_value(param)} | {_default(param)} | {_cell(param.help or '')} |")
    extra = ("\n\nSGLang deployment flags (below) follow the command's own options, as for "
             "`kvledger plan`." if getattr(command, "takes_deployment", False) else "")
    return "\n".join(rows) + extra


def sglang_flags() -> str:
    from kvledger.sglang.launch.flags import FLAGS

    rows = ["| flag (aliases) | takes | what it sets |", "|---|---|---|"]
    for flag in FLAGS:
        spellings = ", ".join(f"`{s}`" for s in flag.spellings)
        takes = "switch" if flag.switch else _cell(flag.expects.replace(" | ", ", "))
        rows.append(f"| {spellings} | {takes} | {_cell(flag.help)} (`{flag.key}`) |")
    return "\n".join(rows)


def vllm_flags() -> str:
    from kvledger.vllm.deploy import FIELD_FLAGS

    rows = ["| flag | VllmDeployment field |", "|---|---|"]
    rows += [f"| `{flag}` | `{field}` |" for field, flag in FIELD_FLAGS.items()]
    return "\n".join(rows)


def flag_table(name: str) -> str:
    if name == "sglang":
        return sglang_flags()
    if name == "vllm":
        return vllm_flags()
    return command_flags(name)


def on_page_markdown(markdown: str, **_) -> str:
    return PLACEHOLDER.sub(lambda m: flag_table(m.group(1)), markdown)
