"""The link a disaggregated request's KV and state cross from its prefill to its decode server.

A small catalogue of nominal one-direction rates per GPU (the links' published line rates;
a transfer engine reaches less, so these times are lower bounds):

  nvlink     450 GB/s  NVLink 4 on H100/H200 SXM: 900 GB/s per GPU, both directions
                       (NVIDIA H200 datasheet), so half one way; prefill and decode on
                       one NVLink domain (one 8-GPU node, or an NVL72 rack)
  ib-400      50 GB/s  InfiniBand NDR, 400 Gb/s per port (NVIDIA ConnectX-7), one NIC per
                       GPU as on DGX/HGX H200 nodes
  ib-200      25 GB/s  InfiniBand HDR, 200 Gb/s per port
  roce-400    50 GB/s  400 Gb/s Ethernet (IEEE 802.3bs) with RDMA over Converged Ethernet
  roce-200    25 GB/s  200 Gb/s Ethernet (IEEE 802.3bs)
  roce-100  12.5 GB/s  100 Gb/s Ethernet (IEEE 802.3ba/bj)

Every transfer also pays a fixed latency (an assumption, not a measurement: 5 µs on NVLink,
10 µs on InfiniBand, 20 µs on RoCE, the order of a switched round trip); at the sizes moved
here (hundreds of MB for a long prompt) the bytes dominate.

Ranks move their own shards at once: with the same tp on both roles, rank i of the prefill
server sends to rank i of the decode server over its own link, so a request's time is

    latency + (prompt_tokens × token_bytes + slot_bytes) / bandwidth     (bytes per rank)

the hybrid's state included (GLM-5.3-Flash at tp 8: 18,452,480 B per rank, 147,619,840 B
per slot over the 8 ranks).

>>> LINKS[LinkKind.IB_400].transfer_ms(50_000_000)
1.01
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class LinkKind(Enum):
    NVLINK = "nvlink"
    IB_400 = "ib-400"
    IB_200 = "ib-200"
    ROCE_400 = "roce-400"
    ROCE_200 = "roce-200"
    ROCE_100 = "roce-100"


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    kind: LinkKind
    bytes_per_s: float  # one direction, per GPU
    latency_ms: float
    source: str

    def transfer_ms(self, nbytes: int) -> float:
        return round(self.latency_ms + nbytes / self.bytes_per_s * 1e3, 6)


GB = 1e9
LINKS: dict[LinkKind, Link] = {
    LinkKind.NVLINK: Link(kind=LinkKind.NVLINK, bytes_per_s=450 * GB, latency_ms=0.005,
                          source="NVIDIA H200 datasheet: NVLink 900 GB/s, both directions"),
    LinkKind.IB_400: Link(kind=LinkKind.IB_400, bytes_per_s=50 * GB, latency_ms=0.01,
                          source="InfiniBand NDR 400 Gb/s (ConnectX-7)"),
    LinkKind.IB_200: Link(kind=LinkKind.IB_200, bytes_per_s=25 * GB, latency_ms=0.01,
                          source="InfiniBand HDR 200 Gb/s"),
    LinkKind.ROCE_400: Link(kind=LinkKind.ROCE_400, bytes_per_s=50 * GB, latency_ms=0.02,
                            source="400 Gb/s Ethernet, IEEE 802.3bs"),
    LinkKind.ROCE_200: Link(kind=LinkKind.ROCE_200, bytes_per_s=25 * GB, latency_ms=0.02,
                            source="200 Gb/s Ethernet, IEEE 802.3bs"),
    LinkKind.ROCE_100: Link(kind=LinkKind.ROCE_100, bytes_per_s=12.5 * GB, latency_ms=0.02,
                            source="100 Gb/s Ethernet, IEEE 802.3ba"),
}
DEFAULT_LINK = LinkKind.IB_400


def request_bytes_per_rank(prompt_tokens: int, *, token_bytes: int, slot_bytes: int) -> int:
    """What one rank sends for a request: its share of the prompt's KV and of one state."""
    return prompt_tokens * token_bytes + slot_bytes
