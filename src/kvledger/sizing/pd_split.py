"""A prefill/decode split of N nodes: how many nodes decode, how many prefill.

SGLang sizes each role's servers on their own (`kvledger.sglang.roles`: the decode server's
radix cache is forced off, its extra request rows, its own memory fraction); a split of N
nodes gives d to decode servers and N − d to prefill servers, each role laid out as
`recommend --nodes` lays out its nodes (tp 8 or 16 × pipeline stages × replicas, DP attention
or DCP). Memory decides two things and kvledger answers only those:
- the decode side holds the workload: R running requests of C tokens over its d nodes;
- the prefill side holds a prompt: one request of C tokens on its servers.
A split fits when both hold. Of the splits that fit, the answer is the one with the fewest
decode nodes, leaving the most to prefill (where a prompt's compute goes); how many prefill
nodes a prompt rate needs is a throughput question, not a memory one, and is not answered.

Example (DeepSeek-V3.2, 8 nodes of B200, 512 requests of 128k tokens): the decode side needs
enough nodes to hold 512 × 131,072 tokens; every split with fewer decode nodes says why not.
The `--json` document is `kvledger.recommend-pd/1`: model, gpu, nodes, requests,
context_tokens, best (the answer's ratio, `5P:3D`, or null) and splits (ratio, fits, and per
side its nodes, fits, why and the layout as a `kvledger.recommend/1` fit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kvledger.core.envelope import envelope
from kvledger.core.runner import SERIAL, Runner
from kvledger.core.terms import MemoryTerms
from kvledger.sglang.deploy import Deployment, DisaggMode
from kvledger.sglang.rules import DEFAULT_RULES
from kvledger.sizing.documents import recommendation_json
from kvledger.sizing.recommend import Recommendation, Recommendations, recommend


@dataclass(frozen=True, slots=True, kw_only=True)
class Side:
    """One role's best layout on its nodes, or why none holds what the role must."""
    nodes: int
    best: Recommendation | None
    why: str | None  # the most common reason when nothing fits

    @property
    def fits(self) -> bool:
        return self.best is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class PdSplit:
    prefill: Side
    decode: Side

    @property
    def fits(self) -> bool:
        return self.prefill.fits and self.decode.fits

    @property
    def ratio(self) -> str:
        return f"{self.prefill.nodes}P:{self.decode.nodes}D"


@dataclass(frozen=True, slots=True, kw_only=True)
class PdSplits(Sequence[PdSplit]):
    model: str
    gpu: str
    nodes: int
    requests: int
    context_tokens: int
    splits: tuple[PdSplit, ...]  # decode nodes 1 … N − 1
    notes: tuple[str, ...] = ()

    def __getitem__(self, index):  # type: ignore[override]
        return self.splits[index]

    def __len__(self) -> int:
        return len(self.splits)

    @property
    def best(self) -> PdSplit | None:
        """The fitting split with the fewest decode nodes (module doc)."""
        return next((s for s in self.splits if s.fits), None)

    def to_json(self, ignored_flags: tuple[str, ...] = ()) -> dict[str, Any]:
        def side(s: Side) -> dict[str, Any]:
            return {"nodes": s.nodes, "fits": s.fits, "why": s.why,
                    "layout": recommendation_json(s.best) if s.best else None}

        best = self.best
        return envelope("recommend-pd", {
            "model": self.model, "gpu": self.gpu, "nodes": self.nodes,
            "requests": self.requests, "context_tokens": self.context_tokens,
            "best": best.ratio if best else None,
            "splits": [{"ratio": s.ratio, "fits": s.fits, "prefill": side(s.prefill),
                        "decode": side(s.decode)} for s in self.splits]},
            ignored_flags=ignored_flags, notes=self.notes)


def _side(rec: Recommendations, nodes: int) -> Side:
    why = None if rec.fits else (rec.failures[0][0] if rec.failures else "not planned")
    return Side(nodes=nodes, best=rec.best, why=why)


def pd_splits(model: str, *, requests: int, context_tokens: int, gpu: str, nodes: int,
              base: Deployment | None = None, rules: str = DEFAULT_RULES,
              terms: MemoryTerms | None = None, runner: Runner = SERIAL) -> PdSplits:
    """Every split of `nodes` into prefill and decode nodes (module doc), decode nodes 1 … N − 1."""
    if nodes < 2:
        raise ValueError(f"--nodes {nodes}: a prefill/decode split needs at least 2 nodes")
    base = base or Deployment()
    if base.disaggregation_mode is not DisaggMode.NULL:
        raise ValueError(f"--disaggregation-mode {base.disaggregation_mode.value}: --pd sets "
                         "each side's role itself")
    roles = {mode: replace(base, disaggregation_mode=mode)
             for mode in (DisaggMode.PREFILL, DisaggMode.DECODE)}
    splits, notes = [], []
    for decode_nodes in range(1, nodes):
        sides = {}
        for mode, need, count in ((DisaggMode.DECODE, requests, decode_nodes),
                                  (DisaggMode.PREFILL, 1, nodes - decode_nodes)):
            rec = recommend(model, requests=need, context_tokens=context_tokens, gpus=(gpu,),
                            base=roles[mode], rules=rules, top=1, terms=terms, runner=runner,
                            nodes=count)
            notes += rec.notes
            sides[mode] = _side(rec, count)
        splits.append(PdSplit(prefill=sides[DisaggMode.PREFILL], decode=sides[DisaggMode.DECODE]))
    # the notes behind the answer's two layouts; every candidate's only when none fits
    best = next((s for s in splits if s.fits), None)
    if best is not None:
        notes = [n for side in (best.decode, best.prefill) for n in side.best.notes]
    return PdSplits(model=model, gpu=gpu, nodes=nodes, requests=requests,
                    context_tokens=context_tokens, splits=tuple(splits),
                    notes=tuple(dict.fromkeys(notes)))
