"""Run keys: a prompt's full pages grouped into runs that no two prompts of the trace split.

A Mooncake block of 512 tokens is shared whole or not at all, so two prompts' pages can
part only at a block boundary, or inside a block where one of them ends: its partial last
block (and, for a ``prompt-minus-one`` match, the page before its end). `RunKeyer` reads the
whole trace once and cuts each block only where some prompt of the trace ends inside it.
Every point where a tree over page keys could split a node, or stop a match, is then a
run boundary, so a tree over run keys makes the same splits, matches and leaf evictions with
one key where the page tree had up to ``512 / page`` (512 at page 1). Lengths come back in
pages through each prompt's run ``ends``; a run holds at most ``512 / page`` pages.

A run is keyed by its first page's key (``H·k + r``, `PromptKeyer`), which is unique.

>>> from kvledger.sim.workload import Request
>>> a = Request(rid=0, arrival_ms=0.0, segment_ids=(7, 9), segment_tokens=(512, 200),
...             output_tokens=0)
>>> b = Request(rid=1, arrival_ms=0.0, segment_ids=(7, 9, 4), segment_tokens=(512, 512, 10),
...             output_tokens=0)
>>> keyer = RunKeyer([a, b], page_tokens=64)
>>> keys, ends, pages = keyer.runs(b)  # block 9 is cut after 3 pages, where prompt a ends
>>> keys.tolist(), ends, pages.tolist()
([56, 72, 75], [8, 11, 16], [8, 3, 5])
>>> keys, ends, pages = keyer.runs(a)
>>> keys.tolist(), ends, pages.tolist()
([56, 72], [8, 11], [8, 3])

With ``unit_runs`` every run is one page (the page keys themselves): for a tree that must
count in pages, such as one placing states on SGLang's checkpoint grid.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvledger.sequential.keys import PromptKeyer
from kvledger.sim.trace import TRACE_PAGE_TOKENS
from kvledger.sim.workload import Request


class RunKeyer:
    """Run keys and run ends (in pages) of each prompt of one trace."""

    def __init__(self, requests: Sequence[Request], page_tokens: int, *,
                 minus_one: bool = False, unit_runs: bool = False) -> None:
        self._pages = PromptKeyer(page_tokens)  # checks page_tokens
        self.page_tokens = page_tokens
        self.unit_runs = unit_runs or TRACE_PAGE_TOKENS % page_tokens != 0
        self._per_block = TRACE_PAGE_TOKENS // page_tokens
        self.max_run_pages = 1 if self.unit_runs else self._per_block
        self._ends: list[int] = []
        self._cuts: dict[int, list[int]] = {} if self.unit_runs else self._find_cuts(
            requests, minus_one)

    def _find_cuts(self, requests: Sequence[Request], minus_one: bool) -> dict[int, list[int]]:
        """Per block id, the page offsets inside it where some prompt's match or insert ends."""
        k, page = self._per_block, self.page_tokens
        cuts: dict[int, set[int]] = {}
        longest = 0
        for request in requests:
            ids, length = request.segment_ids, request.prompt_tokens
            longest = max(longest, len(ids))
            for pages in ((length // page, (length - 1) // page) if minus_one
                          else (length // page,)):
                block, offset = divmod(pages, k)
                if offset:
                    cuts.setdefault(ids[block], set()).add(offset)
        self._ends = [k * (j + 1) for j in range(longest)]
        return {block: sorted(offsets) for block, offsets in cuts.items()}

    def runs(self, request: Request) -> tuple[np.ndarray, Sequence[int], np.ndarray]:
        """(keys, ends, pages): one int64 key per run of the prompt's full pages, each run's
        end in pages from the prompt's start (the last is the prompt's full pages), and each
        run's pages."""
        if self.unit_runs:
            keys = self._pages.keys(request)
            return keys, range(1, len(keys) + 1), np.ones(len(keys), dtype=np.int64)
        k = self._per_block
        ids = request.segment_ids
        whole, part = divmod(request.prompt_tokens // self.page_tokens, k)
        cuts = self._cuts
        if cuts.keys().isdisjoint(ids[:whole]):
            keys = [block * k for block in ids[:whole]]
            ends = self._ends[:whole]
            pages = [k] * whole
        else:
            keys, ends, pages = self._split_blocks(ids[:whole])
        if part:
            # The partial block's runs: its cuts below ``part`` (``part`` is one of them).
            block, base = ids[whole], whole * k
            start = 0
            for cut in cuts[block]:
                if cut > part:
                    break
                keys.append(block * k + start)
                ends.append(base + cut)
                pages.append(cut - start)
                start = cut
        return np.array(keys, dtype=np.int64), ends, np.array(pages, dtype=np.int64)

    def _split_blocks(self, ids: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
        k, cuts = self._per_block, self._cuts
        keys: list[int] = []
        ends: list[int] = []
        pages: list[int] = []
        for j, block in enumerate(ids):
            start = 0
            for cut in (*cuts.get(block, ()), k):
                keys.append(block * k + start)
                ends.append(j * k + cut)
                pages.append(cut - start)
                start = cut
        return keys, ends, pages
