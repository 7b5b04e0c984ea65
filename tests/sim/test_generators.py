"""Generators: deterministic per seed, exact counts, arrival order, the intended sharing."""

from __future__ import annotations

import pytest

from kvledger.sim.generators import GENERATORS, GeneratorParams, get_generator
from kvledger.sim.workload import WorkloadError


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_same_seed_same_workload_other_seed_other(name):
    gen = GENERATORS[name]
    a = gen.generate(GeneratorParams(num_requests=300, seed=3))
    assert a == gen.generate(GeneratorParams(num_requests=300, seed=3))
    assert a != gen.generate(GeneratorParams(num_requests=300, seed=4))
    assert len(a.requests) == 300
    arrivals = [r.arrival_ms for r in a.requests]
    assert arrivals == sorted(arrivals)
    assert sorted(r.rid for r in a.requests) == list(range(300))


def test_chat_turns_grow_by_previous_answer_and_new_message():
    w = GENERATORS["chat"].generate(GeneratorParams(num_requests=400, seed=1))
    by_answer = {r.output_segment_id: r for r in w.requests}
    followups = 0
    for r in w.requests:
        prev = by_answer.get(r.segment_ids[-2]) if len(r.segment_ids) > 2 else None
        if prev is None:
            continue
        # the previous turn's prompt, then its answer, then one new user message
        assert r.segment_ids[:-2] == prev.segment_ids
        assert r.segment_tokens[-2] == prev.output_tokens
        assert r.arrival_ms > prev.arrival_ms
        followups += 1
    assert followups > 100  # most requests are later turns of a conversation


def test_shared_prompt_and_zipf_reuse_their_prefixes():
    shared = GENERATORS["shared-prompt"].generate(GeneratorParams(num_requests=500))
    assert len({r.segment_ids[0] for r in shared.requests}) == 8  # eight system prompts
    zipf = GENERATORS["zipf"].generate(GeneratorParams(num_requests=2000))
    docs = [r.segment_ids[1] for r in zipf.requests]
    top = max(set(docs), key=docs.count)
    # Zipf(1.1) over 1,000 documents: the hottest takes about 1/H(1000, 1.1) ≈ 16 % of picks.
    assert 0.10 < docs.count(top) / len(docs) < 0.22


def test_agent_steps_extend_the_same_context():
    w = GENERATORS["agent"].generate(GeneratorParams(num_requests=200, seed=2))
    by_call = {r.output_segment_id: r for r in w.requests}
    chained = sum(1 for r in w.requests
                  if len(r.segment_ids) > 2 and r.segment_ids[-2] in by_call)
    assert chained > 100


def test_bad_parameters_are_named():
    with pytest.raises(WorkloadError, match="--workload 'nope': expected one of chat"):
        get_generator("nope")
    with pytest.raises(WorkloadError, match="--num-requests 0"):
        GENERATORS["chat"].generate(GeneratorParams(num_requests=0))
    with pytest.raises(WorkloadError, match="--rate 0"):
        GENERATORS["zipf"].generate(GeneratorParams(rate_per_s=0))


def test_tool_use_fans_out_to_sub_agents_that_share_the_history():
    w = GENERATORS["tool-use"].generate(GeneratorParams(num_requests=300, seed=2))
    by_arrival: dict[float, list] = {}
    for r in w.requests:
        by_arrival.setdefault(r.arrival_ms, []).append(r)
    fans = [g for g in by_arrival.values() if len(g) > 1]
    assert fans  # sub-agents arrive together
    for group in fans:
        # each sub-agent is the same history plus its own sub-task
        assert len({r.segment_ids[:-1] for r in group}) == 1
        assert len({r.segment_ids[-1] for r in group}) == len(group)
        assert 2 <= len(group) <= 4
    assert len({r.segment_ids[0] for r in w.requests}) == 2  # two tool-schema prompts
    by_call = {r.output_segment_id: r for r in w.requests}
    assert sum(1 for r in w.requests if len(r.segment_ids) > 2
               and r.segment_ids[-2] in by_call) > 100  # steps extend the loop's context


def test_long_doc_qa_questions_share_the_document_and_diverge_after_it():
    w = GENERATORS["long-doc-qa"].generate(GeneratorParams(num_requests=400, seed=1))
    assert all(len(r.segment_ids) == 3 for r in w.requests)
    assert len({r.segment_ids[0] for r in w.requests}) == 1  # the shared instructions
    docs = [r.segment_ids[1] for r in w.requests]
    assert len(set(docs)) < len(docs) / 2  # documents are asked about again and again
    assert len({r.segment_ids[2] for r in w.requests}) == len(w.requests)  # fresh questions
    mean_doc = sum(r.segment_tokens[1] for r in w.requests) / len(w.requests)
    assert 10_000 < mean_doc < 40_000  # long: several 8,192-token prefill chunks
    assert all(r.output_segment_id is None for r in w.requests)  # answers are not fed back
