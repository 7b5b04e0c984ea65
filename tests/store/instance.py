"""One engine instance in its own process: runs the revisit script through the store named
on the command line, prints its store stats as JSON, then holds its client open until told
to exit on stdin (a Mooncake client's mounted segment holds the objects it stored)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("MC_LOG_LEVEL", "ERROR")

from kvledger.engine.memory import StoreTierSpec  # noqa: E402
from kvledger.store.backend import BackendKind  # noqa: E402
from kvledger.store.servers import open_backend  # noqa: E402
from store.store_harness import identical, run, script  # noqa: E402


def main() -> None:
    kind, args, salt = BackendKind(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
    backend = open_backend(kind, **args)
    outs, cache = run(StoreTierSpec(backend=backend, salt=salt), script())
    doc = asdict(cache.cache.store.stats)
    doc["identical"] = identical(outs)
    print(json.dumps(doc), flush=True)
    sys.stdin.readline()
    backend.close()


if __name__ == "__main__":
    main()
