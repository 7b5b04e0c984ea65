"""The store tier's sizing (`kvledger.sglang.l3plan`) as a rich table and as JSON."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from kvledger.report.show import show_bytes
from kvledger.sglang.l3plan import KEY_BYTES, L3Plan


def l3_json(l3: L3Plan) -> dict[str, Any]:
    n = l3.node
    return {
        "l3_bytes": l3.l3_bytes, "instances": l3.instances, "page_tokens": l3.page_tokens,
        "page_object_bytes": l3.page_bytes, "state_object_bytes": l3.state_bytes,
        "node_pages": n.pages, "objects_per_node": n.objects,
        "manifest_bytes": n.manifest_bytes, "key_bytes": KEY_BYTES,
        "node_payload_bytes": n.payload_bytes,
        "backends": {
            "local-dir": {"objects": n.objects, "bytes": n.local_dir_bytes},
            "redis": {"objects": n.objects, "bytes": n.payload_bytes + n.key_bytes,
                      "dram_per_instance_bytes": l3.redis_dram_per_instance_bytes},
            "mooncake": {"objects": n.objects, "bytes": n.payload_bytes + n.key_bytes,
                         "local_buffer_bytes": n.mooncake_buffer_bytes,
                         "dram_per_instance_bytes": l3.mooncake_dram_per_instance_bytes},
        },
        "nodes": l3.nodes, "tokens": l3.tokens,
    }


def render_l3(l3: L3Plan, console: Console) -> None:
    n = l3.node
    table = Table(title=f"Store tier: {show_bytes(l3.l3_bytes)} over {l3.instances} instance(s), "
                  f"nodes of {n.pages} page(s) × {l3.page_tokens} tokens")
    for col in ("backend", "objects / node", "bytes / node", "DRAM / instance"):
        table.add_column(col, justify="right" if col != "backend" else "left")
    table.add_row("local-dir", str(n.objects), f"{n.local_dir_bytes:,}", "—")
    table.add_row("redis", str(n.objects), f"{n.payload_bytes + n.key_bytes:,}",
                  f"{l3.redis_dram_per_instance_bytes:,} (staging; the server holds the store)")
    table.add_row("mooncake", str(n.objects), f"{n.payload_bytes + n.key_bytes:,}",
                  f"{l3.mooncake_dram_per_instance_bytes:,} (segment + local buffer)")
    console.print(table)
    console.print(f"per node: {n.pages} page object(s) of {l3.page_bytes:,} B, a state object "
                  f"of {l3.state_bytes:,} B, a {n.manifest_bytes} B manifest, {KEY_BYTES} B keys; "
                  f"the store holds {l3.nodes:,} nodes = {l3.tokens:,} tokens", highlight=False)
