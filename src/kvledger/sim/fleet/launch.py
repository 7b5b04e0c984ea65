"""The commands that start a fleet: one SGLang server per replica, then the router in front.

Replicas are packed onto nodes of 8 GPUs: replica i of a tp-T layout runs on node
i // (8 // T) from GPU (i mod (8 // T)) · T (SGLang's `--base-gpu-id`), on port 30000 plus
its index on that node (SGLang's default port is 30000). Hosts are named node0, node1, …;
replace them with the real ones.

Routers, each as its project documents it:
  round-robin    SGLang router: `python -m sglang_router.launch_router --worker-urls …
                 --policy round_robin`
  prefix-aware   SGLang router `--policy cache_aware` (its defaults are the ones replayed)
  kv-aware       Dynamo frontend: `python -m dynamo.frontend --router-mode kv` (workers
                 register with Dynamo; docs.nvidia.com/dynamo, Router Guide)
  least-load, precise-prefix, state-aware: no one-line command (SGLang's router has no
                 shortest-queue policy — power_of_two samples two workers; llm-d's scorer is a
                 Kubernetes deployment; state-aware is kvledger's own, not in a released
                 router): the note says so.

>>> lines = replica_commands("python -m sglang.launch_server --tp-size 4", tp=4, replicas=3)
>>> lines[1]
'node0: python -m sglang.launch_server --tp-size 4 --port 30001 --base-gpu-id 4'
>>> worker_urls(tp=4, replicas=3)
('http://node0:30000', 'http://node0:30001', 'http://node1:30000')
"""

from __future__ import annotations

import shlex

from kvledger.sim.fleet.routers import RouterKind

GPUS_PER_NODE = 8
BASE_PORT = 30000
SGLANG_POLICY = {RouterKind.ROUND_ROBIN: "round_robin", RouterKind.PREFIX_AWARE: "cache_aware"}
NO_COMMAND = {
    RouterKind.LEAST_LOAD: "no released router runs shortest-queue alone (SGLang router's "
    "power_of_two is the nearest: it samples two workers)",
    RouterKind.PRECISE_PREFIX: "llm-d's precise prefix-cache scorer is deployed with llm-d's "
    "inference scheduler on Kubernetes (its precise-prefix-cache-aware guide)",
    RouterKind.STATE_AWARE: "kvledger's state-aware policy is not in a released router",
}


def _place(i: int, tp: int) -> tuple[int, int, int]:
    per_node = max(GPUS_PER_NODE // tp, 1)
    return i // per_node, BASE_PORT + i % per_node, (i % per_node) * tp


def replica_commands(server: str, *, tp: int, replicas: int) -> tuple[str, ...]:
    """`node: command` for each replica of the layout whose server command is `server`."""
    lines = []
    for i in range(replicas):
        node, port, gpu = _place(i, tp)
        extra = f" --port {port}" + (f" --base-gpu-id {gpu}" if gpu else "")
        lines.append(f"node{node}: {server}{extra}")
    return tuple(lines)


def worker_urls(*, tp: int, replicas: int) -> tuple[str, ...]:
    return tuple(f"http://node{node}:{port}"
                 for node, port, _ in (_place(i, tp) for i in range(replicas)))


def router_command(router: RouterKind, *, tp: int, replicas: int) -> tuple[str | None, str]:
    """(the router's command, a note); the command is None where no released router runs
    the policy, and a single replica needs none."""
    if replicas == 1:
        return None, "one replica: no router"
    if router in SGLANG_POLICY:
        words = ["python", "-m", "sglang_router.launch_router", "--worker-urls",
                 *worker_urls(tp=tp, replicas=replicas), "--policy", SGLANG_POLICY[router]]
        return shlex.join(words), "SGLang router"
    if router is RouterKind.KV_AWARE:
        return ("python -m dynamo.frontend --router-mode kv --http-port 8000",
                "Dynamo's KV router; the SGLang workers register with Dynamo "
                "(python -m dynamo.sglang) instead of the router's --worker-urls")
    return None, NO_COMMAND[router]
