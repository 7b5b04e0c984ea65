"""The deployment an SGLang paste states: `server_args=ServerArgs(…)` (whole or clipped), else
a launch command anywhere in it, then the flags given after `--` over either.

ServerArgs' attribute names are the flags' names (`tp_size` ↔ `--tp-size`); only the fields
that change memory (kvledger.sglang.launch.parse.DIRECT_FIELDS) are read.

>>> from kvledger.logs.lines import scan_log
>>> s = stated_deployment(scan_log("server_args=ServerArgs(model_path='m', tp_size=4, ...\\n"))
>>> s.model, s.deployment.tp_size, s.notes[0].split(':')[1].strip()
('m', 4, "ServerArgs(…) is clipped; the 2 keys it holds are read, SGLang's defaults assumed for the rest")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kvledger.logs.clipped import keyword_values
from kvledger.logs.lines import LogError, LogScan
from kvledger.sglang.deploy import FIELD_FLAGS, Deployment
from kvledger.sglang.launch import parse_flags
from kvledger.sglang.launch.command import split_launch
from kvledger.sglang.launch.parse import DIRECT_FIELDS


@dataclass(frozen=True, slots=True, kw_only=True)
class StatedDeployment:
    """The deployment a paste states, and where it came from."""
    deployment: Deployment
    model: str | None
    notes: tuple[str, ...]


HICACHE_KEYS = frozenset({"hicache_ratio", "hicache_size"})


def _unset_in_repr(key: str, value: object, values: dict[str, object]) -> bool:
    """True for a repr field that states nothing about the deployment. The repr prints every
    ServerArgs field, defaults included: 0.5.8 logs `hicache_ratio=2.0, hicache_size=0` on a
    server without HiCache (the ratio's default; later releases default it to None,
    0.5.21 arg_groups/fields/memory.py), and both act only with --enable-hierarchical-cache
    (arg_groups/hicache_hook.py), so without it they are not read as flags. hicache_size 0 is
    SGLang's own "unset" (memory.py's default: size by the ratio).

    >>> _unset_in_repr("hicache_ratio", 2.0, {"enable_hierarchical_cache": False})
    True
    >>> _unset_in_repr("hicache_ratio", 3.0, {"enable_hierarchical_cache": True})
    False

    Likewise 0.5.8's __post_init__ turns mamba_scheduler_strategy "auto" into "no_buffer" for
    every model (server_args.py, "Mamba scheduler strategy"), and turns the overlap schedule
    off only where no_buffer acts, a hybrid model's radix cache
    (_handle_model_specific_adjustments): a repr with no_buffer and the overlap on shows the
    resolved default of a server it did not act on, not a stated strategy.

    >>> _unset_in_repr("mamba_scheduler_strategy", "no_buffer", {"disable_overlap_schedule": False})
    True
    """
    if key == "mamba_scheduler_strategy":
        return value == "no_buffer" and values.get("disable_overlap_schedule") is not True
    if key not in HICACHE_KEYS:
        return False
    return values.get("enable_hierarchical_cache") is not True or (
        key == "hicache_size" and value == 0)


def _server_args(text: str, whole: bool, line_no: int
                 ) -> tuple[list[str], str | None, list[str], frozenset[str] | None]:
    """(flag words, model, notes, the fields a clipped repr still holds; None when whole)."""
    values, _, clipped = keyword_values(text, whole=whole)
    if not values:
        raise LogError(f"line {line_no}: ServerArgs(…) holds no key=value kvledger can read")
    words: list[str] = []
    for field in sorted(DIRECT_FIELDS):
        flag = FIELD_FLAGS[field]
        key = flag[2:].replace("-", "_")
        value = values.get(key)
        if value is None or value is False or _unset_in_repr(key, value, values):
            continue
        words += [flag] if value is True else [flag, str(value)]
    model = values.get("model_path")
    notes = [f"line {line_no}: ServerArgs(…) is clipped; the {len(values)} keys it holds are "
             "read, SGLang's defaults assumed for the rest"] if clipped else []
    held = frozenset(f for f in DIRECT_FIELDS if f in values) if clipped else None
    return words, model if isinstance(model, str) else None, notes, held


def _parsed(words: Sequence[str] | str, where: str):
    try:
        return parse_flags(words)
    except ValueError as exc:
        raise LogError(f"{where}: {exc}") from None


def _command(scan: LogScan):
    """(parsed flags, model) of the paste's launch command, or None."""
    if (cmd := scan.get("sglang_command")) is None:
        return None
    try:
        launch = split_launch(cmd.value)
    except ValueError as exc:
        raise LogError(f"line {cmd.line_no}: {exc}") from None
    parsed = _parsed(list(launch.flags), f"line {cmd.line_no}")
    return parsed, launch.model_ref or parsed.model_ref, cmd.line_no


def stated_deployment(scan: LogScan, flags: Sequence[str] = ()) -> StatedDeployment:
    """ServerArgs, else a launch command, then `flags` (given after `--`) over either. A
    clipped ServerArgs keeps the keys it holds; the paste's launch command, when it has one,
    gives the fields the clip lost (`--tp 2` after `max_running_requests=16, …`)."""
    notes: list[str] = []
    model = None
    command = _command(scan)
    if (args := scan.get("sglang_server_args")) is not None:
        words, model, notes, held = _server_args(args.groups[0], args.groups[1] == ")",
                                                 args.line_no)
        parsed = _parsed(words, f"line {args.line_no}")
        dep = parsed.deployment
        if held is not None and command is not None:
            lost = sorted(command[0].set_fields - held)
            dep = replace(dep, **{f: getattr(command[0].deployment, f) for f in lost})
            if lost:
                notes.append(f"line {command[2]}'s launch command gives what the clip lost: "
                             + ", ".join(lost))
    elif command is not None:
        parsed, model, line_no = command
        dep = parsed.deployment
        notes.append(f"deployment taken from the launch command on line {line_no}")
    else:
        dep = _parsed([], "defaults").deployment
        if not flags:
            notes.append("no server_args line or launch command: SGLang's defaults assumed")
    if (off := scan.get("sglang_radix_off")) is not None and not dep.disable_radix_cache:
        # server_args.py turns the radix cache off for models without support and says so
        # ("Disabling Radix Cache for KimiLinearForCausalLM as it is not yet supported.",
        # 0.5.8 ServerArgs._handle_model_specific_adjustments) before it prints ServerArgs
        dep = replace(dep, disable_radix_cache=True)
        notes.append(f"line {off.line_no}: SGLang disabled the radix cache for {off.value}")
    if flags:
        extra = _parsed(list(flags), "the flags after --")
        dep = replace(dep, **{f: getattr(extra.deployment, f) for f in extra.set_fields})
        model = extra.model_ref or model
        notes.append(f"deployment flags after --: {' '.join(flags)}")
    return StatedDeployment(deployment=dep, model=model, notes=tuple(notes))
