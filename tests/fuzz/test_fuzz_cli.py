"""Fuzz the CLI's flags: `plan`, `pools`, `simulate`, `verify`, `replay` (both engines), `sweep`,
`recommend`, `compare`, and flag words (abbreviations, misspellings, other engines'
spellings) for every command, in-process.

Each case is a command line drawn from the real flag tables (kvledger's own options and every
SGLang flag `kvledger.sglang.launch` knows), with values drawn from the hostile set — NaN, ±inf,
1e308, 1e400, 400-digit integers, negatives, zero, empty and non-numeric text — or valid
ones. `fuzz_harness.check_invocation` holds each to exit 0 or 2, no traceback, strict JSON.

Bounds that keep a case short are part of the draw, not of the contract: `simulate` keeps
`--num-requests` small when valid (a valid million-request run is allowed and takes
minutes), `pools` never asks for `--full` (it may legitimately allocate most of the machine;
its memory check has its own test) and sizes its cpu draws only by the laptop scale-down, and `verify` gets only arguments it must refuse (a valid
workload runs the reference engine for seconds; tests/engine covers it).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzz_harness import check_invocation, fuzz_settings
from kvledger.model.config import embedded_names
from kvledger.sglang.launch.flags import FLAGS

HOSTILE = ["0", "-1", "1", "2", "nan", "NaN", "inf", "-inf", "1e308", "1e400", "-1e308",
           "9" * 400, "", " ", "abc", "1.5", "0.5", "1e-300", "0x10", "1_000", "128k", "128K",
           "2.5K", "-0", "+3", "1e3", "4294967296", "18446744073709551616", "None", "true",
           "1e-310", "5e-324", "2.2250738585072014e-308", "32k", "x" * 5_000]
VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(min_value=-10**6, max_value=10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=8),
)


PLAUSIBLE = st.sampled_from(["1", "2", "4", "8", "64", "256", "1024", "131072", "0.5", "0.9",
                             "1.0", "2.0", "128k"])


def _flag_value(flag) -> st.SearchStrategy[list[str]]:
    """One SGLang flag: about half the values plausible (so valid paths run), half hostile."""
    name = st.sampled_from(flag.spellings)
    if flag.switch:
        return name.map(lambda n: [n])
    choices = [c.strip() for c in flag.expects.split("|")] if "|" in flag.expects else []
    good = st.sampled_from(choices) if choices else PLAUSIBLE
    return st.tuples(name, st.one_of(good, good, VALUES)).map(list)


SGLANG_FLAGS = st.one_of(*[_flag_value(f) for f in FLAGS if f.key != "model_path"])
MODELS = st.sampled_from([*embedded_names(), "", " ", "nope", "zai-org/Nope", "/nonexistent",
                          "/", "../../etc/passwd"])
PLAN_OPTIONS = st.one_of(
    st.tuples(st.just("--model"), MODELS).map(list),
    st.tuples(st.just("--rules"), st.sampled_from(["sglang-0.5.21", "sglang-0.5.23", "", "x"]))
    .map(list),
    st.tuples(st.just("--gpu"), st.sampled_from(["H200", "B200", "h100", "", "tpu"])).map(list),
    st.tuples(st.sampled_from(["--available-gib", "--weights-gib", "--gpu-memory-gib",
                               "--activation-gib", "--cudagraph-gib", "--non-torch-gib"]),
              st.one_of(PLAUSIBLE, VALUES)).map(list),
    st.tuples(st.just("--engine"), st.sampled_from(["sglang", "vllm", "sglang,vllm", "", "x"]))
    .map(list),
    st.tuples(st.just("--hicache-state-share"), st.one_of(PLAUSIBLE, VALUES)).map(list),
    st.tuples(st.sampled_from(["--l3-size", "--l3-instances", "--l3-node-pages"]),
              st.one_of(PLAUSIBLE, VALUES)).map(list),
)


def _command(options: st.SearchStrategy[list[str]], max_flags: int = 3):
    return st.lists(options, max_size=max_flags).map(lambda groups: sum(groups, []))


@fuzz_settings(160)
@given(args=_command(st.one_of(PLAN_OPTIONS, SGLANG_FLAGS,
                               st.tuples(st.sampled_from(["--requests", "--context"]),
                                         st.one_of(PLAUSIBLE, VALUES)).map(list))),
       json=st.booleans())
def test_plan(args, json):
    check_invocation("plan", ["plan", *args, *(["--json"] if json else [])])


VLLM_VALUE_FLAGS = ["--tensor-parallel-size", "-tp", "--data-parallel-size",
                    "--gpu-memory-utilization", "--kv-cache-memory-bytes", "--max-model-len",
                    "--max-num-seqs", "--block-size", "--kv-cache-dtype",
                    "--mamba-ssm-cache-dtype", "--mamba-cache-mode", "--tp", "--context-length",
                    "--page-size", "--dp"]  # the last four: SGLang's spellings
VLLM_OPTIONS = st.one_of(
    st.tuples(st.sampled_from(VLLM_VALUE_FLAGS),
              st.one_of(PLAUSIBLE, VALUES, st.sampled_from(["auto", "fp8", "align", "none"])))
    .map(list),
    st.sampled_from([["--enforce-eager"], ["--no-enable-prefix-caching"],
                     ["--disable-radix-cache"], ["--speculative-config",
                                                 '{"num_speculative_tokens": 1e400}']]),
    st.tuples(st.sampled_from(["--activation-gib", "--non-torch-gib", "--cudagraph-gib"]),
              st.one_of(PLAUSIBLE, VALUES)).map(list),
)


@fuzz_settings(20)
@given(args=_command(VLLM_OPTIONS, max_flags=3), model=st.sampled_from(["llama-3.1-8b",
                                                                       "qwen3-next-80b-a3b-instruct"]))
def test_vllm_plan(args, model):
    check_invocation("plan --engine vllm", ["plan", "--engine", "vllm", "--gpu", "H200",
                                            "--model", model, *args, "--json"])


CPU_SIZING = {spelling for f in FLAGS if f.key in {"max_total_tokens", "max_mamba_cache_size",
                                                     "max_running_requests", "page_size",
                                                     "context_length"}
              for spelling in f.spellings}
SMALL_ON_CPU = {"llama-3.1-8b", "falcon-h1-0.5b"}


@fuzz_settings(40)
@given(args=_command(st.one_of(PLAN_OPTIONS, SGLANG_FLAGS), max_flags=2),
       device=st.sampled_from(["cpu", "meta", "gpu", ""]))
def test_pools(args, device):
    # On cpu the pools are allocated for real: GLM-5.3-Flash's scaled default holds 0.9 GB and
    # a size the user sets is kept (`ScaleDown.laptop`: `--max-total-tokens 128k` alone holds
    # 1.8 GB). So cpu draws run on meta, which parses, plans and builds the same with no memory
    # behind it, except for models whose scaled pools are small (about 0.1 GB);
    # tests/cli/test_pools_cmd.py allocates the default ones on cpu.
    model = args[args.index("--model") + 1] if "--model" in args else None
    if device == "cpu" and (CPU_SIZING.intersection(args) or model not in SMALL_ON_CPU):
        device = "meta"
    check_invocation("pools", ["pools", "--device", device, *args, "--json"])


SMALL_COUNT = st.one_of(st.integers(min_value=1, max_value=12).map(str),
                        st.integers(min_value=1, max_value=12).map(str),
                        st.sampled_from(["0", "-1", "nan", "1e400", "9" * 400, "", "1000000000000"]))
SIM_OPTIONS = st.one_of(
    st.tuples(st.sampled_from(["--rate", "--time-scale", "--step-overhead-ms",
                               "--prefill-ms-per-token", "--decode-ms-per-token"]),
              st.one_of(PLAUSIBLE, VALUES)).map(list),
    st.tuples(st.sampled_from(["--seed", "--chunked-prefill-size", "--mamba-track-interval"]),
              st.one_of(VALUES, st.sampled_from(["64", "256", "4096", "8192"]))).map(list),
    st.tuples(st.just("--hicache-write-policy"),
              st.sampled_from(["write_through", "write_back", "write_through_selective", "x"]))
    .map(list),
    st.just(["--enable-hierarchical-cache"]),
    st.tuples(st.just("--host-state-backup"), st.sampled_from(["all", "junctions", "", "x"]))
    .map(list),
    st.tuples(st.just("--hicache-state-share"), st.one_of(PLAUSIBLE, VALUES)).map(list),
    # the labelled what-ifs: valid kinds (two replays each) and hostile spellings
    st.tuples(st.just("--lossy-checkpoints"),
              st.sampled_from(["int8", "fp8", "int8", "fp8", "INT8", "int4", "fp8_e4m3", "", "x"]))
    .map(list),
    st.tuples(st.just("--slot-economy"),
              st.sampled_from(["shared-track", "shared-track=2", "shared-track=0",
                               "shared-track=-1", "shared-track=1e400", "pooled", ""])).map(list),
)


@fuzz_settings(50)
@given(workload=st.sampled_from(["chat", "agent", "shared-prompt", "zipf", "chat", "zipf", "",
                                 "nope"]),
       count=SMALL_COUNT, args=_command(st.one_of(SIM_OPTIONS, SGLANG_FLAGS), max_flags=2))
def test_simulate(workload, count, args):
    check_invocation("simulate", ["simulate", "--workload", workload, "--num-requests", count,
                                  "--no-progress", "--json", *args])


@fuzz_settings(30)
@given(args=st.one_of(
    st.tuples(st.just("--workload"), st.one_of(st.text(max_size=12), st.just(""))).map(list),
    _command(SGLANG_FLAGS, max_flags=2).filter(bool),
    st.lists(st.text(min_size=1, max_size=6).filter(lambda t: not t.startswith("-")),
             min_size=1, max_size=2).map(lambda extra: ["--workload", "branching", *extra]),
    # --lossy-checkpoints: only spellings it must refuse, or a workload it cannot cover
    st.tuples(st.just("--lossy-checkpoints"),
              st.one_of(st.text(max_size=8), st.sampled_from(["INT8", "int4", "fp16", ""]))
              .filter(lambda t: t not in ("int8", "fp8"))).map(list),
    st.sampled_from(["int8", "fp8"]).map(lambda kind: ["--lossy-checkpoints", kind,
                                                       "--workload", "host-write-back"]),
))
def test_verify(args):
    assert check_invocation("verify", ["verify", *args, "--json"]) == 2


REPLAY_TRACE = Path(tempfile.mkdtemp(prefix="kvledger-fuzz-")) / "trace.jsonl"
REPLAY_TRACE.write_text(
    '{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [1, 2]}\n'
    '{"timestamp": 5, "input_length": 700, "output_length": 2, "hash_ids": [1, 3]}\n')
REPLAY_OPTIONS = st.one_of(
    st.tuples(st.sampled_from(["--pool-tokens", "--state-slots", "--page-size"]),
              st.one_of(PLAUSIBLE, VALUES)).map(list),
    st.tuples(st.just("--components"), st.sampled_from(["full", "full+mamba", "", "x"])).map(list),
    st.tuples(st.just("--checkpoints"), st.sampled_from(["end", "branch", "x"])).map(list),
    st.tuples(st.just("--match-key"), st.sampled_from(["prompt", "prompt-minus-one", "x"]))
    .map(list),
    PLAN_OPTIONS,
)


@fuzz_settings(40)
@given(args=_command(st.one_of(REPLAY_OPTIONS, SGLANG_FLAGS), max_flags=3),
       pool=st.booleans())
def test_replay(args, pool):
    sized = ["--pool-tokens", "8192", "--state-slots", "8"] if pool else []
    check_invocation("replay", ["replay", "--trace", str(REPLAY_TRACE), *sized, *args,
                                "--no-progress", "--json"])


VLLM_REPLAY_OPTIONS = st.one_of(
    st.tuples(st.sampled_from(["--pool-tokens", "--block-size", "--checkpoint-blocks",
                               "--retention", "--mamba-groups"]),
              st.one_of(PLAUSIBLE, VALUES, st.just("dense"))).map(list),
    st.tuples(st.just("--components"), st.sampled_from(["full", "full+mamba", "", "x"])).map(list),
    st.tuples(st.just("--scheduler"), st.sampled_from(["async", "sync", "", "x"])).map(list),
    REPLAY_OPTIONS,
)


@fuzz_settings(40)
@given(args=_command(st.one_of(VLLM_REPLAY_OPTIONS, SGLANG_FLAGS), max_flags=3),
       pool=st.booleans())
def test_replay_vllm(args, pool):
    """vLLM's replay: its own options, SGLang's (refused by name) and deployment flags."""
    sized = ["--pool-tokens", "8192", "--block-size", "64"] if pool else []
    check_invocation("replay vllm", ["replay", "--engine", "vllm", "--trace", str(REPLAY_TRACE),
                                     *sized, *args, "--no-progress", "--json"])


AXIS = st.one_of(
    st.lists(st.sampled_from(["1", "2", "4", "8", "16"]), min_size=1, max_size=3, unique=True)
    .map(",".join),
    VALUES, st.sampled_from(["1,,2", "2,2", "-1,2", "0", "1048576", "1,3"]))
SWEEP_OPTIONS = st.one_of(
    st.tuples(st.sampled_from(["--tp", "--dp", "--replicas", "--nodes", "--nnodes"]), AXIS)
    .map(list),
    st.tuples(st.just("--gpu"), st.sampled_from(["H200", "H100,B200", "H200,nope", "", ","]))
    .map(list),
    st.tuples(st.sampled_from(["--requests", "--context", "--available-gib", "--weights-gib"]),
              st.one_of(PLAUSIBLE, VALUES)).map(list),
    st.tuples(st.sampled_from(["--kv-cache-dtype", "--mamba-ssm-dtype"]),
              st.sampled_from(["auto", "fp8_e4m3,bf16", "float32", "x", ""])).map(list),
    st.tuples(st.just("--engine"), st.sampled_from(["sglang", "vllm", "sglang,vllm", "x"]))
    .map(list),
)


@fuzz_settings(20)
@given(args=_command(SWEEP_OPTIONS, max_flags=3))
def test_sweep(args):
    check_invocation("sweep", ["sweep", *args, "--json"])


@fuzz_settings(10)
@given(requests=st.one_of(PLAUSIBLE, VALUES), context=st.one_of(PLAUSIBLE, VALUES),
       gpu=st.sampled_from(["H200", "B200,H100", "nope", ""]),
       extra=_command(st.one_of(SGLANG_FLAGS, st.tuples(st.just("--top"), VALUES).map(list)),
                      max_flags=1))
def test_recommend(requests, context, gpu, extra):
    # exit 1 is an answer here: nothing in the search space fits
    check_invocation("recommend", ["recommend", "--requests", requests, "--context", context,
                                   "--gpu", gpu, *extra, "--json"], exits=(0, 1, 2))


SIDES = st.sampled_from(["--tp 8", "--tp 4 --gpu H200", "--tp 0", "--tp x", "--engine vllm "
                         "--gpu H200 --tp 8", "--engine nope", "--gpu", "", "--tpp 2"])


@fuzz_settings(15)
@given(a=SIDES, b=SIDES, extra=_command(st.one_of(PLAN_OPTIONS, SGLANG_FLAGS), max_flags=1))
def test_compare(a, b, extra):
    check_invocation("compare", ["compare", "--a", a, "--b", b, *extra, "--json"])


# Every long option of every command and every engine flag, then cut, misspelt or given as
# the other engine spells it: each word is read as exactly one flag, or refused (exit 2).
def _words() -> list[str]:
    import typer

    from kvledger.cli import app
    from kvledger.sglang.launch.flags import VLLM_ALIASES
    from kvledger.sglang.launch.spellings import SGLANG_FLAGS as SGLANG_REGISTERED
    from kvledger.vllm.flags import SGLANG_ALIASES, VLLM_SPELLINGS

    own = {o for c in typer.main.get_command(app).commands.values() for p in c.params
           for o in p.opts if o.startswith("--")}
    return sorted(own | SGLANG_REGISTERED | VLLM_SPELLINGS | set(VLLM_ALIASES)
                  | set(SGLANG_ALIASES))


WORDS = _words()
# (not pools: each case that parses allocates its pools; test_pools fuzzes its flags)
COMMANDS = {"plan": [], "explain": [], "sweep": [],
            "simulate": ["--workload", "chat", "--num-requests", "3", "--no-progress"],
            "replay": ["--trace", str(REPLAY_TRACE), "--no-progress"],
            "check-log": [str(next((Path(__file__).parents[1] / "data" / "logs").glob("*.log")))],
            "recommend": ["--requests", "8", "--context", "4096", "--gpu", "H200"]}


@st.composite
def flag_word(draw) -> str:
    word = draw(st.sampled_from(WORDS))
    match draw(st.integers(min_value=0, max_value=3)):
        case 0:
            return word
        case 1:  # an abbreviation: what argparse would read as the one flag it begins
            return word[:draw(st.integers(min_value=3, max_value=max(3, len(word) - 1)))]
        case 2:  # a typo
            i = draw(st.integers(min_value=2, max_value=len(word) - 1))
            return word[:i] + draw(st.sampled_from("xz-")) + word[i + 1:]
        case _:
            return word.replace("-", "_", 1) if word.count("-") > 2 else word + "s"


@fuzz_settings(40)
@given(command=st.sampled_from(sorted(COMMANDS)), word=flag_word(),
       value=st.sampled_from(["8", "1", "32k", "vllm", "auto"]), with_value=st.booleans())
def test_flag_words(command, word, value, with_value):
    args = [command, *COMMANDS[command], word, *([value] if with_value else []), "--json"]
    exits = (0, 1, 2) if command in ("check-log", "recommend") else (0, 2)
    check_invocation(f"words {command}", args, exits=exits)
