"""Random inserts, matches, locks, evictions, backups and loadbacks against a plain model.

The model knows nothing of nodes. It records, per cached page (keyed by the token ids from
the start up to the end of that page), which device and host slots hold the page's KV, and
per prefix ending at a saved state, which device and host state slot hold it. From that alone it
predicts every match and insert exactly; evictions are the tree's choice, so the model
checks what was freed (only known, unpinned slots; nothing left behind when a request
could not be met) and then follows it. ``check_integrity()`` runs after every step.
"""

from __future__ import annotations

import copy
import itertools
from math import lcm

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kvledger.tree import (
    FULL_MAMBA,
    FULL_ONLY,
    PRUNING_TREE,
    UNIFIED_TREE,
    Component,
    RadixTree,
    Tier,
)
from kvledger.tree.walk import path_tokens as walk_tokens
from tree.radix_factories import path_nodes

CHUNK_TOKENS = 4  # a small checkpoint grid so branching points occur in short sequences
token_lists = st.lists(st.integers(0, 2), min_size=0, max_size=12)
amounts = st.integers(0, 12)


class TreeMachine(RuleBasedStateMachine):
    page_size = 1
    tree_rules = UNIFIED_TREE
    components = FULL_MAMBA

    def __init__(self) -> None:
        super().__init__()
        self.tree = RadixTree(page_size=self.page_size, mamba_chunk_tokens=CHUNK_TOKENS,
                              components=self.components, rules=self.tree_rules)
        self.dev: dict[tuple, tuple] = {}  # prefix ending a page -> its device KV slots
        self.host: dict[tuple, tuple] = {}
        self.dstate: dict[tuple, int] = {}  # prefix -> device state slot saved after it
        self.hstate: dict[tuple, int] = {}
        self.kv_slots = itertools.count()
        self.host_slots = itertools.count(100_000)
        self.state_slots = itertools.count()
        self.host_state_slots = itertools.count(100_000)
        # (receipt, pinned KV prefixes, pinned state prefix or None)
        self.receipts: list[tuple[object, set[tuple], tuple | None]] = []

    # ---- the model's predictions -----------------------------------------------------------

    def aligned(self, tokens: list[int]) -> list[int]:
        return tokens[: len(tokens) // self.page_size * self.page_size]

    def pages(self, tokens: list[int], start: int = 0, end: int | None = None) -> list[tuple]:
        """Keys of the whole pages of ``tokens[start:end]``."""
        end = len(tokens) if end is None else end
        return [tuple(tokens[:e]) for e in range(start + self.page_size, end + 1, self.page_size)]

    def hit(self, tokens: list[int]) -> int:
        """Tokens of ``tokens`` cached on either tier, in whole pages."""
        n = 0
        for page in self.pages(tokens):
            if page not in self.dev and page not in self.host:
                break
            n += self.page_size
        return n

    def expected_match(self, tokens: list[int]) -> dict:
        tokens = self.aligned(tokens)
        hit = self.hit(tokens)
        ends = self.pages(tokens, 0, hit)
        best = max([0] + [len(p) for p in ends if p in self.dstate or p in self.hstate])
        device = max([0] + [len(p) for p in ends if p in self.dstate])
        grid = lcm(CHUNK_TOKENS, self.page_size)
        floor = hit // grid * grid
        return {
            "device_indices": [s for p in self.pages(tokens, 0, device) for s in self.dev[p]],
            "full_kv_hit_length": hit,
            "host_hit_length": best - device,
            "mamba_branching_seqlen": floor if floor > best else None,
            "mamba_src_slot": self.dstate.get(tuple(tokens[:best])) if best else None,
        }

    def match(self, tokens: list[int]):
        expected = self.expected_match(tokens)
        m = self.tree.match_prefix(tokens)
        actual = m._asdict() | {"device_indices": m.device_indices.tolist()}
        assert {k: actual[k] for k in expected} == expected
        return m

    def pinned(self, tier: Tier) -> tuple[set[tuple], set[tuple]]:
        kv, states = set(), set()
        for receipt, prefixes, state in self.receipts:
            if receipt.tier is tier:
                kv |= prefixes
                if state is not None:
                    states.add(state)
        return kv, states

    # ---- rules -----------------------------------------------------------------------------

    @rule(tokens=token_lists)
    def insert(self, tokens: list[int]) -> None:
        tokens = self.aligned(tokens)
        slots = [next(self.kv_slots) for _ in tokens]
        state = next(self.state_slots)
        pages = self.pages(tokens)
        chunks = [tuple(slots[len(p) - self.page_size : len(p)]) for p in pages]
        duplicates = [s for p, c in zip(pages, chunks, strict=True) if p in self.dev for s in c]
        prefix_length = self.hit(tokens)
        done = self.tree.insert(tokens, slots, state)
        assert done.duplicate_indices.tolist() == duplicates
        assert done.prefix_length == prefix_length
        for p, c in zip(pages, chunks, strict=True):
            self.dev.setdefault(p, c)
        end = tuple(tokens)
        assert done.mamba_existed == (not tokens or end in self.dstate)
        if tokens and end not in self.dstate:
            self.dstate[end] = state

    @rule(pick=st.integers(0, 1_000), extra=token_lists)
    def insert_below_a_lock(self, pick: int, extra: list[int]) -> None:
        """An insert that starts at a device-locked node (the facade inserts from its
        request's locked node) answers and leaves the tree exactly as the walk from the
        root does: same result, same nodes, stamps, locks, eviction orders and sizes."""
        held = [r.node for r, _, _ in self.receipts if r.tier is Tier.DEVICE]
        if not held:
            return
        node = held[pick % len(held)]
        prefix = walk_tokens(node).tolist()
        tokens = prefix + self.aligned(extra)
        own = [next(self.kv_slots) for _ in range(len(tokens) - len(prefix))]
        slots = [s for p in self.pages(prefix) for s in self.dev[p]] + own  # the tree's own
        state = next(self.state_slots) if self.tree.has_state else None
        twin = copy.deepcopy(self.tree)
        want = twin.insert(tokens, slots, state)
        done = self.tree.insert(tokens, slots, state, below=node)
        assert (done.prefix_length, done.mamba_existed) == (want.prefix_length, want.mamba_existed)
        assert done.duplicate_indices.tolist() == want.duplicate_indices.tolist()
        assert walk_tokens(done.node).tolist() == walk_tokens(want.node).tolist() == tokens
        assert snapshot(self.tree) == snapshot(twin)
        pages = self.pages(tokens)
        for p in pages:
            self.dev.setdefault(p, tuple(slots[len(p) - self.page_size : len(p)]))
        end = tuple(tokens)
        if state is not None and tokens and end not in self.dstate:
            self.dstate[end] = state

    @rule(tokens=token_lists)
    def match_prefix(self, tokens: list[int]) -> None:
        self.match(tokens)

    @rule(tokens=token_lists)
    def lock(self, tokens: list[int]) -> None:
        m = self.match(tokens)
        n = m.device_hit_length
        receipt = self.tree.lock(m.last_device_node)
        assert receipt.mamba_locked == (n > 0)
        pinned = set(self.pages(tokens, 0, n))
        self.receipts.append((receipt, pinned, tuple(tokens[:n]) if n else None))

    @rule(tokens=token_lists, depth=st.integers(1, 6), tier=st.sampled_from(Tier))
    def lock_on_path(self, tokens: list[int], depth: int, tier: Tier) -> None:
        """Lock any node holding KV on ``tier`` on the path, with or without a state (chunked
        prefill locks stateless nodes; the host tier locks what a transfer reads)."""
        m = self.match(tokens)
        covered = path_nodes(self.tree, tokens[: m.full_kv_hit_length])
        nodes = [n for n in covered if n.full.values[tier] is not None][:depth]
        if not nodes:
            return
        end = sum(n.num_tokens for n in nodes)  # copies on a tier are root-connected: a prefix
        lock = {Tier.DEVICE: self.tree.lock, Tier.HOST: self.tree.lock_host}[tier]
        receipt = lock(nodes[-1])
        states = self.dstate if tier is Tier.DEVICE else self.hstate
        assert receipt.mamba_locked == (tuple(tokens[:end]) in states)
        state = tuple(tokens[:end]) if receipt.mamba_locked else None
        self.receipts.append((receipt, set(self.pages(tokens, 0, end)), state))

    @precondition(lambda self: self.receipts)
    @rule(pick=st.integers(0, 1_000))
    def unlock(self, pick: int) -> None:
        receipt, _, _ = self.receipts.pop(pick % len(self.receipts))
        self.tree.unlock(receipt)

    @rule(full_tokens=amounts, mamba_slots=st.integers(0, 3))
    def evict(self, full_tokens: int, mamba_slots: int) -> None:
        state_pages = self.device_state_node_pages()
        freed = self.tree.evict(full_tokens=full_tokens, mamba_slots=mamba_slots)
        if full_tokens == 0 and self.tree_rules.keeps_stateless_kv:
            # 0.5.21+ rules: a state eviction frees only the KV of the leaves whose state went
            # (MambaComponent._evict_device_next_node -> evict_device_leaf); stateless
            # parents keep theirs (_iteratively_delete_tombstone_ancestors).
            slot_to_kv = {s: p for p, c in self.dev.items() for s in c}
            lost = {slot_to_kv[s] for s in freed.full_indices.tolist()}
            allowed = set().union(*(state_pages[s] for s in freed.mamba_slots.tolist()))
            assert lost <= allowed, f"a state eviction freed stateless KV {lost - allowed}"
        self.follow(freed, full_tokens, mamba_slots, self.dev, self.dstate, Tier.DEVICE)

    def device_state_node_pages(self) -> dict[int, set[tuple]]:
        """Device state slot -> the page prefixes of the node holding it."""
        out: dict[int, set[tuple]] = {}
        stack = [(child, ()) for child in self.tree.root.children.values()]
        while stack:
            node, above = stack.pop()
            tokens = above + tuple(node.tokens.tolist())
            if node.mamba.value is not None:
                out[node.mamba.value] = set(self.pages(list(tokens), len(above)))
            stack.extend((child, tokens) for child in node.children.values())
        return out

    @rule(full_tokens=amounts, mamba_slots=st.integers(0, 3))
    def evict_host(self, full_tokens: int, mamba_slots: int) -> None:
        freed = self.tree.evict_host(full_tokens=full_tokens, mamba_slots=mamba_slots)
        self.follow(freed, full_tokens, mamba_slots, self.host, self.hstate, Tier.HOST)

    @rule(tier=st.sampled_from(Tier), component=st.sampled_from(Component))
    def peek_then_evict_one(self, tier: Tier, component: Component) -> None:
        """The node peek_eviction names is exactly the one a one-unit eviction takes."""
        victim = self.tree.peek_eviction(tier, component)
        sizes = self.tree.sizes(tier)
        assert self.tree.peek_eviction(tier, component) is victim and self.tree.sizes(tier) == sizes
        full = component is Component.FULL
        evict = self.tree.evict if tier is Tier.DEVICE else self.tree.evict_host
        freed = evict(full_tokens=int(full), mamba_slots=int(not full))
        kv, states = (self.dev, self.dstate) if tier is Tier.DEVICE else (self.host, self.hstate)
        self.follow(freed, int(full), int(not full), kv, states, tier)
        if victim is None:
            assert (freed.num_full_tokens if full else freed.num_mamba_slots) == 0
        else:
            assert victim.component(component).values[tier] is None, "another victim went"

    def follow(self, freed, full_tokens, mamba_slots, kv: dict, states: dict, tier: Tier) -> None:
        pinned_kv, pinned_states = self.pinned(tier)
        slot_to_kv = {s: p for p, c in kv.items() for s in c}
        slot_to_state = {s: p for p, s in states.items()}
        freed_kv = set(freed.full_indices.tolist())
        assert len(freed_kv) == freed.num_full_tokens, "a KV slot was freed twice"
        for prefix in {slot_to_kv[s] for s in freed_kv}:  # KeyError: a slot never held
            assert set(kv[prefix]) <= freed_kv, f"freed part of the page at {prefix}"
            assert prefix not in pinned_kv, f"freed pinned KV at {prefix}"
            del kv[prefix]
        for slot in freed.mamba_slots.tolist():
            prefix = slot_to_state.pop(slot)
            assert prefix not in pinned_states, f"freed pinned state at {prefix}"
            del states[prefix]
        if freed.num_full_tokens < full_tokens:
            extended = {p[: -self.page_size] for p in kv}
            leaves = [p for p in kv if p not in extended and p not in pinned_kv]
            assert not leaves, f"stopped short with unpinned {tier.value} leaves {leaves}"
        if freed.num_mamba_slots < mamba_slots:
            assert set(states) <= pinned_states, f"stopped short with unpinned {tier.value} states"

    @rule(tokens=token_lists, depth=st.integers(1, 6), with_state=st.booleans())
    def backup(self, tokens: list[int], depth: int, with_state: bool) -> None:
        m = self.match(tokens)
        start = 0
        for node in path_nodes(self.tree, tokens[: m.full_kv_hit_length])[:depth]:
            end = start + node.num_tokens
            if node.full.host_value is None:
                slots = [next(self.host_slots) for _ in range(node.num_tokens)]
                self.tree.set_host_value(node, Component.FULL, slots)
                for p in self.pages(tokens, start, end):
                    self.host[p] = tuple(slots[len(p) - self.page_size - start : len(p) - start])
            if with_state and node.mamba.value is not None and node.mamba.host_value is None:
                slot = next(self.host_state_slots)
                self.tree.set_host_value(node, Component.MAMBA, slot)
                self.hstate[tuple(tokens[:end])] = slot
            start = end

    @rule(tokens=token_lists)
    def loadback(self, tokens: list[int]) -> None:
        m = self.match(tokens)
        start = 0
        for node in path_nodes(self.tree, tokens[: m.full_kv_hit_length]):
            end = start + node.num_tokens
            if node.full.value is None:
                slots = [next(self.kv_slots) for _ in range(node.num_tokens)]
                self.tree.restore_device_value(node, Component.FULL, slots)
                for p in self.pages(tokens, start, end):
                    self.dev[p] = tuple(slots[len(p) - self.page_size - start : len(p) - start])
            if node is m.best_match_node and node.mamba.value is None:
                slot = next(self.state_slots)
                self.tree.restore_device_value(node, Component.MAMBA, slot)
                self.dstate[tuple(tokens[:end])] = slot
            start = end

    # ---- invariants ------------------------------------------------------------------------

    @invariant()
    def tree_is_consistent(self) -> None:
        self.tree.check_integrity()

    @invariant()
    def sizes_match_the_model(self) -> None:
        page = self.page_size
        for tier, kv, states in (
            (Tier.DEVICE, self.dev, self.dstate),
            (Tier.HOST, self.host, self.hstate),
        ):
            s = self.tree.sizes(tier)
            pinned_kv, pinned_states = self.pinned(tier)
            assert pinned_kv <= set(kv)
            assert (s.full_tokens, s.full_protected_tokens) == (
                page * len(kv),
                page * len(pinned_kv),
            )
            assert (s.mamba_slots, s.mamba_protected_slots) == (len(states), len(pinned_states))


def snapshot(tree: RadixTree):
    """Everything an insert can change, comparable across copies of one tree."""
    rows = []
    stack = [(tree.root, ())]
    while stack:
        node, above = stack.pop()
        path = above + tuple(node.tokens.tolist())
        rows.append((path, node.id, node.last_access, node.alive,
                     [None if v is None else v.tolist() for v in node.full.values],
                     [None if v is None else int(v) for v in node.mamba.values],
                     list(node.full.locks), list(node.mamba.locks), list(node.num_children_on)))
        stack.extend((child, path) for child in node.children.values())
    books = [(book.sizes(), sorted((n.id, stamp) for n, stamp in book.leaves._pushed.items()),
              [n.id for n in book.states]) for book in tree.books]
    return sorted(rows), tree._clock, books


class TreeMachinePage2(TreeMachine):
    page_size = 2


class PruningTreeMachine(TreeMachine):
    """SGLang 0.5.20's rules: stateless parents are pruned with their KV."""

    tree_rules = PRUNING_TREE


class FullOnlyTreeMachine(TreeMachine):
    """No state component: every cached page is a match point (SGLang RadixCache)."""

    page_size = 2
    components = FULL_ONLY

    def expected_match(self, tokens: list[int]) -> dict:
        tokens = self.aligned(tokens)
        hit = self.hit(tokens)
        device = 0
        for page in self.pages(tokens, 0, hit):
            if page not in self.dev:
                break
            device += self.page_size
        return {
            "device_indices": [s for p in self.pages(tokens, 0, device) for s in self.dev[p]],
            "full_kv_hit_length": hit,
            "host_hit_length": hit - device,
            "mamba_branching_seqlen": None,
            "mamba_src_slot": None,
        }

    @rule(tokens=token_lists)
    def insert(self, tokens: list[int]) -> None:
        tokens = self.aligned(tokens)
        slots = [next(self.kv_slots) for _ in tokens]
        pages = self.pages(tokens)
        chunks = [tuple(slots[len(p) - self.page_size : len(p)]) for p in pages]
        duplicates = [s for p, c in zip(pages, chunks, strict=True) if p in self.dev for s in c]
        done = self.tree.insert(tokens, slots)
        assert done.duplicate_indices.tolist() == duplicates and not done.mamba_existed
        for p, c in zip(pages, chunks, strict=True):
            self.dev.setdefault(p, c)

    @rule(tokens=token_lists)
    def lock(self, tokens: list[int]) -> None:
        m = self.match(tokens)
        n = m.device_hit_length
        receipt = self.tree.lock(m.last_device_node)
        assert not receipt.mamba_locked
        self.receipts.append((receipt, set(self.pages(tokens, 0, n)), None))

    @rule(full_tokens=amounts)
    def evict(self, full_tokens: int) -> None:
        freed = self.tree.evict(full_tokens=full_tokens)
        self.follow(freed, full_tokens, 0, self.dev, self.dstate, Tier.DEVICE)

    @rule(full_tokens=amounts)
    def evict_host(self, full_tokens: int) -> None:
        freed = self.tree.evict_host(full_tokens=full_tokens)
        self.follow(freed, full_tokens, 0, self.host, self.hstate, Tier.HOST)

    @rule(tier=st.sampled_from(Tier), component=st.sampled_from(Component))
    def peek_then_evict_one(self, tier: Tier, component: Component) -> None:
        if component is Component.MAMBA:
            assert self.tree.peek_eviction(tier, component) is None
            return
        super().peek_then_evict_one(tier, component)

    @rule(tokens=token_lists, depth=st.integers(1, 6), with_state=st.just(False))
    def backup(self, tokens: list[int], depth: int, with_state: bool) -> None:
        super().backup(tokens, depth, with_state)

    @rule(tokens=token_lists)
    def loadback(self, tokens: list[int]) -> None:
        m = self.match(tokens)
        start = 0
        for node in path_nodes(self.tree, tokens[: m.full_kv_hit_length]):
            end = start + node.num_tokens
            if node.full.value is None:
                slots = [next(self.kv_slots) for _ in range(node.num_tokens)]
                self.tree.restore_device_value(node, Component.FULL, slots)
                for p in self.pages(tokens, start, end):
                    self.dev[p] = tuple(slots[len(p) - self.page_size - start : len(p) - start])
            start = end


_settings = settings(max_examples=80, stateful_step_count=40, deadline=None)


class TestTreePage1(TreeMachine.TestCase):
    settings = _settings


class TestTreePage2(TreeMachinePage2.TestCase):
    settings = _settings


class TestPruningTree(PruningTreeMachine.TestCase):
    settings = _settings


class TestFullOnlyTree(FullOnlyTreeMachine.TestCase):
    settings = _settings
