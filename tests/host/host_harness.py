"""A harness that drives device pools + radix tree + host controller directly.

It plays the part of the cache facade: it allocates device pages and a state slot for a
request, writes random bytes into every device object (KV rows, index-key pages, conv and
temporal state), inserts into the tree, tells the controller, and remembers the bytes each
token, page and state should hold (`truth`), so any later loadback can be compared byte for
byte. Shapes are tiny but keep the real row widths (528 B scaled-fp8 rows, 132 B index keys).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from kvledger.host.build import build_host_group
from kvledger.host.controller import HiCacheController
from kvledger.host.device import DeviceBytes, DeviceSide
from kvledger.host.group import HostPoolGroup
from kvledger.host.layout import HostLayout
from kvledger.host.movers import Mover
from kvledger.host.policy import BackupPolicy
from kvledger.host.state_backup import HostStateBackup
from kvledger.host.transfer import FaultHook
from kvledger.pools.dsa import DsaTokenPool
from kvledger.pools.gqa import GqaKVPool
from kvledger.pools.ids import StateSlotAllocator
from kvledger.pools.paged import PagedTokenAllocator
from kvledger.pools.state import MambaPool
from kvledger.sglang.specs import GqaRowSpec, IndexKeySpec, LatentRowSpec, RowLayout, StateSpec
from kvledger.tree import RadixTree

PAGE = 4  # tokens per page
FULL_LAYERS = 3
LINEAR_LAYERS = 2
STATE = StateSpec(conv_shape=(3, 8), conv_itemsize=2, temporal_shape=(2, 4, 4),
                  temporal_itemsize=4)


def device_side(kind: str = "dsa", *, num_pages: int = 24, state_slots: int = 8,
                device: str = "cpu") -> DeviceSide:
    """Device pools of `num_pages` usable pages (+ NULL_PAGE) and `state_slots` (+ NULL_SLOT)."""
    slots = (num_pages + 1) * PAGE
    if kind == "dsa":
        full = DsaTokenPool(
            spec=LatentRowSpec(kv_lora_rank=512, qk_rope_head_dim=0, layout=RowLayout.FP8_SCALED),
            index_spec=IndexKeySpec(head_dim=128, kpool=4, reserved_bytes=132, page_tokens=PAGE),
            has_indexer=(True,) * FULL_LAYERS, num_token_slots=slots, tail=None, device=device)
    else:
        full = GqaKVPool(spec=GqaRowSpec(kv_heads_per_rank=2, head_dim=16, itemsize=2),
                         num_layers=FULL_LAYERS, num_token_slots=slots, device=device)
    mamba = MambaPool(spec=STATE, num_layers=LINEAR_LAYERS, num_slots=state_slots + 1,
                      conv_dtype=torch.bfloat16, temporal_dtype=torch.float32, device=device)
    return DeviceSide(bytes=DeviceBytes.of(full, mamba, page_tokens=PAGE),
                      token_allocator=PagedTokenAllocator(num_pages=num_pages, page_tokens=PAGE),
                      state_allocator=StateSlotAllocator(num_slots=state_slots),
                      mamba_pool=mamba)


MoverFactory = Callable[[DeviceBytes, HostPoolGroup], Mover]

MAX_TOKEN = 10_000  # token ids the tests use stay below this


@dataclass
class Harness:
    ctrl: HiCacheController
    seed: int = 0
    truth_state: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.gen = torch.Generator().manual_seed(self.seed)
        dev = self.dev
        # What a deterministic model writes for a token: KV rows per plane, index pages by
        # the page's first token, states by the prefix's last token.
        self.truth_kv = torch.zeros((len(dev.kv_planes), MAX_TOKEN, dev.row_bytes),
                                    dtype=torch.uint8)
        self.truth_index = torch.zeros((len(dev.index_pages), MAX_TOKEN, dev.index_page_bytes),
                                       dtype=torch.uint8)
        self.known_kv = torch.zeros(MAX_TOKEN, dtype=torch.bool)
        self.known_index = torch.zeros(MAX_TOKEN, dtype=torch.bool)

    @property
    def tree(self) -> RadixTree:
        return self.ctrl.tree

    @property
    def dev(self) -> DeviceBytes:
        return self.ctrl.device.bytes

    def _random(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randint(0, 256, shape, dtype=torch.uint8, generator=self.gen)

    def _learn(self, truth: torch.Tensor, known: torch.Tensor, tokens: torch.Tensor) -> None:
        new = torch.unique(tokens[~known[tokens]])
        if new.numel():
            truth[:, new] = self._random((truth.shape[0], new.numel(), truth.shape[2]))
            known[new] = True

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
            self.ctrl.device.free_tokens(slots if slots is not None else np.zeros(0, np.int64))
            self.ctrl.device.free_states(state if state is not None else np.zeros(0, np.int64))
            return None
        toks, locs = torch.from_numpy(tokens), torch.from_numpy(slots)
        self._learn(self.truth_kv, self.known_kv, toks)
        for q, plane in enumerate(self.dev.kv_planes):
            plane[locs] = self.truth_kv[q, toks]
        firsts, pages = toks[::PAGE], locs[::PAGE] // PAGE
        if self.dev.index_pages:
            self._learn(self.truth_index, self.known_index, firsts)
        for i, layer in enumerate(self.dev.index_pages):
            layer[pages] = self.truth_index[i, firsts]
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
            self.ctrl.device.free_states(np.array([slot]))
        self.ctrl.device.free_tokens(result.duplicate_indices)
        self.ctrl.on_insert(result)
        return result

    def scramble_free_device_memory(self) -> None:
        """Overwrite every device byte: a loadback must restore what it claims, not find it."""
        for plane in (*self.dev.kv_planes, *self.dev.index_pages):
            plane.copy_(self._random(tuple(plane.shape)))

    def scramble_free_pages(self) -> None:
        """Overwrite the free device pages and state slots only (what the tree and requests
        hold stays): a loadback into them must write every byte it claims to."""
        allocator = self.ctrl.device.token_allocator
        pages = np.arange(1, allocator.num_pages + 1)
        free = torch.from_numpy(pages[~allocator.pages.is_allocated(pages)])
        for plane in self.dev.kv_planes:
            view = plane.view(-1, PAGE, plane.shape[1])
            view[free] = self._random((len(free), PAGE, plane.shape[1]))
        for layer in self.dev.index_pages:
            layer[free] = self._random((len(free), layer.shape[1]))
        states = self.ctrl.device.state_allocator
        slots = np.arange(1, states.capacity + 1)
        free_slots = torch.from_numpy(slots[~states.is_allocated(slots)])
        for part in (self.dev.conv, self.dev.temporal):
            part[:, free_slots] = self._random((part.shape[0], len(free_slots), part.shape[2]))

    def check_bytes(self, tokens: np.ndarray, device_indices: np.ndarray,
                    state_slot: int | None) -> None:
        """Every byte the device holds for `tokens` (and its end state) equals the truth."""
        n = len(device_indices)
        toks, locs = torch.from_numpy(tokens[:n]), torch.from_numpy(np.array(device_indices))
        for q, plane in enumerate(self.dev.kv_planes):
            assert torch.equal(plane[locs], self.truth_kv[q, toks]), f"KV plane {q} differs"
        for i, layer in enumerate(self.dev.index_pages):
            got = layer[locs[::PAGE] // PAGE]
            assert torch.equal(got, self.truth_index[i, toks[::PAGE]]), f"index layer {i}"
        if state_slot is not None:
            conv, temporal = self.truth_state[int(tokens[n - 1])]
            assert torch.equal(self.dev.conv[:, state_slot], conv), "conv state differs"
            assert torch.equal(self.dev.temporal[:, state_slot], temporal), "temporal differs"

    def check_all_bytes(self) -> None:
        """Every copy on either tier holds the truth (walks the tree, changes nothing)."""
        host = self.ctrl.host
        dev_tokens, dev_slots, host_tokens, host_slots = [], [], [], []
        stack = list(self.tree.root.children.values())
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            if node.full.value is not None:
                dev_tokens.append(node.tokens)
                dev_slots.append(node.full.value)
            if node.full.host_value is not None:
                host_tokens.append(node.tokens)
                host_slots.append(node.full.host_value)
            conv, temporal = self.truth_state.get(int(node.tokens[-1]), (None, None))
            for slot, convs, temporals in (
                    (node.mamba.value, self.dev.conv.transpose(0, 1),
                     self.dev.temporal.transpose(0, 1)),
                    (node.mamba.host_value, host.state and host.state.conv,
                     host.state and host.state.temporal)):
                if slot is not None:
                    assert torch.equal(convs[slot], conv), f"{node!r}: conv state"
                    assert torch.equal(temporals[slot], temporal), f"{node!r}: temporal state"
        if dev_tokens:
            toks = torch.from_numpy(np.concatenate(dev_tokens))
            self.check_bytes(toks.numpy(), np.concatenate(dev_slots), None)
        if host_tokens:
            toks = torch.from_numpy(np.concatenate(host_tokens))
            slots = np.concatenate(host_slots)
            pages = host.kv.read_pages(slots)  # (pages, Q, P, B)
            got = pages.permute(1, 0, 2, 3).reshape(len(self.dev.kv_planes), len(slots), -1)
            assert torch.equal(got, self.truth_kv[:, toks]), "host KV differs"
            if host.indexer is not None:
                index = host.indexer.canonical[torch.from_numpy(slots[::PAGE] // PAGE)]
                assert torch.equal(index.transpose(0, 1), self.truth_index[:, toks[::PAGE]]), \
                    "host index pages differ"


def harness(*, kind: str = "dsa", layout: HostLayout = HostLayout.PAGE_FIRST,
            policy: BackupPolicy = BackupPolicy.WRITE_THROUGH, host_pages: int = 32,
            host_state_slots: int = 8, device_pages: int = 24, device_state_slots: int = 8,
            synchronous: bool = True, fault: FaultHook | None = None, seed: int = 0,
            mover: MoverFactory | None = None, verify: bool = True,
            state_backup: HostStateBackup = HostStateBackup.ALL) -> Harness:
    """`mover(device_bytes, host_group)` builds a mover in place of the TensorMover."""
    device = device_side(kind, num_pages=device_pages, state_slots=device_state_slots)
    host = build_host_group(device.bytes, host_tokens=host_pages * PAGE,
                            host_state_slots=host_state_slots, layout=layout)
    ctrl = HiCacheController(tree=RadixTree(page_size=PAGE), device=device, host=host,
                             policy=policy, synchronous=synchronous, fault=fault,
                             mover=None if mover is None else mover(device.bytes, host),
                             verify=verify, state_backup=state_backup)
    return Harness(ctrl=ctrl, seed=seed)


def seq(start: int, pages: int) -> np.ndarray:
    """`pages` pages of distinct token ids from `start`."""
    return np.arange(start, start + pages * PAGE, dtype=np.int64)
