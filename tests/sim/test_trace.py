"""Mooncake trace reader: the real trace, and every malformed field named with its line."""

from __future__ import annotations

import io

import pytest

from kvledger.sim.trace import TraceError, read_trace
from sim.sim_factories import TRACE


def _read(text: str):
    return read_trace(io.StringIO(text), name="t.jsonl")


def test_real_trace_counts():
    w = read_trace(TRACE)
    # Issue text: "3,993 requests, about 61 million prompt tokens"; exact sums of the file.
    assert len(w.requests) == 3_993
    assert w.prompt_tokens == 61_194_628
    assert w.output_tokens == 595_432
    first = w.requests[0]
    # Line 1: input_length 40160 = 78 full 512-token pages + 224, hash ids 0..78.
    assert first.segment_ids == tuple(range(79))
    assert first.segment_tokens == (512,) * 78 + (224,)


def test_good_lines_blank_lines_and_arrival_order():
    w = _read('{"timestamp": 30, "input_length": 512, "output_length": 1, "hash_ids": [5]}\n'
              "\n"
              '{"timestamp": 10.5, "input_length": 513, "output_length": 0, "hash_ids": [5, 6]}\n')
    assert [r.arrival_ms for r in w.requests] == [10.5, 30.0]
    assert [r.rid for r in w.requests] == [1, 0]  # rid = order in the file
    assert w.requests[0].segment_tokens == (512, 1)
    assert w.requests[1].segment_tokens == (512,)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "t.jsonl line 2: not valid JSON"),
        ("[1, 2]", "t.jsonl line 2: expected a JSON object, got list"),
        ('{"input_length": 5, "output_length": 1, "hash_ids": [1]}', "missing field 'timestamp'"),
        ('{"timestamp": 0, "output_length": 1, "hash_ids": [1]}', "missing field 'input_length'"),
        ('{"timestamp": 0, "input_length": 5, "hash_ids": [1]}', "missing field 'output_length'"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1}', "missing field 'hash_ids'"),
        ('{"timestamp": -1, "input_length": 5, "output_length": 1, "hash_ids": [1]}',
         "field 'timestamp' must be a non-negative number"),
        ('{"timestamp": "0", "input_length": 5, "output_length": 1, "hash_ids": [1]}',
         "field 'timestamp'"),
        ('{"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": []}',
         "field 'input_length' must be ≥ 1, got 0"),
        ('{"timestamp": 0, "input_length": 5.5, "output_length": 1, "hash_ids": [1]}',
         "field 'input_length' must be an integer"),
        ('{"timestamp": 0, "input_length": 5, "output_length": true, "hash_ids": [1]}',
         "field 'output_length' must be an integer"),
        ('{"timestamp": 0, "input_length": 5, "output_length": -2, "hash_ids": [1]}',
         "field 'output_length' must be ≥ 0"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": "1"}',
         "field 'hash_ids' must be a list of integers"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [-1]}',
         "field 'hash_ids' must be a list of integers"),
        ('{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [1]}',
         "field 'hash_ids' has 1 ids but input_length 1000 needs ceil(1000/512) = 2"),
    ],
)
def test_malformed_line_names_line_and_field(line, message):
    good = '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}\n'
    with pytest.raises(TraceError) as err:
        _read(good + line + "\n")
    assert message in str(err.value)
    assert "line 2" in str(err.value)


def test_empty_trace_is_an_error():
    with pytest.raises(TraceError, match="no requests"):
        _read("\n\n")


@pytest.mark.parametrize("arrival", [float("nan"), float("inf"), -1.0])
def test_a_request_built_in_python_refuses_a_non_finite_arrival(arrival):
    # A NaN arrival never compares due: Replay.run waited for it forever (issue 13).
    from kvledger.sim.workload import Request, WorkloadError

    with pytest.raises(WorkloadError, match="request 0: arrival_ms"):
        Request(rid=0, arrival_ms=arrival, segment_ids=(1,), segment_tokens=(5,),
                output_tokens=1)
