"""The engine loop: admission order, chunk budget, batched decode, stats and input errors."""

from __future__ import annotations

import pytest

from engine.engine_factories import CheckedCache, prompts, tiny_model
from kvledger.engine.cached import prefix_cache
from kvledger.engine.config import TinyConfig
from kvledger.engine.fresh import FreshCache
from kvledger.engine.loop import Engine
from kvledger.engine.memory import PoolSizes
from kvledger.engine.script import Script, Turn

CFG = TinyConfig()


def fresh_engine(chunk_tokens=16, max_running=2, context=96):
    cache = CheckedCache(FreshCache(CFG, max_running_requests=max_running,
                                    max_context_tokens=context))
    return Engine(tiny_model(CFG), cache, chunk_tokens=chunk_tokens,
                  max_running_requests=max_running)


def test_prefill_is_chunked_and_decode_is_batched():
    engine = fresh_engine(chunk_tokens=16, max_running=2)
    out = engine.generate(prompts(0, [40, 10]), max_new_tokens=3)
    # Step 1: 16 tokens of request 0. Step 2: 16 more. Step 3: its last 8 + 8 of request 1.
    # Step 4: request 0 decodes, request 1's last 2. Step 5: both decode; step 6: request 1.
    assert engine.stats.forward_steps == 6
    assert engine.stats.computed_tokens == (40 + 2) + (10 + 2)  # the last token never runs
    assert [len(g.token_ids) for g in out] == [3, 3]
    assert engine.stats.generated_tokens == 6 and engine.stats.hit_rate == 0.0


def test_one_running_request_at_a_time_serialises():
    engine = fresh_engine(chunk_tokens=64, max_running=1)
    engine.generate(prompts(1, [20, 20]), max_new_tokens=2)
    assert engine.stats.forward_steps == 4  # (prefill, decode) × 2


def test_the_cache_persists_across_generate_calls():
    cache = prefix_cache(CFG, PoolSizes(num_pages=16))
    engine = Engine(tiny_model(CFG), cache, chunk_tokens=32)
    text = prompts(2, [50])[0]
    first = engine.generate([text], max_new_tokens=2)[0]
    second = engine.generate([text], max_new_tokens=2)[0]
    assert (first.cached_prompt_tokens, second.cached_prompt_tokens) == (0, 48)
    assert first.token_ids == second.token_ids


def test_a_request_larger_than_the_pools_is_reported():
    cache = prefix_cache(CFG, PoolSizes(num_pages=2, max_context_tokens=128))
    engine = Engine(tiny_model(CFG), cache)
    with pytest.raises(RuntimeError, match="request 0 does not fit in an empty cache"):
        engine.generate(prompts(3, [60]), max_new_tokens=2)


@pytest.mark.parametrize(("prompts_", "new", "message"), [
    ([[]], 2, "non-empty sequence"),
    ([[1, 256]], 2, r"0\.\.255"),
    ([[1, 2]], 0, "max_new_tokens"),
])
def test_bad_input_is_named(prompts_, new, message):
    with pytest.raises(ValueError, match=message):
        fresh_engine().generate(prompts_, new)


def test_scripts_refuse_turns_that_continue_the_future():
    with pytest.raises(ValueError, match="continues request 1"):
        Script(waves=((Turn(parent=None, tokens=(1,)), Turn(parent=1, tokens=(2,))),))
    with pytest.raises(ValueError, match="Turn.keep"):
        Turn(parent=None, tokens=(1,), keep=3)
