"""The agentic tool-use workload (`--workload tool-use`): tool loops that fan out to sub-agents.

A task starts (Poisson, `rate_per_s` tasks per second) on one of a few long tool-schema
prompts shared by every task of that product, then the user's task. Each step is one request
whose prompt is the whole history; its output is the model's tool call, and the tool's result
follows after the tool's latency, so the next step's prompt is the history plus the call and
the result. With probability `fork_probability` a step also fans out: `fan_out` sub-agent
requests arrive at once, each the history plus its own sub-task, and their answers join the
history (a junction: one shared prefix, several branches, then the main loop goes on).

What the cache sees: a very long shared prefix (the schemas), a per-task prefix reused within
seconds and growing by call + result each step (results are heavy-tailed), and branch points
at every fan-out, where a state pays for all the branches.

Parameters (`ToolUseShape`, lengths in tokens, log-normal with the given mean and sigma):

| field | default | what |
|---|---|---|
| num_tool_prompts | 2 | distinct tool-schema prompts (products) |
| tool_prompt_tokens, tool_prompt_sigma | 8,000, 0.2 | one schema prompt |
| task_tokens | 400 | the user's task |
| mean_steps | 8 | steps per task: geometric (at least 1) with this mean |
| call_tokens, call_cap_tokens | 80, 1,000 | the model's tool call (the output, fed back) |
| result_tokens, result_sigma, result_cap_tokens | 1,500, 1.0, 16,000 | the tool's result |
| tool_latency_s | 1.5 | mean gap from a step to the next (exponential) |
| fork_probability | 0.25 | a step fans out to sub-agents |
| min_fan_out, max_fan_out | 2, 4 | sub-agents per fan-out (uniform between them) |
| subtask_tokens, subagent_answer_tokens, subagent_answer_cap_tokens | 200, 300, 4,000 | a sub-agent's prompt suffix and answer |

>>> from kvledger.sim.draws import GeneratorParams
>>> turns = tool_use_turns(GeneratorParams(num_requests=40, seed=1))
>>> len(turns) >= 40, len({t.segments[0][0] for t in turns}) <= ToolUseShape().num_tool_prompts
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.sim.draws import Draw, GeneratorParams, Turn


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseShape:
    num_tool_prompts: int = 2
    tool_prompt_tokens: int = 8_000
    tool_prompt_sigma: float = 0.2
    task_tokens: int = 400
    mean_steps: float = 8.0
    call_tokens: int = 80
    call_cap_tokens: int = 1_000
    result_tokens: int = 1_500
    result_sigma: float = 1.0
    result_cap_tokens: int = 16_000
    tool_latency_s: float = 1.5
    fork_probability: float = 0.25
    min_fan_out: int = 2
    max_fan_out: int = 4
    subtask_tokens: int = 200
    subagent_answer_tokens: int = 300
    subagent_answer_cap_tokens: int = 4_000


def tool_use_turns(params: GeneratorParams, shape: ToolUseShape = ToolUseShape()) -> list[Turn]:
    draw = Draw(params.seed)
    rng = draw.rng
    tools = [draw.segment(draw.length(shape.tool_prompt_tokens, sigma=shape.tool_prompt_sigma))
             for _ in range(shape.num_tool_prompts)]
    turns: list[Turn] = []
    start = 0.0
    while len(turns) < params.num_requests:
        start += draw.gap_ms(1 / params.rate_per_s)
        history = [tools[int(rng.integers(len(tools)))], draw.segment(draw.length(shape.task_tokens))]
        at = start
        for _ in range(int(rng.geometric(1 / max(shape.mean_steps, 1.0)))):
            if rng.random() < shape.fork_probability:
                answers = []
                for _ in range(int(rng.integers(shape.min_fan_out, shape.max_fan_out + 1))):
                    answer = draw.segment(draw.length(shape.subagent_answer_tokens,
                                                     cap=shape.subagent_answer_cap_tokens))
                    turns.append(Turn(arrival_ms=at, segments=(
                        *history, draw.segment(draw.length(shape.subtask_tokens))),
                        output_tokens=answer[1], output_segment_id=answer[0]))
                    answers.append(answer)
                history += answers  # the sub-agents' answers join the main history
                at += draw.gap_ms(shape.tool_latency_s)
            call = draw.segment(draw.length(shape.call_tokens, cap=shape.call_cap_tokens))
            turns.append(Turn(arrival_ms=at, segments=tuple(history), output_tokens=call[1],
                              output_segment_id=call[0]))
            history += [call, draw.segment(draw.length(shape.result_tokens, sigma=shape.result_sigma,
                                                       cap=shape.result_cap_tokens))]
            at += draw.gap_ms(shape.tool_latency_s)
    return turns
