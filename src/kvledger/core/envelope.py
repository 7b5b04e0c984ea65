"""The one `--json` envelope every command prints, and the schema names inside it.

Every document is an object whose first four keys are the same:

    schema            "kvledger.<command>/<major>": keys are never removed or renamed within
                      a major version; a new major says so in the README's schema table
    kvledger_version  the package version that wrote it
    ignored_flags     flags given that have no effect here, as spelled (SGLang flags without
                      effect on the ledgers; [] for commands that take none)
    notes             assumptions and defaults applied, in words

followed by the command's own keys (documented in each document's module: plan_json,
sim_json, sweep_json, …). Enumerations are machine codes (`"binding": "state_slots"`),
bytes are exact integers, and floats are rounded where they are shown rounded.

>>> doc = envelope("models", {"models": []})
>>> list(doc)
['schema', 'kvledger_version', 'ignored_flags', 'notes', 'models']
>>> doc["schema"]
'kvledger.models/1'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kvledger.core.version import __version__

# command → schema major version; bumped when a key is removed or changes meaning.
SCHEMAS: dict[str, int] = {
    "plan": 2,  # 2: limits/binding/first_overflow are machine codes; notes from the host plan
    "vllm-plan": 1,  # plan --engine vllm
    "engines": 1,  # plan --engine sglang,vllm
    "explain": 1,
    "models": 1,
    "gpus": 1,
    "pools": 2,  # 2: `ignored` became the envelope's `ignored_flags`
    "simulate": 2,
    "simulate-compare": 1,  # simulate --compare: rows per state policy, then the ceiling; the offline bound  # 2: binding/blocked_ms keys are machine codes; host tokens renamed
    "simulate-vllm": 1,  # simulate --engine vllm: a serving run through vLLM's block cache
    "simulate-vllm-compare": 1,  # simulate --engine vllm --compare: knobs and policies
    "simulate-engines": 1,  # simulate --engine sglang,vllm: both engines, one trace and memory
    "simulate-fleet": 1,  # simulate --replicas R: per replica and fleet, the overload verdict
    "simulate-pd": 1,  # simulate --prefill-replicas P --decode-replicas D: PD against aggregated
    "simulate-slot-economy": 1,  # simulate --slot-economy: the shared track-pool what-if
    "simulate-lossy-checkpoints": 1,  # simulate --lossy-checkpoints: 8-bit checkpoint what-if
    "verify-lossy-checkpoints": 1,  # verify --lossy-checkpoints: logit error, not a proof
    "verify": 1,
    "check-log": 1,
    "replay": 1,
    "figures": 1,
    "report": 1,
    "sweep": 1,
    "compare": 1,
    "recommend": 1,
    "recommend-slo": 1,  # recommend --trace/--workload --ttft-p95-ms: a fleet sized by replay
    "recommend-pd": 1,  # recommend --pd: the prefill/decode splits of --nodes
}


def schema_name(command: str) -> str:
    return f"kvledger.{command}/{SCHEMAS[command]}"


def envelope(command: str, body: Mapping[str, Any], *, ignored_flags: Iterable[str] = (),
             notes: Iterable[str] = ()) -> dict[str, Any]:
    """The command's document inside the common envelope; body keys follow the four."""
    clash = {"schema", "kvledger_version", "ignored_flags", "notes"} & set(body)
    assert not clash, f"body repeats envelope keys {sorted(clash)}"
    return {"schema": schema_name(command), "kvledger_version": __version__,
            "ignored_flags": list(ignored_flags), "notes": list(notes), **body}
