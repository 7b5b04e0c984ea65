"""A rule registry: one engine's declarative rule objects, looked up by release name.

SGLang's (`kvledger.sglang.rules`) and vLLM's (`kvledger.vllm.rules`) release tables are the same
shape: rule objects keyed by their `name`, one of them the default, and a lookup whose error
names the flag and lists the releases it knows. The registry is a read-only mapping, so
`name in RULES`, `RULES[name]` and `", ".join(RULES)` read as they would on a dict; the rule
objects themselves stay plain frozen dataclasses.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Toy:
...     name: str
...     page_tokens: int
>>> TOYS = RuleRegistry((Toy("toy-1", 16), Toy("toy-2", 64)), default="toy-1",
...                     hint=" for --engine toy")
>>> TOYS.lookup("toy-2").page_tokens, TOYS.default, TOYS.names
(64, 'toy-1', ('toy-1', 'toy-2'))
>>> TOYS.lookup("toy-9")
Traceback (most recent call last):
ValueError: --rules 'toy-9': expected one of toy-1, toy-2 for --engine toy
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar


class Named(Protocol):
    @property
    def name(self) -> str: ...


R = TypeVar("R", bound=Named)


class RuleRegistry(Mapping[str, R], Generic[R]):
    """Rule objects by release name, in declaration order, with a default release.

    Assumes each rule object carries a unique `name`; a repeated name or a default that is
    not among them is a programming error and fails at import.
    """

    def __init__(self, rules: Iterable[R], *, default: str, hint: str = "") -> None:
        self._rules: dict[str, R] = {}
        for rule in rules:
            if rule.name in self._rules:
                raise ValueError(f"rule set {rule.name!r} declared twice")
            self._rules[rule.name] = rule
        if default not in self._rules:
            raise ValueError(f"default rule set {default!r} is not among {', '.join(self)}")
        self.default = default
        self._hint = hint  # what the error adds after the list (which engine the names are)

    def __getitem__(self, name: str) -> R:
        return self._rules[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._rules)

    @property
    def default_rules(self) -> R:
        return self._rules[self.default]

    def lookup(self, name: str) -> R:
        """The rule set `name`; a clear `--rules` error listing the known ones otherwise."""
        try:
            return self._rules[name]
        except KeyError:
            raise ValueError(f"--rules {name!r}: expected one of {', '.join(self)}"
                             f"{self._hint}") from None
