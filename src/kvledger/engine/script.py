"""Scripts: conversations as waves of turns, each turn continuing an earlier request.

A ``Turn`` is one request: the text of an earlier request (its prompt and its output, or
the first ``keep`` tokens of it: an edited message) if it has a parent, then new tokens. Waves run one after another on the same engine, so a
later wave can reuse what an earlier one cached. Request ids are global, in script order::

    wave 0:  0 = system + question A          1 = system + question B
    wave 1:  2 = text(0) + follow-up          3 = text(0) + another follow-up  (a branch)

>>> from kvledger.engine.config import TinyConfig
>>> from kvledger.engine.fresh import FreshCache
>>> from kvledger.engine.loop import Engine
>>> from kvledger.engine.model import TinyModel
>>> cfg = TinyConfig()
>>> script = Script(waves=((Turn(parent=None, tokens=(1, 2, 3)),),
...                        (Turn(parent=0, tokens=(9,)),)))
>>> engine = Engine(TinyModel(cfg), FreshCache(cfg, max_running_requests=1, max_context_tokens=32))
>>> out = run_script(engine, script, max_new_tokens=2)
>>> [len(g.token_ids) for g in out], script.request_tokens(max_new_tokens=2)
([2, 2], [5, 8])
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.engine.loop import Engine, Generation


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    parent: int | None  # an earlier request whose prompt and output come first
    tokens: tuple[int, ...]  # new tokens after it
    keep: int | None = None  # keep only this many tokens of the parent's text (an edit)

    def __post_init__(self) -> None:
        if self.keep is not None and (self.parent is None or self.keep < 0):
            raise ValueError("Turn.keep: needs a parent and a non-negative token count")

    def prefix_tokens(self, parent_tokens: int) -> int:
        if self.keep is not None and self.keep > parent_tokens:
            raise ValueError(f"Turn.keep: {self.keep} tokens of a {parent_tokens}-token parent")
        return parent_tokens if self.keep is None else self.keep


@dataclass(frozen=True, slots=True, kw_only=True)
class Script:
    waves: tuple[tuple[Turn, ...], ...]

    def __post_init__(self) -> None:
        seen = 0
        for wave in self.waves:
            for turn in wave:
                if turn.parent is not None and not 0 <= turn.parent < seen:
                    raise ValueError(f"Script: turn {seen} continues request {turn.parent}, "
                                     "which is not in an earlier wave")
            seen += len(wave)

    @property
    def num_requests(self) -> int:
        return sum(len(wave) for wave in self.waves)

    def request_tokens(self, max_new_tokens: int) -> list[int]:
        """Prompt + output length of every request, in script order."""
        lengths: list[int] = []
        for wave in self.waves:
            lengths += [(t.prefix_tokens(lengths[t.parent]) if t.parent is not None else 0)
                        + len(t.tokens) + max_new_tokens for t in wave]
        return lengths


def run_script(engine: Engine, script: Script, max_new_tokens: int) -> list[Generation]:
    """Every request's generation, in script order."""
    texts: list[tuple[int, ...]] = []
    done: list[Generation] = []
    for wave in script.waves:
        prompts = [(texts[t.parent][: t.prefix_tokens(len(texts[t.parent]))]
                    if t.parent is not None else ()) + t.tokens for t in wave]
        outs = engine.generate(prompts, max_new_tokens)
        texts += [prompt + out.token_ids for prompt, out in zip(prompts, outs, strict=True)]
        done += outs
    return done
