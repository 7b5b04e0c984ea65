"""Store-tier sizing on the default model (GLM-5.3-Flash, fp8 KV, one rank)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.sglang.l3plan import plan_l3
from kvledger.store.group import Manifest

runner = CliRunner()
# The token ledger's 7,260 B per token and the state ledger's 147,619,840 B per slot (the
# same numbers `kvledger plan --kv-cache-dtype fp8_e4m3` prints).
TOKEN_B, STATE_B = 7260, 147_619_840


def test_objects_and_bytes_per_node():
    l3 = plan_l3(64, token_bytes=TOKEN_B, state_bytes=STATE_B, l3_bytes=100 << 30,
                 instances=4, node_pages=16)
    n = l3.node
    assert n.objects == 16 + 1 + 1
    assert n.manifest_bytes == 26 + 16 * 17 + 8 == 306
    assert n.payload_bytes == 16 * 64 * TOKEN_B + STATE_B + 306 == 155_054_386
    # local-dir rounds each file up to 4 KiB: 464,640 → 466,944; the state is 4 KiB-aligned.
    assert n.local_dir_bytes == 16 * 466_944 + STATE_B + 4096
    assert l3.nodes == (100 << 30) // 155_054_386 == 692
    assert l3.tokens == 692 * 16 * 64
    assert l3.mooncake_dram_per_instance_bytes == (100 << 30) // 4 + 2 * (16 * 464_640 + STATE_B)


@pytest.mark.parametrize("pages", [1, 16])
def test_manifest_bytes_match_the_encoded_manifest(pages):
    # The plan's formula and the store's encoder (kvledger.store.group) must agree.
    m = Manifest(first_page=0, page_sizes=(1,) * pages, page_digests=(0,) * pages,
                 state_size=1, state_digest=0)
    node = plan_l3(64, token_bytes=TOKEN_B, state_bytes=STATE_B, l3_bytes=100 << 30,
                   node_pages=pages).node
    assert len(m.encode(tag="0123456789ab")) == node.manifest_bytes


@pytest.mark.parametrize("flag, value", [("l3_bytes", 0), ("instances", 0), ("node_pages", -1)])
def test_bad_sizes_name_the_flag(flag, value):
    kwargs = {"l3_bytes": 1 << 30, "instances": 1, "node_pages": 1} | {flag: value}
    with pytest.raises(ValueError, match="--l3-"):
        plan_l3(64, token_bytes=TOKEN_B, state_bytes=STATE_B, **kwargs)


def test_plan_l3_size_cli():
    r = runner.invoke(app, ["plan", "--kv-cache-dtype", "fp8_e4m3", "--l3-size", "100",
                            "--json"])
    assert r.exit_code == 0, r.output
    l3 = json.loads(r.stdout)["l3"]
    assert l3["page_object_bytes"] == 64 * TOKEN_B and l3["state_object_bytes"] == STATE_B
    assert l3["objects_per_node"] == 3 and l3["nodes"] == (100 << 30) // (64 * TOKEN_B + STATE_B + 54)
    bad = runner.invoke(app, ["plan", "--l3-size", "nan"])
    assert bad.exit_code == 2 and "--l3-size" in bad.output
