"""The facade's ownership law (`kvledger.cache.integrity`): each way an id or a total can go
wrong is caught, by name, and a healthy cache passes."""

from __future__ import annotations

import numpy as np
import pytest

from cache.cache_factories import Keys, accounting_cache, run_request
from kvledger.cache.integrity import check_ownership


def _cache_with_a_running_request():
    cache = accounting_cache()
    keys = Keys(cache)
    prompt = np.arange(40)
    run_request(cache, keys, prompt, new=2)  # the tree now holds 2 pages and a state
    seq = cache.admit(keys(prompt), prompt_tokens=40, final_tokens=41)
    assert seq.usable_hit_tokens == 32
    cache.extend(seq, 8)  # one own page allocated on top of the tree's two
    check_ownership(cache)
    return cache, seq


def test_a_leaked_page_fails_the_token_page_check():
    cache, _ = _cache_with_a_running_request()
    cache.rows.pages.alloc(1)  # in use, claimed by neither the tree nor a request
    with pytest.raises(RuntimeError, match="token pages: the tree and the running requests claim 3 ids, the allocator has 4"):
        check_ownership(cache)


def test_a_state_slot_held_twice_fails_the_state_slot_check():
    cache, seq = _cache_with_a_running_request()
    tree_slot = next(int(n.mamba.value) for n in cache.tree.root.children.values()
                     if n.mamba.value is not None)
    cache.states.free([seq.slots[0]])
    seq.slots[0] = tree_slot  # the request now claims a slot the tree holds
    with pytest.raises(RuntimeError, match="state slots: the tree and the running requests claim 5 ids, the allocator has 4"):
        check_ownership(cache)


@pytest.mark.parametrize(("total", "law"), [
    ("own_pages", "own pages"), ("held_slots_total", "held slots"),
    ("reserved_pages", "reserved pages")])
def test_a_running_total_off_by_one_names_its_law(total, law):
    cache, _ = _cache_with_a_running_request()
    setattr(cache, total, getattr(cache, total) + 1)
    with pytest.raises(RuntimeError, match=f"{law} = Σ .* broken"):
        cache.check_integrity()
