"""Input limits: the one table of what an input boundary accepts, and the checks using it.

Every boundary — CLI values, SGLang flags (`Deployment`), config.json fields
(`ConfigReader`), trace lines — rejects non-finite, out-of-range and absurd values with a
message naming where the value came from and the range expected. "Absurd" means beyond any
real deployment by orders of magnitude, where the arithmetic would overflow a float or the
work would not end: a limit is a guard against nonsense, never a modelling assumption.

>>> check_number("--rate", 2.5, low=0, high=MAX_RATE_PER_S, low_open=True)
2.5
>>> check_number("--rate", float("nan"), low=0, high=MAX_RATE_PER_S, low_open=True)
Traceback (most recent call last):
...
ValueError: --rate nan: expected a finite number in (0, 1,000,000]
>>> check_int("--seed", -1, low=0, high=MAX_SEED)
Traceback (most recent call last):
...
ValueError: --seed -1: expected an integer in [0, 4,294,967,295]
>>> check_count("--replicas", 2**64, high=MAX_GPUS)
Traceback (most recent call last):
...
ValueError: --replicas of 20 digits: expected a positive integer (at most 1,048,576)
"""

from __future__ import annotations

import math
import os

MAX_COUNT = 2**40  # any token, slot, page or request count (a trillion: beyond every cluster)
MAX_LAYERS = 4_096  # decoder layers in a config (the largest real model has ~200)
MAX_CONFIG_INT = 2**53  # any other integer field of a config (beyond: not an honest integer)
MAX_CONFIG_BYTES = 64 << 20  # a config.json larger than this is not a model config
MAX_JSON_DEPTH = 64  # nesting of a config.json or a trace line (real ones nest < 6 deep)
MAX_GIB = float(2**30)  # memory flags: an exbibyte of GiB
MAX_HICACHE_RATIO = 10_000.0  # host pool : device pool
MAX_RATE_PER_S = 1e6  # generated sessions (or requests) per second
MAX_TIME_SCALE = 1e6  # arrival stretch factor
MAX_TIMESTAMP_MS = 1e13  # a trace's arrival time (~317 years of ms)
MAX_PROMPT_TOKENS = 2**24  # one request's prompt (16 Mi tokens, 16× the longest context)
MAX_OUTPUT_TOKENS = 2**24  # one request's output
MAX_SEED = 2**32 - 1  # numpy's seed range
MAX_GENERATED_REQUESTS = 1_000_000  # a generated workload (1,000× the default; ~2 GiB)
MAX_STEP_MS = 1e9  # step-time model costs per step or per token
MAX_GPUS = 1 << 20  # GPUs, nodes or engine instances of one deployment (5x the largest cluster)
MAX_JOBS = 1_024  # worker processes of one command (`--jobs`): beyond any one machine's cores
MIN_RATE_PER_S = 1e-6  # a generated rate below one session per ~12 days is no workload
MIN_EFFICIENCY = 1e-3  # roofline efficiencies: below 0.1 % of peak no kernel runs (subnormals
# admitted by (0, 1] made step times infinite)
MIN_STEP_MS = 1e-6  # a fixed step cost below a nanosecond (subnormals made throughput infinite)
MAX_LINE_BYTES = 4 << 20  # one trace line (a 16 Mi-token prompt's hash ids take ~400 KB)
MAX_LOG_BYTES = 64 << 20  # a boot log (real ones take < 1 MB; a whole server log is not one)
MEMORY_SHARE = 0.8  # an allocation may take at most this share of the memory available now


def _num(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _range(low: float, high: float, low_open: bool) -> str:
    return f"{'(' if low_open else '['}{_num(low)}, {_num(high)}]"


def check_number(where: str, value: object, *, low: float, high: float,
                 low_open: bool = False) -> float:
    """`value` as a float in [low, high] ((low, high] with `low_open`); else a ValueError
    naming `where` (a flag, or "file line N: field 'x'")."""
    ok = (isinstance(value, int | float) and not isinstance(value, bool)
          and math.isfinite(value) and (value > low if low_open else value >= low)
          and value <= high)
    if not ok:
        shown = show_value(value)
        raise ValueError(f"{where} {shown}: expected a finite number in "
                         f"{_range(low, high, low_open)}")
    return float(value)


def check_int(where: str, value: object, *, low: int, high: int) -> int:
    """`value` as an int in [low, high]; else a ValueError naming `where`."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{where} {show_value(value)}: expected an integer in "
                         f"[{_num(low)}, {_num(high)}]")
    return value


def check_count(where: str, value: object, *, high: int = MAX_COUNT) -> int:
    """`value` as a positive int of at most `high` (a count of tokens, slots, GPUs, ...)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise ValueError(f"{where} {show_value(value)}: expected a positive integer (at most "
                         f"{_num(high)})")
    return value


def show_value(value: object) -> str:
    """A value as an error message shows it: huge integers by their digit count."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        return f"of {len(str(abs(value)))} digits"
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "…")
    if isinstance(value, float):
        return f"{value:g}"
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"


def json_depth_ok(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether brackets nest at most `limit` deep (outside strings), without parsing."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def available_memory_bytes() -> int | None:
    """Memory this machine can hand out now (MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_allocation(what: str, num_bytes: int, hint: str) -> None:
    """Refuse to allocate `num_bytes` for `what` when it exceeds MEMORY_SHARE of what this
    machine has available now (checked before the work starts, so it never swaps or dies)."""
    available = available_memory_bytes()
    if available is not None and num_bytes > MEMORY_SHARE * available:
        raise ValueError(f"{what} needs {num_bytes / 2**30:,.2f} GiB but this machine has "
                         f"{available / 2**30:,.2f} GiB available; {hint}")
