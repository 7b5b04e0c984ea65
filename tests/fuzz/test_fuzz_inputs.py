"""Fuzz the file boundaries: mutated config.json files and trace lines, through the CLI.

Configs: an embedded config with one to three of the fields it holds (the fields the family
readers use are among them) deleted or replaced — wrong type, zero, negative, huge, NaN,
Infinity, deeply nested — then `kvledger plan --model FILE --json`. Trace lines: a valid
Mooncake line with fields mutated the same way, or raw text, read by `kvledger simulate
--trace FILE --json` (1-3 lines, so each replay is short). Boot logs: a real SGLang or vLLM
log (tests/data/logs) with lines deleted, duplicated, replaced by noise or with a number
replaced by a hostile one, read by `kvledger check-log FILE --json` (exit 1 is an answer
there: a logged number differs). Every case is held to the boundary contract of
`fuzz_harness.check_invocation`.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzz_harness import check_invocation, fuzz_settings
from kvledger.model.config import CONFIG_DIR, embedded_names

WORK = Path(tempfile.mkdtemp(prefix="kvledger-fuzz-"))

HOSTILE_JSON = st.one_of(
    st.sampled_from([0, -1, 1, 3, 2**31, 2**63, 10**30, 10**400, 1e308, -1e308, 0.5, True,
                     False, None, "", "7", "abc", [], {}, [1, 2], {"a": 1}, [[[[[]]]]]]),
    st.integers(min_value=-10**6, max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=65, max_value=300).map(lambda d: json.loads("[" * d + "]" * d)),
)


def _paths(node, prefix=()):
    """Every key path of a JSON object (into objects, not into lists)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))


CONFIGS = {name: json.loads((CONFIG_DIR / f"{name}.json").read_text())
           for name in embedded_names()}
PATHS = {name: sorted(_paths(cfg)) for name, cfg in CONFIGS.items()}


@st.composite
def mutated_config(draw):
    name = draw(st.sampled_from(sorted(CONFIGS)))
    data = json.loads(json.dumps(CONFIGS[name]))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(PATHS[name]))
        parent = data
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict) or path[-1] not in parent:
            continue  # an earlier mutation replaced an ancestor
        if draw(st.booleans()) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(HOSTILE_JSON)
    return name, data


def _dump(value) -> str:
    # allow_nan: the files carry NaN/Infinity as Python's json writes them (HF configs can).
    return json.dumps(value, allow_nan=True)


@fuzz_settings(150)
@given(case=mutated_config())
def test_mutated_configs(case):
    _, data = case
    path = WORK / "config.json"
    try:
        path.write_text(_dump(data))
    except ValueError:  # an integer too long for str(): write it raw
        path.write_text(repr(data))
    check_invocation("plan --model config.json", ["plan", "--model", str(path), "--json"])


@fuzz_settings(30)
@given(raw=st.one_of(st.binary(max_size=64), st.sampled_from([b"", b"{}", b"[]", b"null",
                                                              b"{" * 5000, b"\xff\xfe{}"])))
def test_raw_config_bytes(raw):
    path = WORK / "raw.json"
    path.write_bytes(raw)
    assert check_invocation("plan --model raw", ["plan", "--model", str(path), "--json"]) == 2


GOOD_LINE = {"timestamp": 10, "input_length": 600, "output_length": 3, "hash_ids": [1, 2]}


@st.composite
def trace_line(draw) -> str:
    kind = draw(st.integers(min_value=0, max_value=5))
    if kind == 0:
        return draw(st.text(max_size=40)).replace("\n", " ")
    line = dict(GOOD_LINE)
    if kind >= 2:
        key = draw(st.sampled_from(sorted(line)))
        if draw(st.booleans()) and kind == 2:
            del line[key]
        else:
            line[key] = draw(HOSTILE_JSON)
    if kind == 5:  # a plausible valid line
        length = draw(st.integers(min_value=1, max_value=2_000))
        line = {"timestamp": draw(st.integers(min_value=0, max_value=10**6)),
                "input_length": length, "output_length": draw(st.integers(0, 64)),
                "hash_ids": list(range(-(-length // 512)))}
    try:
        return _dump(line)
    except ValueError:
        return repr(line)


@fuzz_settings(60)
@given(lines=st.lists(trace_line(), min_size=1, max_size=3))
def test_trace_lines(lines):
    path = WORK / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n")
    check_invocation("simulate --trace", ["simulate", "--trace", str(path), "--no-progress",
                                          "--json"])


LOGS = {p.name: p.read_text().splitlines()
        for p in sorted((Path(__file__).parents[1] / "data" / "logs").glob("*.log"))}
NUMBER = re.compile(r"\d+(?:\.\d+)?")
HOSTILE_NUMBERS = st.sampled_from(["0", "-1", "nan", "inf", "1e400", "9" * 400, "", "x",
                                   "0.0", "1e-300", "18446744073709551616"])


@st.composite
def mutated_log(draw) -> list[str]:
    lines = list(LOGS[draw(st.sampled_from(sorted(LOGS)))])
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        match draw(st.integers(min_value=0, max_value=3)):
            case 0:
                del lines[i]
            case 1:
                lines.insert(i, lines[i])
            case 2:
                lines[i] = draw(st.text(max_size=60)).replace("\n", " ")
            case _:
                spans = [m.span() for m in NUMBER.finditer(lines[i])]
                if spans:
                    a, b = spans[draw(st.integers(0, len(spans) - 1))]
                    lines[i] = lines[i][:a] + draw(HOSTILE_NUMBERS) + lines[i][b:]
        if not lines:
            lines = [""]
    return lines


@fuzz_settings(60)
@given(lines=mutated_log())
def test_log_lines(lines):
    path = WORK / "boot.log"
    path.write_text("\n".join(lines) + "\n")
    check_invocation("check-log", ["check-log", str(path), "--json"], exits=(0, 1, 2))
