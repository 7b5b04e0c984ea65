"""What the offline bound sees of a workload: per request, the identity of every page prefix.

A request's sequence (prompt then output) is cut into full pages (`kvledger.sim.pages`);
prefix j of it (its first j + 1 pages) is named by the 64-bit prefix hash the state policies
use (`kvledger.cache.policies.ghost.prefix_hashes`), so two requests share a prefix exactly
when they share its hash (collisions: about 2^-64 per pair). A request can reuse at most
``window_pages`` = (prompt − 1) // page pages: the replay matches ``prompt[:-1]`` (the last
prompt token is always computed to sample the first output token).

>>> from kvledger.sim.workload import Request
>>> reqs = [Request(rid=i, arrival_ms=0.0, segment_ids=(1, 2 + i), segment_tokens=(128, 70),
...                 output_tokens=10) for i in range(2)]
>>> t = BoundTrace.of(reqs, page_tokens=64)
>>> t.window_pages, [len(p) for p in t.prefixes], t.prefixes[0][1] == t.prefixes[1][1]
((3, 3), [3, 3], True)
>>> bool(t.prefixes[0][2] == t.prefixes[1][2])
False
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvledger.cache.policies.ghost import prefix_hashes
from kvledger.sim.pages import PageKeyer
from kvledger.sim.workload import Request


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundTrace:
    """Requests in arrival order, as page-prefix identities."""

    page_tokens: int
    prefixes: tuple[tuple[int, ...], ...]  # per request: hash of prefix 1..len pages
    window_pages: tuple[int, ...]  # per request: pages a hit may cover

    def __post_init__(self) -> None:
        if len(self.prefixes) != len(self.window_pages):
            raise ValueError(f"{len(self.prefixes)} requests but {len(self.window_pages)} windows")
        for i, (seq, window) in enumerate(zip(self.prefixes, self.window_pages, strict=True)):
            if not 0 <= window <= len(seq):
                raise ValueError(f"request {i}: window of {window} pages outside its "
                                 f"{len(seq)}-page sequence")

    @property
    def num_requests(self) -> int:
        return len(self.prefixes)

    @classmethod
    def of(cls, requests: Sequence[Request], *, page_tokens: int) -> BoundTrace:
        keyer = PageKeyer(page_tokens)
        prefixes = tuple(tuple(prefix_hashes(keyer.keys(r)).tolist()) for r in requests)
        windows = tuple(min((r.prompt_tokens - 1) // page_tokens, len(p))
                        for r, p in zip(requests, prefixes, strict=True))
        return cls(page_tokens=page_tokens, prefixes=prefixes, window_pages=windows)

    @classmethod
    def of_paths(cls, paths: Sequence[Sequence[int]], windows: Sequence[int], *,
                 page_tokens: int = 1) -> BoundTrace:
        """A trace written as page-key paths (tests, worked examples): request i's sequence
        is ``paths[i]``; prefixes are named by the path up to each page."""
        named: dict[tuple[int, ...], int] = {}
        prefixes = tuple(tuple(named.setdefault(tuple(p[: j + 1]), len(named))
                               for j in range(len(p))) for p in paths)
        return cls(page_tokens=page_tokens, prefixes=prefixes, window_pages=tuple(windows))
