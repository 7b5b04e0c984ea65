"""Figure 2 of the article: bytes per token by component, for each KV dtype and row layout.

Each bar is one token ledger (all full layers of one rank): the KV rows, then the index keys
as reserved. The hatched part of the index-key segment is what is actually written (one pooled
key per kpool tokens). Variants are re-resolved from the plan's model and deployment, so the
bars are the ledgers `kvledger plan` would print for those flags; the article's two releases,
which reserve index keys differently, get their own bars (the plan's own rule set first).
"""

from __future__ import annotations

from dataclasses import replace

from matplotlib.figure import Figure

from kvledger.model.arch import AttnKind
from kvledger.report.figures.canvas import PALETTE, count_axis, new_figure
from kvledger.sglang.deploy import DeploymentError, DsaBackend, KVDtype
from kvledger.sglang.ledger import Ledger, token_ledger
from kvledger.sglang.plan import SglangPlan
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES

# the releases the article compares (SPEC §2): 0.5.21's full index rows, 0.5.23's pooled ones
ARTICLE_RULE_SETS = ("sglang-0.5.21", "sglang-0.5.23")


def _variants(plan: SglangPlan) -> list[tuple[str, Ledger]]:
    lay = plan.layout
    dep = replace(lay.deployment, page_size=None)
    flavours = [("bf16", KVDtype.BF16, dep.dsa_backend)]
    match lay.model.attn:
        case AttnKind.DSA:
            flavours += [("fp8 scaled", KVDtype.FP8_E4M3, DsaBackend.FLASHMLA_SPARSE),
                         ("fp8 raw (TRT-LLM)", KVDtype.FP8_E4M3, DsaBackend.TRTLLM)]
            rule_sets = [lay.rules, *(RULES[name] for name in ARTICLE_RULE_SETS
                                      if name != lay.rules.name)]
        case _:
            flavours.append(("fp8", KVDtype.FP8_E4M3, dep.dsa_backend))
            rule_sets = [lay.rules]
    out = []
    for rules in rule_sets:
        for label, dtype, backend in flavours:
            try:
                variant = resolve(lay.model, replace(dep, kv_cache_dtype=dtype, dsa_backend=backend),
                                  rules)
            except DeploymentError:
                continue
            tag = f"{label}\n{rules.name}" if len(rule_sets) > 1 else label
            out.append((tag, token_ledger(variant)))
    return out


def token_bytes(plan: SglangPlan) -> Figure:
    variants = _variants(plan)
    fig = new_figure(7.5, 0.55 * len(variants) + 1.6)
    ax = fig.add_subplot()
    labels = []
    for y, (label, ledger) in enumerate(variants):
        labels.append(label)
        kv = ledger.rows[0].total_bytes
        ax.barh(y, kv, color=PALETTE["kv"], height=0.6)
        ax.text(kv / 2, y, f"KV {kv:,}", ha="center", va="center", color="white", fontsize=8)
        total = kv
        if len(ledger.rows) > 1:
            reserved = ledger.rows[1].total_bytes
            ax.barh(y, reserved, left=kv, color=PALETTE["indexer"], height=0.6)
            if ledger.memo:
                written = ledger.memo[0].total_bytes
                ax.barh(y, written, left=kv, color="none", edgecolor=PALETTE["indexer_written"],
                        hatch="///", height=0.6, linewidth=0)
            total += reserved
            ax.text(total, y, f"  + index {reserved:,} = {total:,} B", va="center", fontsize=8)
        else:
            ax.text(total, y, f"  {total:,} B", va="center", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("bytes per token on one rank (all full layers)")
    count_axis(ax.xaxis)
    ax.set_xlim(0, max(r.total_bytes for _, r in variants) * 1.45)
    model = plan.model
    # Only a model with a DSA indexer has index keys to hatch (Nemotron-H has none).
    keys = "; hatched = index-key bytes actually written" if plan.layout.index_key else ""
    ax.set_title(f"{model.name}: bytes per token by KV dtype and row layout\n"
                 f"{model.num_full_layers} full layers{keys}")
    return fig
