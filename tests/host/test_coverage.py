"""Per-node coverage: which objects have host copies, under the article's rules and ours.

The article (seed §4.3 and 图 5): "HiCache 只覆盖 KV + KDA；indexer 和 compress tail 没有
HiCache 副本", and its host KV row is 512 B for a 528 B device row (§5.2).
"""

from __future__ import annotations

import numpy as np

from factories import glm_layout
from kvledger.host.coverage import node_coverage
from kvledger.model.config import load_model
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.hicache import ARTICLE_HOST, OUR_HOST, CopyStatus, HostObject
from kvledger.sglang.resolve import resolve
from kvledger.sglang.rules import RULES
from kvledger.tree import Component, RadixTree

KV, IDX, STATE, TAIL = (HostObject.KV, HostObject.INDEX_KEYS, HostObject.STATE,
                        HostObject.COMPRESS_TAIL)
COPIED, ABSENT = CopyStatus.COPIED, CopyStatus.ABSENT


def _tree_with_two_requests():
    """A 64-token shared node (split, no state) and two 64-token leaves with states."""
    tree = RadixTree(page_size=64)
    shared = np.arange(64)
    left = tree.insert(np.r_[shared, np.arange(100, 164)], np.arange(64, 192), 1).node
    right = tree.insert(np.r_[shared, np.arange(200, 264)], np.arange(192, 320), 2).node
    return tree, left.parent, left, right


def test_nothing_backed_up():
    _, shared, left, _ = _tree_with_two_requests()
    lay = glm_layout()
    assert node_coverage(left, lay, OUR_HOST) == {KV: ABSENT, IDX: ABSENT, STATE: ABSENT,
                                                  TAIL: CopyStatus.NOT_IN_TREE}
    assert node_coverage(left, lay, ARTICLE_HOST) == {
        KV: ABSENT, IDX: CopyStatus.MISSING, STATE: ABSENT, TAIL: CopyStatus.NOT_IN_TREE}
    assert STATE not in node_coverage(shared, lay, OUR_HOST)  # no state at a split node


def test_backed_up_node_under_both_rule_sets():
    tree, shared, left, right = _tree_with_two_requests()
    tree.set_host_value(shared, Component.FULL, np.arange(64))
    tree.set_host_value(left, Component.FULL, np.arange(64, 128))
    tree.set_host_value(left, Component.MAMBA, 0)
    lay = glm_layout()
    assert node_coverage(left, lay, OUR_HOST) == {KV: COPIED, IDX: COPIED, STATE: COPIED,
                                                  TAIL: CopyStatus.NOT_IN_TREE}
    assert node_coverage(left, lay, ARTICLE_HOST) == {
        KV: CopyStatus.TRUNCATED, IDX: CopyStatus.MISSING, STATE: COPIED,
        TAIL: CopyStatus.NOT_IN_TREE}
    # KV backed up, state not yet (the incremental case)
    tree.set_host_value(right, Component.FULL, np.arange(128, 192))
    assert node_coverage(right, lay, OUR_HOST)[STATE] is ABSENT
    assert node_coverage(right, lay, OUR_HOST)[KV] is COPIED


def test_bf16_article_rows_are_whole_and_gqa_has_no_index_keys():
    tree, shared, left, _ = _tree_with_two_requests()
    tree.set_host_value(shared, Component.FULL, np.arange(64))
    tree.set_host_value(left, Component.FULL, np.arange(64, 128))
    bf16 = glm_layout(kv_cache_dtype=KVDtype.BF16)
    assert node_coverage(left, bf16, ARTICLE_HOST)[KV] is COPIED  # 512 × 2 B on both sides
    llama = resolve(load_model("llama-3.1-8b"), Deployment(), RULES["sglang-0.5.21"])
    assert node_coverage(left, llama, OUR_HOST) == {KV: COPIED}
