"""A text picture of a radix tree, for debugging and docs.

Each line is one node: id, token span (first ids shown), then per component where it lives
(``D`` device, ``H`` host, ``-`` nowhere) with its locks. Children are ordered by first page.

>>> from kvledger.tree.radix import RadixTree
>>> tree = RadixTree(page_size=2)
>>> _ = tree.insert([1, 2, 3, 4], full_indices=[10, 11, 12, 13], mamba_slot=0)
>>> _ = tree.insert([1, 2, 7, 8], full_indices=[20, 21, 22, 23], mamba_slot=1)
>>> print(format_tree(tree))
root  page_size=2  FULL 6 tok (6 evictable)  MAMBA 2 slots (2 evictable)
└── #2 [1 2] 2 tok  FULL D  MAMBA -
    ├── #1 [3 4] 2 tok  FULL D  MAMBA D=0
    └── #3 [7 8] 2 tok  FULL D  MAMBA D=1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.tree.node import ComponentData, Node, Tier

if TYPE_CHECKING:
    from kvledger.tree.radix import RadixTree


def _tokens(node: Node, max_ids: int) -> str:
    ids = node.tokens[:max_ids].tolist()
    more = " …" if node.num_tokens > max_ids else ""
    return "[" + " ".join(map(str, ids)) + more + "]"


def _where(data: ComponentData, show_slot: bool) -> str:
    parts = []
    for tier, value in enumerate(data.values):
        if value is not None:
            letter = "DH"[tier]
            lock = data.locks[tier]
            parts.append(f"{letter}={value}" if show_slot else letter)
            parts[-1] += f"(lock {lock})" if lock else ""
    return "+".join(parts) or "-"


def describe_node(node: Node, max_ids: int = 4) -> str:
    kv, state = _where(node.full, False), _where(node.mamba, True)
    return f"#{node.id} {_tokens(node, max_ids)} {node.num_tokens} tok  FULL {kv}  MAMBA {state}"


def format_tree(tree: RadixTree, max_ids: int = 4) -> str:
    """The whole tree, one node per line, with a header of sizes per tier."""
    d, h = tree.sizes(Tier.DEVICE), tree.sizes(Tier.HOST)
    header = (
        f"root  page_size={tree.page_size}  FULL {d.full_tokens} tok "
        f"({d.full_evictable_tokens} evictable)  MAMBA {d.mamba_slots} slots "
        f"({d.mamba_evictable_slots} evictable)"
    )
    if h.full_tokens:
        header += f"  host: FULL {h.full_tokens} tok, MAMBA {h.mamba_slots} slots"
    lines = [header]
    stack = [
        (child, "", i == 0) for i, child in enumerate(_ordered(tree.root, tree.page_size)[::-1])
    ]
    while stack:
        node, indent, last = stack.pop()
        lines.append(f"{indent}{'└── ' if last else '├── '}{describe_node(node, max_ids)}")
        below = indent + ("    " if last else "│   ")
        kids = _ordered(node, tree.page_size)
        stack.extend(
            (child, below, i == len(kids) - 1) for i, child in reversed(list(enumerate(kids)))
        )
    return "\n".join(lines)


def _ordered(node: Node, page_size: int) -> list[Node]:
    return sorted(node.children.values(), key=lambda child: child.tokens[:page_size].tolist())
