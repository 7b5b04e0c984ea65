"""Two engine instances in two processes share one store: the second hits the first's
prefixes (every instance computes the same keys for the same prefix)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kvledger.store.backend import BackendKind

# each case starts two engine processes
pytestmark = pytest.mark.slow

INSTANCE = Path(__file__).with_name("instance.py")


def _start(kind: BackendKind, args: dict, salt: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(INSTANCE), kind.value, json.dumps(args), salt],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _stats(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()
    assert line, f"instance exited with {proc.wait()} before reporting"
    return json.loads(line)


def _stop(proc: subprocess.Popen) -> None:
    proc.stdin.write("\n")
    proc.stdin.flush()
    assert proc.wait(timeout=120) == 0


@pytest.mark.parametrize("kind", [k.value for k in BackendKind])
def test_second_process_hits_the_first_ones_prefixes(kind, servers, tmp_path):
    kind = BackendKind(kind)
    args = {"root": str(tmp_path)} if kind is BackendKind.LOCAL_DIR else None
    if args is None:
        server = servers(kind)
        args = server.client_args()
    salt = uuid.uuid4().hex  # a namespace of its own on the session's shared server
    first = _start(kind, args, salt)
    try:
        a = _stats(first)
        second = _start(kind, args, salt)
        try:
            b = _stats(second)
        finally:
            _stop(second)
    finally:
        _stop(first)
    assert a["identical"] and b["identical"]
    assert a["groups_committed"] >= 4
    # The second instance's device starts empty; all four first visits come from the store
    # (3 whole 16-token pages of each 54-token prompt), and it has nothing left to write.
    assert b["restored_pages"] >= 4 * 3 and b["misses"] == 0
    assert b["groups_committed"] < a["groups_committed"]
