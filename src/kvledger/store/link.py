"""StoreLink: what one transfer to a store costs; L3Config: the simulator's store tier.

The accounting store (`kvledger.store.accounting`) times every transfer as ``latency_ms``
per round trip plus bytes / bandwidth. The defaults are the raw clients' rates on a 2-core
machine over loopback, not a cluster's.

>>> StoreLink.default(BackendKind.MOONCAKE).get_gbps
1.5
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.store.backend import BackendKind


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreLink:
    """What one transfer to the store costs."""

    backend: BackendKind
    get_gbps: float  # 1e9 bytes per second, reads
    put_gbps: float  # writes
    latency_ms: float  # per round trip

    @classmethod
    def default(cls, backend: BackendKind) -> StoreLink:
        """Raw-client rates of `python bench/l3.py --groups 2 --repeats 4` on a 2-core
        machine over loopback (GLM-5.3-Flash groups); assumptions elsewhere — pass your own."""
        get, put, latency = _DEFAULTS[backend]
        return cls(backend=backend, get_gbps=get, put_gbps=put, latency_ms=latency)

    def validate(self) -> None:
        if not (self.get_gbps > 0 and self.put_gbps > 0 and self.latency_ms >= 0):
            raise ValueError(f"--l3-backend {self.backend.value}: bandwidths must be > 0 GB/s "
                             f"and latency ≥ 0 ms")


@dataclass(frozen=True, slots=True, kw_only=True)
class L3Config:
    """The simulator's store tier (``--l3-size``, ``--l3-backend``)."""

    capacity_bytes: int  # --l3-size
    backend: BackendKind = BackendKind.MOONCAKE  # --l3-backend
    custom_link: StoreLink | None = None  # None: the backend's default rates

    def link(self) -> StoreLink:
        return self.custom_link or StoreLink.default(self.backend)


_DEFAULTS = {  # get GB/s, put GB/s, latency ms
    BackendKind.LOCAL_DIR: (1.8, 5.0, 0.05),
    BackendKind.REDIS: (0.3, 1.6, 0.1),
    BackendKind.MOONCAKE: (1.5, 5.1, 0.2),
}
