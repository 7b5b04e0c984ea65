"""A harness that drives device pools + radix tree + host controller directly.

It plays the part of the cache facade: it allocates device pages and a state slot for a
request, writes random bytes into every device object (KV rows, index-key pages, conv and
temporal state), inserts into the tree, tells the controller, and remembers the bytes each
token, page and state should hold (`truth`), so any later loadback can be compared byte for
byte. Shapes are tiny but keep the real row widths (528 B scaled-fp8 rows, 132 B index keys).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from kvledger.host.build import build_host_group
from kvledger.host.controller import HiCacheController
from kvledger.host.device import DeviceBytes, DeviceSide
from kvledger.host.layout import HostLayout
from kvledger.host.policy import BackupPolicy
from kvledger.host.transfer import FaultHook
from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.gqa import GqaKVPool
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.pools.state import MambaPool
from kvledger.specs import GqaRowSpec, IndexKeySpec, LatentRowSpec, RowLayout, StateSpec
from kvledger.tree import RadixTree

PAGE = 4  # tokens per page
FULL_LAYERS = 3
LINEAR_LAYERS = 2
STATE = StateSpec(conv_shape=(3, 8), conv_itemsize=2, temporal_shape=(2, 4, 4),
                  temporal_itemsize=4)


def device_side(kind: str = "dsa", *, num_pages: int = 24, state_slots: int = 8) -> DeviceSide:
    """Device pools of `num_pages` usable pages (+ NULL_PAGE) and `state_slots` (+ NULL_SLOT)."""
    slots = (num_pages + 1) * PAGE
    if kind == "dsa":
        full = DsaTokenPool(
            spec=LatentRowSpec(kv_lora_rank=512, qk_rope_head_dim=0, layout=RowLayout.FP8_SCALED),
            index_spec=IndexKeySpec(head_dim=128, kpool=4, reserved_bytes=132, page_tokens=PAGE),
            has_indexer=(True,) * FULL_LAYERS, num_token_slots=slots, tail=None, device="cpu")
    else:
        full = GqaKVPool(spec=GqaRowSpec(kv_heads_per_rank=2, head_dim=16, itemsize=2),
                         num_layers=FULL_LAYERS, num_token_slots=slots, device="cpu")
    mamba = MambaPool(spec=STATE, num_layers=LINEAR_LAYERS, num_slots=state_slots + 1,
                      conv_dtype=torch.bfloat16, temporal_dtype=torch.float32, device="cpu")
    return DeviceSide(bytes=DeviceBytes.of(full, mamba, page_tokens=PAGE),
                      token_allocator=PagedTokenAllocator(num_pages=num_pages, page_tokens=PAGE),
                      state_allocator=StateSlotAllocator(num_slots=state_slots),
                      mamba_pool=mamba)


@dataclass
class Harness:
    ctrl: HiCacheController
    seed: int = 0
    truth_kv: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict)  # (tok, plane)
    truth_index: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict)  # (page key, layer)
    truth_state: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.gen = torch.Generator().manual_seed(self.seed)

    @property
    def tree(self) -> RadixTree:
        return self.ctrl.tree

    @property
    def dev(self) -> DeviceBytes:
        return self.ctrl.device.bytes

    def _random(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randint(0, 256, shape, dtype=torch.uint8, generator=self.gen)

    def request(self, tokens: np.ndarray) -> tuple[np.ndarray, int] | None:
        """Device pages and a state slot for `tokens`, filled as a deterministic model would:
        bytes already known for a token (page, end state) again, fresh random bytes otherwise."""
        device = self.ctrl.device
        short = len(tokens) - device.token_allocator.available_tokens
        if short > 0:
            self.ctrl.evict_device(full_tokens=short)
        if device.state_allocator.num_free == 0:
            self.ctrl.evict_device(mamba_slots=1)
        slots = device.token_allocator.alloc(len(tokens))
        state = device.state_allocator.alloc(1)
        if slots is None or state is None:
            self.ctrl.free_device_tokens(slots if slots is not None else np.zeros(0, np.int64))
            self.ctrl.free_device_states(state if state is not None else np.zeros(0, np.int64))
            return None
        for q, plane in enumerate(self.dev.kv_planes):
            for tok, loc in zip(tokens.tolist(), slots.tolist(), strict=True):
                row = self.truth_kv.setdefault((tok, q), self._random((plane.shape[1],)))
                plane[loc] = row
        for i, layer in enumerate(self.dev.index_pages):
            for first in range(0, len(tokens), PAGE):
                page = self.truth_index.setdefault((int(tokens[first]), i),
                                                   self._random((layer.shape[1],)))
                layer[int(slots[first]) // PAGE] = page
        slot = int(state[0])
        conv, temporal = self.truth_state.setdefault(int(tokens[-1]), (
            self._random(tuple(self.dev.conv[:, slot].shape)),
            self._random(tuple(self.dev.temporal[:, slot].shape))))
        self.dev.conv[:, slot] = conv
        self.dev.temporal[:, slot] = temporal
        return slots, slot

    def insert(self, tokens: np.ndarray):
        """A finished request: allocate, fill, insert, free what the tree did not take, tell
        the controller. None when the device has no room even after eviction."""
        got = self.request(tokens)
        if got is None:
            return None
        slots, slot = got
        result = self.tree.insert(tokens, slots, slot)
        if result.mamba_existed:
            self.ctrl.free_device_states(np.array([slot]))
        self.ctrl.free_device_tokens(result.duplicate_indices)
        self.ctrl.on_insert(result)
        return result

    def scramble_free_device_memory(self) -> None:
        """Overwrite every device byte: a loadback must restore what it claims, not find it."""
        for plane in (*self.dev.kv_planes, *self.dev.index_pages):
            plane.copy_(self._random(tuple(plane.shape)))

    def check_bytes(self, tokens: np.ndarray, device_indices: np.ndarray,
                    state_slot: int | None) -> None:
        """Every byte the device holds for `tokens` (and its end state) equals the truth."""
        index = torch.from_numpy(np.array(device_indices))
        for q, plane in enumerate(self.dev.kv_planes):
            got = plane[index]
            want = torch.stack([self.truth_kv[(int(t), q)] for t in tokens[: len(index)]])
            assert torch.equal(got, want), f"KV plane {q} differs after loadback"
        for p in range(len(index) // PAGE):
            for i, layer in enumerate(self.dev.index_pages):
                got = layer[int(device_indices[p * PAGE]) // PAGE]
                assert torch.equal(got, self.truth_index[(int(tokens[p * PAGE]), i)]), "index page"
        if state_slot is not None:
            conv, temporal = self.truth_state[int(tokens[len(index) - 1])]
            assert torch.equal(self.dev.conv[:, state_slot], conv), "conv state differs"
            assert torch.equal(self.dev.temporal[:, state_slot], temporal), "temporal differs"


def harness(*, kind: str = "dsa", layout: HostLayout = HostLayout.PAGE_FIRST,
            policy: BackupPolicy = BackupPolicy.WRITE_THROUGH, host_pages: int = 32,
            host_state_slots: int = 8, device_pages: int = 24, device_state_slots: int = 8,
            synchronous: bool = True, fault: FaultHook | None = None, seed: int = 0) -> Harness:
    device = device_side(kind, num_pages=device_pages, state_slots=device_state_slots)
    host = build_host_group(device.bytes, host_tokens=host_pages * PAGE,
                            host_state_slots=host_state_slots, layout=layout)
    ctrl = HiCacheController(tree=RadixTree(page_size=PAGE), device=device, host=host,
                             policy=policy, synchronous=synchronous, fault=fault)
    return Harness(ctrl=ctrl, seed=seed)


def seq(start: int, pages: int) -> np.ndarray:
    """`pages` pages of distinct token ids from `start`."""
    return np.arange(start, start + pages * PAGE, dtype=np.int64)
