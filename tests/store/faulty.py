"""Backends that fail on cue around a real client: the server killed mid-read, a slow store."""

from __future__ import annotations

import time

from kvledger.store.backend import StoreBackend


class KillDuringGet(StoreBackend):
    """Kills the real server as the `nth` get starts, then lets the real client find out."""

    def __init__(self, inner: StoreBackend, server, nth: int = 1) -> None:
        self.inner, self.server, self.nth, self.gets = inner, server, nth, 0
        self.kind = inner.kind

    def exists(self, keys):
        return self.inner.exists(keys)

    def get(self, keys, sizes=None):
        self.gets += 1
        if self.gets == self.nth:
            self.server.kill()
        return self.inner.get(keys, sizes)

    def put(self, items):
        return self.inner.put(items)

    def delete(self, keys):
        return self.inner.delete(keys)


class SlowGets(KillDuringGet):
    """Every get answers `delay_s` late (the bytes are the real ones)."""

    def __init__(self, inner: StoreBackend, delay_s: float) -> None:
        super().__init__(inner, server=None, nth=0)
        self.delay_s = delay_s

    def get(self, keys, sizes=None):
        time.sleep(self.delay_s)
        return self.inner.get(keys, sizes)
