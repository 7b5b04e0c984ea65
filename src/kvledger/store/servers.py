"""Store servers on loopback: start Redis/Valkey or a Mooncake master on free ports.

Tests, ``kvledger verify --workload l3-*`` and ``bench/l3.py`` run against real servers
started here, bound to 127.0.0.1, and killed with their parent (``PR_SET_PDEATHSIG``) so a
crashed run leaves no server behind. `find_binary` says why a server cannot be
started (the binary is not installed), so a test can skip with that reason.

Redis is started with persistence off, ``maxmemory`` and ``allkeys-lru``: the store evicts
on its own, which the tier must survive. Mooncake needs two processes: the master (with a
shorter ``default_kv_lease_ttl`` than its 10 s, which would keep every object undeletable
for the length of a test; but a read must finish inside the lease, so 2 s by default —
tests of tiny objects pass 50 ms) and the transfer engine's HTTP metadata server. The wheel's
``mooncake_http_metadata_server`` is used rather than the master's built-in one, because
the 0.3.13 master listens on 0.0.0.0 whatever ``-http_metadata_server_host`` says.
Mooncake *clients* also open transfer listeners on all interfaces (the wheel has no bind
option for them); they advertise 127.0.0.1, so no traffic leaves loopback.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kvledger.store.backend import BackendKind, StoreBackend, StoreUnavailable

LOOPBACK = "127.0.0.1"
_BINARIES = {BackendKind.REDIS: ("redis-server", "valkey-server"),
             BackendKind.MOONCAKE: ("mooncake_master",)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def find_binary(kind: BackendKind) -> str | None:
    """The server binary's path, looked up on PATH, /usr/sbin and next to this Python (a
    wheel's scripts land in the venv's bin/)."""
    dirs = [os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin",
            str(Path(sys.executable).parent)]
    for name in _BINARIES.get(kind, ()):
        found = shutil.which(name, path=os.pathsep.join(dirs))
        if found:
            return found
    return None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _spawn(args: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(args, preexec_fn=_die_with_parent, **kwargs)  # noqa: PLW1509


def _wait_port(port: int, proc: subprocess.Popen, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StoreUnavailable(f"{what} exited with code {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.2):
            return
        time.sleep(0.05)
    proc.kill()
    raise StoreUnavailable(f"{what} did not listen on {LOOPBACK}:{port} within {timeout_s} s")


@dataclass
class StoreServer:
    """A running server; `backend()` opens a client on it. Stop it with `stop()` (or use it
    as a context manager); `kill()` is the fault: SIGKILL, no goodbye."""

    kind: BackendKind
    proc: subprocess.Popen
    port: int
    extra_ports: dict[str, int] = field(default_factory=dict)
    workdir: str | None = None
    helpers: list[subprocess.Popen] = field(default_factory=list)  # stopped with it

    def backend(self, **options) -> StoreBackend:
        if self.kind is BackendKind.REDIS:
            from kvledger.store.redis_store import RedisStore
            return RedisStore(LOOPBACK, self.port, **options)
        from kvledger.store.mooncake_store import MooncakeStore
        return MooncakeStore(**self.client_args(), **options)

    def client_args(self) -> dict:
        """How a client in another process reaches this server (keyword arguments of the
        backend's constructor, or of `open_backend`)."""
        if self.kind is BackendKind.REDIS:
            return {"host": LOOPBACK, "port": self.port}
        return {"master": f"{LOOPBACK}:{self.port}",
                "metadata_url": f"http://{LOOPBACK}:{self.extra_ports['http']}/metadata"}

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive:
            self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        for proc in [self.proc, *self.helpers]:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> StoreServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_redis(*, maxmemory_bytes: int = 512 << 20, timeout_s: float = 10.0,
                port: int | None = None) -> StoreServer:
    """`port`: a given one (a server restarted where its clients look), else a free one."""
    binary = find_binary(BackendKind.REDIS)
    if binary is None:
        raise StoreUnavailable("no redis-server or valkey-server on PATH (apt-get install "
                               "redis-server)")
    port = free_port() if port is None else port
    workdir = tempfile.mkdtemp(prefix="kvledger-redis-")
    proc = _spawn(
        [binary, "--bind", LOOPBACK, "--port", str(port), "--save", "", "--appendonly", "no",
         "--dir", workdir, "--maxmemory", str(maxmemory_bytes),
         "--maxmemory-policy", "allkeys-lru", "--protected-mode", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_port(port, proc, timeout_s, f"{binary}")
    return StoreServer(BackendKind.REDIS, proc, port, workdir=workdir)


def start_mooncake_master(*, lease_ms: int = 2000, timeout_s: float = 20.0) -> StoreServer:
    binary = find_binary(BackendKind.MOONCAKE)
    if binary is None:
        raise StoreUnavailable("no mooncake_master (pip install 'kvledger[store]' brings the "
                               "mooncake-transfer-engine wheel)")
    rpc, http, metrics = free_port(), free_port(), free_port()
    workdir = tempfile.mkdtemp(prefix="kvledger-mooncake-")
    log = open(Path(workdir) / "master.log", "wb")  # noqa: SIM115 - the servers keep it
    meta = _spawn([sys.executable, "-m", "mooncake.http_metadata_server", "--host", LOOPBACK,
                   "--port", str(http), "--log-level", "WARNING"],
                  stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    proc = _spawn(
        [binary, f"-rpc_port={rpc}", f"-rpc_address={LOOPBACK}",
         f"-metrics_host={LOOPBACK}", f"-metrics_port={metrics}",
         f"-default_kv_lease_ttl={lease_ms}"],
        stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    log.close()
    server = StoreServer(BackendKind.MOONCAKE, proc, rpc, extra_ports={"http": http},
                         workdir=workdir, helpers=[meta])
    try:
        _wait_port(rpc, proc, timeout_s, binary)
        _wait_port(http, meta, timeout_s, "mooncake_http_metadata_server")
    except StoreUnavailable:
        server.stop()
        raise
    return server


def start_server(kind: BackendKind, **options) -> StoreServer:
    if kind is BackendKind.REDIS:
        return start_redis(**options)
    if kind is BackendKind.MOONCAKE:
        return start_mooncake_master(**options)
    raise ValueError(f"{kind.value} has no server to start")


def open_backend(kind: BackendKind, **args) -> StoreBackend:
    """A client from `StoreServer.client_args()` (or ``root=`` for a local directory)."""
    if kind is BackendKind.LOCAL_DIR:
        from kvledger.store.local_dir import LocalDirStore
        return LocalDirStore(args["root"])
    if kind is BackendKind.REDIS:
        from kvledger.store.redis_store import RedisStore
        return RedisStore(**args)
    from kvledger.store.mooncake_store import MooncakeStore
    return MooncakeStore(**args)
