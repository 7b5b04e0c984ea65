"""RedisStore: the store tier on Redis or Valkey (the `redis` client from PyPI).

Every batch is one pipelined round trip (``MGET`` for gets; ``EXISTS``/``SET``/``DEL`` per
key in a non-transactional pipeline). Server-side eviction (``maxmemory`` with an LRU
policy) or a TTL makes objects vanish at any moment: the tier above reads a vanished object
as a miss. A refused write (``OOM`` under ``noeviction``) is a put that returned False.

Assumes a server that holds values of a whole page (Redis' default ``proto-max-bulk-len`` is
512 MiB; a GLM-5.3-Flash page object is a few MiB).
"""

from __future__ import annotations

from collections.abc import Sequence

from kvledger.store.backend import BackendKind, Payload, StoreBackend, StoreUnavailable


class RedisStore(StoreBackend):
    kind = BackendKind.REDIS

    def __init__(self, host: str = "127.0.0.1", port: int = 6379, *, timeout_s: float = 5.0,
                 ttl_s: int | None = None) -> None:
        try:
            import redis
        except ImportError as e:  # the `store` extra
            raise StoreUnavailable("the Redis backend needs the `redis` package: "
                                   "pip install 'kvledger[store]'") from e
        self._errors = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
        self.address = f"{host}:{port}"
        self.ttl_s = ttl_s
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # One immediate retry (a dropped idle connection reconnects); redis-py's default of
        # ten with backoff would keep a request waiting seconds on a dead server.
        self.client = redis.Redis(host=host, port=port, socket_timeout=timeout_s,
                                  socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 1))

    def _run(self, what: str, fn):
        try:
            return fn()
        except self._errors as e:
            raise StoreUnavailable(f"Redis at {self.address}: {what} failed: {e}") from e

    def exists(self, keys: Sequence[str]) -> list[bool]:
        if not keys:
            return []

        def call():
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                pipe.exists(key)
            return [bool(n) for n in pipe.execute()]
        return self._run("EXISTS", call)

    def get(self, keys: Sequence[str], sizes: Sequence[int] | None = None) -> list[bytes | None]:
        if not keys:
            return []
        return self._run("MGET", lambda: list(self.client.mget(list(keys))))

    def put(self, items: Sequence[tuple[str, Payload]]) -> list[bool]:
        if not items:
            return []

        def call():
            pipe = self.client.pipeline(transaction=False)
            for key, value in items:
                pipe.set(key, value, ex=self.ttl_s)
            return [r is True for r in pipe.execute(raise_on_error=False)]
        return self._run("SET", call)

    def delete(self, keys: Sequence[str]) -> list[bool]:
        if not keys:
            return []

        def call():
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                pipe.delete(key)
            return [n == 1 for n in pipe.execute()]
        return self._run("DEL", call)

    def close(self) -> None:
        self.client.close()
