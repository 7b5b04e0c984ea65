"""From what the user pasted to SGLang's argument list.

Accepted shapes (whitespace, quotes, `\\` line continuations and `#` comments as in a shell):
- bare flags: `--tp 8 --dp 8 --enable-dp-attention`;
- `python -m sglang.launch_server …` (any python / python3.x, any path to it), also
  `sglang_router.launch_server`, which takes the same server flags;
- `sglang serve [MODEL] …` (python/sglang/cli/serve.py turns a leading positional into
  --model-path).
Words before the launcher (`VAR=value`, `env`, `docker run … image`, `$`) and shell syntax
after it (`2>&1`, `> log`, `| tee log`, `&& …`, a trailing `&`) are set aside and reported:
they do not reach SGLang's parser.

>>> launch = split_launch("CUDA_VISIBLE_DEVICES=0,1 python3 -m sglang.launch_server --tp 2")
>>> launch.flags, launch.prefix
(('--tp', '2'), ('CUDA_VISIBLE_DEVICES=0,1',))
>>> split_launch(["sglang", "serve", "zai-org/GLM-5.3-Flash", "--tp", "8"]).model_ref
'zai-org/GLM-5.3-Flash'
>>> split_launch("python -m sglang.launch_server --tp 2 2>&1 | tee server.log").shell
('2>&1', '|', 'tee', 'server.log')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kvledger.core.errors import DeploymentError
from kvledger.core.words import split_words

LAUNCH_MODULES = ("sglang.launch_server", "sglang_router.launch_server")
_PYTHON = re.compile(r"(?:.*/)?python(?:\d+(?:\.\d+)*)?")
_SGLANG = re.compile(r"(?:.*/)?sglang")
_CONTROL = frozenset({"|", "||", "&&", ";", "&"})
# [fd]> file, [fd]>> file, [fd]< file, [fd]>&fd; the file is glued on or the next word
_REDIRECT = re.compile(r"\d*(?:>>?|<)(?P<dup>&(?:\d+|-))?(?P<file>.*)")


@dataclass(frozen=True, slots=True)
class Launch:
    flags: tuple[str, ...]  # what SGLang's argument parser receives
    model_ref: str | None = None  # `sglang serve MODEL`
    prefix: tuple[str, ...] = ()  # words before the launcher, not seen by SGLang
    shell: tuple[str, ...] = ()  # redirections and what follows a control operator
    launcher: tuple[str, ...] = ()  # `python -m sglang.launch_server`; empty for bare flags


def _launcher_at(words: list[str], i: int) -> int:
    """How many words the launcher starting at `i` spans; 0 if none starts there."""
    if _PYTHON.fullmatch(words[i]) and words[i + 1:i + 2] == ["-m"]:
        return 3 if words[i + 2:i + 3] and words[i + 2] in LAUNCH_MODULES else 0
    if _SGLANG.fullmatch(words[i]) and words[i + 1:i + 2] == ["serve"]:
        return 2
    return 0


def _without_shell(words: list[str]) -> tuple[list[str], list[str]]:
    """(the command's own words, the shell syntax taken out of them)."""
    kept: list[str] = []
    shell: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in _CONTROL:
            return kept, shell + words[i:]
        redirect = _REDIRECT.fullmatch(word)
        if redirect is None:
            kept.append(word)
            i += 1
            continue
        takes_next = not redirect["dup"] and not redirect["file"]
        shell += words[i:i + 1 + takes_next]
        i += 1 + takes_next
    return kept, shell


def split_launch(argv: Sequence[str] | str) -> Launch:
    words = split_words(argv)
    if words[:1] == ["--"]:
        words = words[1:]  # an end-of-options marker in front of the pasted command
    if not words or words[0].startswith("--"):
        flags, shell = _without_shell(words)
        return Launch(flags=tuple(flags), shell=tuple(shell))
    for i in range(len(words)):
        span = _launcher_at(words, i)
        if span:
            rest, shell = _without_shell(words[i + span:])
            model = None
            if span == 2 and rest and not rest[0].startswith("-"):
                model, rest = rest[0], rest[1:]
            return Launch(flags=tuple(rest), model_ref=model, prefix=tuple(words[:i]),
                          shell=tuple(shell), launcher=tuple(words[i:i + span]))
    raise DeploymentError(
        f"{' '.join(words[:3])!r}: not an SGLang launch; expected flags (--tp 8 …), "
        f"'python -m {LAUNCH_MODULES[0]} …' or 'sglang serve …'"
    )
