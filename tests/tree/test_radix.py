"""Scripted scenarios for RadixTree: what an engine developer checks before trusting a tree.

Behaviour follows SGLang's unified radix cache (mem_cache/unified_cache): a match only reuses
KV up to the deepest node with a MAMBA state, `mamba_branching_seqlen` is the FULL hit floored
to lcm(64, page) when beyond that node (MambaComponent.finalize_match_result_in_tree_core,
runtime_context.mamba_checkpoint_grid), and a split parent gets no state
(MambaComponent.redistribute_on_node_split).
"""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.tree import RadixTree, format_tree
from tree.radix_factories import Slots, insert_fresh, strip


@pytest.fixture
def kv() -> Slots:
    return Slots(start=0)


@pytest.fixture
def states() -> Slots:
    return Slots(start=0)


def test_shared_system_prompt_needs_a_checkpoint_before_it_hits(kv, states):
    tree = RadixTree(page_size=4)
    system = strip(1000, 200)
    first = np.r_[system, strip(5000, 40)]
    second = np.r_[system, strip(6000, 32)]
    third = np.r_[system, strip(7000, 12)]

    assert tree.match_prefix(first).full_kv_hit_length == 0
    done = insert_fresh(tree, first, kv, states)
    assert (done.prefix_length, len(done.duplicate_indices), done.mamba_existed) == (0, 0, False)

    # The second request shares 200 tokens of KV but no state sits at token 200: nothing
    # is reusable, and the scheduler is told to checkpoint at 192 = 200 floored to 64.
    m = tree.match_prefix(second)
    assert (m.full_kv_hit_length, m.device_hit_length, m.host_hit_length) == (200, 0, 0)
    assert m.mamba_branching_seqlen == 192
    assert m.mamba_src_slot is None and m.best_match_node is tree.root

    # It recomputes everything, saves a state at 192, then caches the whole request.
    own = kv.take(len(second))
    ckpt = tree.insert(second[:192], own[:192], states.one())
    assert (ckpt.prefix_length, ckpt.mamba_existed) == (192, False)
    assert ckpt.duplicate_indices.tolist() == own[:192].tolist()
    own[:192] = tree.path_device_indices(ckpt.node)
    assert own[:192].tolist() == list(range(192))  # the first request's slots
    done = tree.insert(second, own, states.one())
    assert done.prefix_length == 200
    assert done.duplicate_indices.tolist() == own[192:200].tolist()

    # A third request now reuses the 192 checkpointed tokens and copies state slot 1.
    m = tree.match_prefix(third)
    assert (m.full_kv_hit_length, m.device_hit_length, m.mamba_src_slot) == (200, 192, 1)
    assert m.mamba_branching_seqlen is None  # 200 floors to 192: no deeper grid point
    assert m.device_indices.tolist() == list(range(192))
    sizes = tree.sizes()
    assert (sizes.full_tokens, sizes.mamba_slots) == (240 + 32, 3)
    tree.check_integrity()


def test_branching_multi_turn_conversation(kv, states):
    tree = RadixTree(page_size=1)
    turn1 = strip(0, 100)
    turn2 = np.r_[turn1, strip(100, 80)]
    regenerated = np.r_[turn2[:150], strip(900, 30)]

    insert_fresh(tree, turn1, kv, states)
    m = tree.match_prefix(turn2)
    assert (m.device_hit_length, m.mamba_src_slot, m.mamba_branching_seqlen) == (100, 0, None)
    indices = np.r_[m.device_indices, kv.take(80)]
    done = tree.insert(turn2, indices, states.one())
    assert (done.prefix_length, len(done.duplicate_indices), done.mamba_existed) == (100, 0, False)

    # Regenerating turn 2 from token 150: KV hits 150 tokens, the last state is at 100,
    # so the scheduler should checkpoint at 128 (150 floored to 64).
    m = tree.match_prefix(regenerated)
    assert (m.full_kv_hit_length, m.device_hit_length, m.mamba_branching_seqlen) == (150, 100, 128)
    assert m.mamba_src_slot == 0
    assert [n.num_tokens for n in (m.best_match_node, *m.best_match_node.children.values())] == [
        100,
        50,
    ]
    tree.check_integrity()


@pytest.mark.parametrize(
    ("page_size", "diverge_at", "hit", "branch"),
    [
        (48, 400, 384, 384),  # grid lcm(64, 48) = 192; 400 -> 8 pages = 384 = 2 grid points
        (48, 380, 336, 192),  # 380 -> 7 pages = 336 -> one grid point
        (64, 130, 128, 128),  # grid 64
        (1, 63, 63, None),  # below the first grid point: nowhere to checkpoint
        (32, 100, 96, 64),  # grid lcm(64, 32) = 64
    ],
)
def test_mamba_branching_seqlen_is_the_hit_floored_to_the_checkpoint_grid(
    kv, states, page_size, diverge_at, hit, branch
):
    tree = RadixTree(page_size=page_size)
    cached = strip(0, 1920)  # whole pages for every page size here
    insert_fresh(tree, cached, kv, states)
    query = np.r_[cached[:diverge_at], strip(10_000, 100)]
    m = tree.match_prefix(query)
    assert (m.full_kv_hit_length, m.device_hit_length, m.mamba_branching_seqlen) == (hit, 0, branch)
    tree.check_integrity()


def test_partial_match_splits_and_keeps_lock_and_state_on_the_child(kv, states):
    tree = RadixTree(page_size=1)
    leaf = insert_fresh(tree, strip(0, 100), kv, states).node
    receipt = tree.lock(leaf)
    assert tree.sizes().full_protected_tokens == 100

    m = tree.match_prefix(np.r_[strip(0, 40), [7, 7]])
    parent = leaf.parent
    assert (parent.num_tokens, leaf.num_tokens) == (40, 60)
    assert parent.full.value.tolist() == list(range(40))
    assert leaf.full.value.tolist() == list(range(40, 100))
    assert (parent.full.lock_ref, leaf.full.lock_ref) == (1, 1)
    assert (parent.mamba.value, leaf.mamba.value, leaf.mamba.lock_ref) == (None, 0, 1)
    assert m.best_match_node is tree.root and m.full_kv_hit_length == 40
    sizes = tree.sizes()
    assert (sizes.full_protected_tokens, sizes.full_evictable_tokens) == (100, 0)
    tree.check_integrity()

    tree.unlock(receipt)  # replays along the new, longer path
    sizes = tree.sizes()
    assert (sizes.full_protected_tokens, sizes.full_evictable_tokens) == (0, 100)
    assert (parent.full.lock_ref, leaf.full.lock_ref, leaf.mamba.lock_ref) == (0, 0, 0)
    tree.check_integrity()


def test_lock_receipt_replays_only_what_was_locked(kv, states):
    tree = RadixTree(page_size=1)
    insert_fresh(tree, strip(0, 10), kv, states)
    insert_fresh(tree, np.r_[strip(0, 5), [99]], kv, states)  # splits at 5: no state there
    tombstone = tree.match_prefix(strip(0, 5)).best_match_node
    assert tombstone is tree.root
    middle = tree.root.children[strip(0, 1).tobytes()]
    receipt = tree.lock(middle)
    assert not receipt.mamba_locked
    # A state arrives while the node is locked; unlocking must not release a lock on it.
    assert not tree.insert(strip(0, 5), middle.full.value, states.one()).mamba_existed
    assert middle.mamba.lock_ref == 0
    tree.unlock(receipt)
    assert (middle.full.lock_ref, middle.mamba.lock_ref) == (0, 0)
    tree.check_integrity()
    with pytest.raises(ValueError, match="not an outstanding receipt"):
        tree.unlock(receipt)


def test_lock_and_unlock_are_symmetric_over_many_receipts(kv, states):
    tree = RadixTree(page_size=1)
    a = insert_fresh(tree, strip(0, 30), kv, states).node
    b = insert_fresh(tree, np.r_[strip(0, 10), strip(50, 20)], kv, states).node
    receipts = [tree.lock(a), tree.lock(b), tree.lock(a), tree.lock(a.parent)]
    sizes = tree.sizes()
    assert (sizes.full_protected_tokens, sizes.mamba_protected_slots) == (50, 2)
    assert a.parent.full.lock_ref == 4  # both paths and the direct lock pass through it
    for receipt in reversed(receipts):
        tree.unlock(receipt)
    sizes = tree.sizes()
    assert (sizes.full_evictable_tokens, sizes.full_protected_tokens) == (50, 0)
    assert (sizes.mamba_evictable_slots, sizes.mamba_protected_slots) == (2, 0)
    tree.check_integrity()


def test_insert_returns_the_callers_duplicates_and_keeps_existing_state(kv, states):
    tree = RadixTree(page_size=2)
    first = tree.insert(strip(0, 8), strip(100, 8), 3)
    again = tree.insert(strip(0, 8), strip(200, 8), 4)
    assert (again.prefix_length, again.mamba_existed, again.node is first.node) == (8, True, True)
    assert again.duplicate_indices.tolist() == strip(200, 8).tolist()
    # Passing the tree's own slots back is not a duplicate.
    same = tree.insert(strip(0, 8), strip(100, 8), 5)
    assert len(same.duplicate_indices) == 0 and same.mamba_existed
    empty = tree.insert([], [], 6)
    assert (empty.prefix_length, empty.mamba_existed, empty.node is tree.root) == (0, True, True)
    assert tree.sizes().mamba_slots == 1
    tree.check_integrity()


def test_match_floors_to_whole_pages_and_reads_back_stored_slots(kv, states):
    tree = RadixTree(page_size=4)
    tree.insert(strip(0, 12), strip(500, 12), 0)
    m = tree.match_prefix(strip(0, 11))  # 2 whole pages
    assert (m.full_kv_hit_length, m.device_hit_length) == (8, 0)
    m = tree.match_prefix(strip(0, 15))  # 3 whole pages: the full node, with its state
    assert m.device_indices.tolist() == strip(500, 12).tolist()
    assert not m.device_indices.flags.writeable
    assert tree.match_prefix(strip(0, 3)).full_kv_hit_length == 0
    tree.check_integrity()


def test_one_million_token_prefix_matches_whole(kv, states):
    tree = RadixTree(page_size=64)
    tokens = np.random.default_rng(0).integers(0, 150_000, 1 << 20)
    tree.insert(tokens, np.arange(1 << 20), 0)
    m = tree.match_prefix(np.r_[tokens, [1, 2, 3]])
    assert (m.device_hit_length, m.mamba_src_slot) == (1 << 20, 0)
    assert m.device_indices[-1] == (1 << 20) - 1
    tree.check_integrity()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.match_prefix(np.zeros((2, 2), dtype=np.int64)), "tokens: expected a 1-D"),
        (lambda t: t.match_prefix(np.array([1.5, 2.0])), "tokens: expected integer"),
        (lambda t: t.insert([1, 2, 3], [0, 1, 2], 0), "not a whole number of pages"),
        (lambda t: t.insert([1, 2], [0], 0), "full_indices: expected one slot per token"),
        (lambda t: t.insert([1, 2], [0, 1], -1), "mamba_slot: slot index must be >= 0"),
        (lambda t: t.insert([1, 2], [0, 1], True), "mamba_slot: expected one integer"),
        (lambda t: t.evict(full_tokens=-1), "full_tokens: expected a non-negative"),
        (lambda t: t.evict(mamba_slots=2.0), "mamba_slots: expected a non-negative"),
        (lambda t: t.lock("node"), "lock: expected a live node"),
        (lambda t: t.lock(RadixTree(page_size=2).root), "belongs to another tree"),
    ],
)
def test_bad_input_fails_with_the_argument_named(call, message):
    tree = RadixTree(page_size=2)
    with pytest.raises(ValueError, match=message):
        call(tree)


@pytest.mark.parametrize("page_size", [0, -64, 1.5, True])
def test_page_size_must_be_a_positive_integer(page_size):
    with pytest.raises(ValueError, match="page_size: expected a positive integer"):
        RadixTree(page_size=page_size)


def test_printer_shows_residency_and_locks(kv, states):
    tree = RadixTree(page_size=1)
    node = insert_fresh(tree, strip(0, 6), kv, states).node
    tree.lock(node)
    assert format_tree(tree).splitlines() == [
        "root  page_size=1  FULL 6 tok (0 evictable)  MAMBA 1 slots (0 evictable)",
        "└── #1 [0 1 2 3 …] 6 tok  FULL D(lock 1)  MAMBA D=0(lock 1)",
    ]


def test_insert_below_a_held_node_compares_only_the_suffix_and_refuses_a_foreign_one(kv, states):
    """The facade inserts from its request's locked node: the prefix above it is the tree's
    own KV, so only the new suffix is walked. A node off the tokens' path, one whose KV left
    the device, or one of another tree is refused by name."""
    tree = RadixTree(page_size=4)
    first = strip(0, 16)
    done = insert_fresh(tree, first, kv, states)
    receipt = tree.lock(done.node)
    longer = np.r_[first, strip(100, 8)]
    more = tree.insert(longer, np.r_[tree.path_device_indices(done.node), kv.take(8)],
                       states.one(), below=done.node)
    assert (more.prefix_length, len(more.duplicate_indices), more.mamba_existed) == (16, 0, False)
    assert more.node.parent is done.node and tree.match_prefix(longer).device_hit_length == 24
    with pytest.raises(ValueError, match="is not on the path of the tokens"):
        tree.insert(strip(500, 24), kv.take(24), states.one(), below=done.node)
    with pytest.raises(ValueError, match="belongs to another tree"):
        RadixTree(page_size=4).insert(longer, kv.take(24), states.one(), below=done.node)
    tree.unlock(receipt)
    tree.evict(full_tokens=24)
    with pytest.raises(ValueError, match="is not a device-resident path"):
        tree.insert(longer, kv.take(24), states.one(), below=done.node)
    tree.check_integrity()
