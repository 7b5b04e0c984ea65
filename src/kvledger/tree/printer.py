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

if TYPE_CHECKING:
    from kvledger.tree.node import Node
    from kvledger.tree.radix import RadixTree


def _tokens(node: Node, max_ids: int) -> str:
    ids = node.tokens[:max_ids].tolist()
    more = " …" if node.num_tokens > max_ids else ""
    return "[" + " ".join(map(str, ids)) + more + "]"


def _where(device: object, host: object, lock: int, host_lock: int, show_slot: bool) -> str:
    parts = []
    if device is not None:
        parts.append(f"D={device}" if show_slot else "D")
        if lock:
            parts[-1] += f"(lock {lock})"
    if host is not None:
        parts.append(f"H={host}" if show_slot else "H")
        if host_lock:
            parts[-1] += f"(lock {host_lock})"
    return "+".join(parts) or "-"


def describe_node(node: Node, max_ids: int = 4) -> str:
    full, state = node.full, node.mamba
    kv = _where(full.value, full.host_value, full.lock_ref, full.host_lock_ref, False)
    st = _where(state.value, state.host_value, state.lock_ref, state.host_lock_ref, True)
    return f"#{node.id} {_tokens(node, max_ids)} {node.num_tokens} tok  FULL {kv}  MAMBA {st}"


def format_tree(tree: RadixTree, max_ids: int = 4) -> str:
    """The whole tree, one node per line, with a header of device sizes."""
    s = tree.sizes()
    lines = [
        f"root  page_size={tree.page_size}  FULL {s.full_device_tokens} tok "
        f"({s.full_evictable_tokens} evictable)  MAMBA {s.mamba_device_slots} slots "
        f"({s.mamba_evictable_slots} evictable)"
        + (
            f"  host FULL {s.host_full_tokens} tok, MAMBA {s.host_mamba_slots}"
            if s.host_full_tokens
            else ""
        )
    ]
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
