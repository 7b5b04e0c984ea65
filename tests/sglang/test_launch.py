"""parse_flags and the flag table: every flag and alias, pasted commands, ignored flags, errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.model.quant import QuantMethod
from kvledger.sglang.deploy import (
    FIELD_FLAGS,
    Deployment,
    DeploymentError,
    DisaggMode,
    DraftModel,
    DsaBackend,
    GraphBackend,
    KVDtype,
    LinearBackend,
    MambaStrategy,
    SpecAlgorithm,
    StateDtype,
)
from kvledger.sglang.launch import FLAGS, IGNORED, UNSUPPORTED, flags_help, parse_flags
from kvledger.sglang.launch.flags import BY_SPELLING

# The article's deployment (GLM-5.3-Flash on 8 GPUs, DP attention, fp8 KV).
ARTICLE = ("python -m sglang.launch_server --model-path zai-org/GLM-5.3-Flash --tp 8 --dp 8 "
           "--enable-dp-attention --kv-cache-dtype fp8_e4m3")


def test_the_articles_launch_command():
    parsed = parse_flags(ARTICLE)
    assert parsed.model_ref == "zai-org/GLM-5.3-Flash"
    assert parsed.deployment == Deployment(tp_size=8, dp_size=8, enable_dp_attention=True,
                                           kv_cache_dtype=KVDtype.FP8_E4M3)
    # Article: "DP attention 且 attn_dp_size=tp_size（attn_tp=1）"
    assert (parsed.deployment.attn_dp_size, parsed.deployment.attn_tp_size) == (8, 1)
    assert parsed.set_fields == {"tp_size", "dp_size", "enable_dp_attention", "kv_cache_dtype"}
    assert (parsed.ignored, parsed.unrecognised, parsed.notes) == ((), (), ())


def test_pasted_multiline_command_lists_what_it_ignored():
    pasted = """
    SGLANG_VLM_CACHE_SIZE_MB=100 python3 -m sglang.launch_server \\
        --model-path zai-org/GLM-5.3-Flash --trust-remote-code \\
        --tp-size 8 --dp-size=8 --enable-dp-attention   # DP attention
        --kv-cache-dtype fp8_e4m3 --host 0.0.0.0 --port 30000 \\
        --served-model-name glm --enable-cache-report a b
    """
    parsed = parse_flags(pasted)
    assert parsed.deployment == parse_flags(ARTICLE).deployment
    assert parsed.ignored == ("--trust-remote-code", "--host", "--port", "--served-model-name",
                              "--enable-cache-report")
    # a real SGLang flag (0.5.21 and 0.5.23 parsers) that kvledger's table does not list
    assert parsed.unrecognised == ("--enable-cache-report",)
    assert parsed.notes == ("set aside before the launcher: SGLANG_VLM_CACHE_SIZE_MB=100",)


@pytest.mark.parametrize(
    ("argv", "model_ref", "notes"),
    [
        (["--tp", "2"], None, ()),
        (["--tp 2"], None, ()),  # one pasted string in a list
        ("python3 -m sglang.launch_server --tp 2", None, ()),
        ("/usr/bin/python3.11 -m sglang.launch_server --tp=2", None, ()),
        ("sglang serve zai-org/GLM-5.3-Flash --tp 2", "zai-org/GLM-5.3-Flash", ()),
        ("sglang serve --model zai-org/GLM-5.3-Flash --tp 2", "zai-org/GLM-5.3-Flash", ()),
        ("python -m sglang_router.launch_server --tp 2", None, ()),
        (["--", "python", "-m", "sglang.launch_server", "--tp", "2"], None, ()),
        (["--tp", "2", "--", "--dp", "1"], None, ()),
        ("docker run --gpus all lmsysorg/sglang python3 -m sglang.launch_server --tp 2", None,
         ("set aside before the launcher: docker run --gpus all lmsysorg/sglang",)),
        ("cd /srv && nohup python -m sglang.launch_server --tp 2 > server.log 2>&1 &", None,
         ("set aside before the launcher: cd /srv && nohup",
          "shell syntax set aside: > server.log 2>&1 &")),
        ("python -m sglang.launch_server --tp 2 2>&1 | tee server.log", None,
         ("shell syntax set aside: 2>&1 | tee server.log",)),
        ("--tp 2 >>log", None, ("shell syntax set aside: >>log",)),
    ],
)
def test_launch_shapes(argv, model_ref, notes):
    parsed = parse_flags(argv)
    assert parsed.deployment.tp_size == 2 and parsed.model_ref == model_ref
    assert parsed.notes == notes


def test_empty_argv_is_the_default_deployment():
    parsed = parse_flags([])
    assert parsed.deployment == Deployment() and parsed.model_ref is None
    assert parsed.set_fields == frozenset()


# One sample per flag key: (context flags, value, field checked, expected). Values are ones
# SGLang's argparse accepts for that flag (server_args.py choices / types).
SAMPLES = {
    "model_path": ([], "zai-org/GLM-5.3-Flash", None, "zai-org/GLM-5.3-Flash"),
    "tp_size": ([], "4", "tp_size", 4),
    "dp_size": ([], "2", "dp_size", 2),
    "enable_dp_attention": ([], None, "enable_dp_attention", True),
    "attn_cp_size": (["--tp-size", "8"], "2", "attn_cp_size", 2),
    "kv_cache_dtype": ([], "bfloat16", "kv_cache_dtype", KVDtype.BF16),
    "dsa_prefill_backend": ([], "trtllm", "dsa_backend", DsaBackend.TRTLLM),
    "dsa_decode_backend": ([], "trtllm", "dsa_backend", DsaBackend.TRTLLM),
    "page_size": ([], "64", "page_size", 64),
    "ep_size": (["--tp-size", "8"], "8", "ep_size", 8),
    "quantization": ([], "nvfp4", "quantization", QuantMethod.NVFP4),
    "mamba_ssm_dtype": ([], "bfloat16", "mamba_ssm_dtype", StateDtype.BFLOAT16),
    "mamba_strategy": ([], "extra_buffer", "mamba_strategy", MambaStrategy.EXTRA_BUFFER),
    "linear_attn_backend": ([], "cutedsl", "linear_attn_backend", LinearBackend.CUTEDSL),
    "mamba_full_memory_ratio": ([], "0.5", "mamba_full_memory_ratio", 0.5),
    "max_mamba_cache_size": ([], "256", "max_mamba_cache_size", 256),
    "disable_overlap_schedule": ([], None, "disable_overlap_schedule", True),
    "disable_radix_cache": ([], None, "disable_radix_cache", True),
    "mem_fraction_static": ([], "0.85", "mem_fraction_static", 0.85),
    "max_total_tokens": ([], "1M", "max_total_tokens", 1_048_576),
    "max_running_requests": ([], "64", "max_running_requests", 64),
    "context_length": ([], "128k", "context_length", 128_000),
    "speculative_algorithm": ([], "nextn", "speculative_algorithm", SpecAlgorithm.EAGLE),
    "speculative_num_steps": (["--speculative-algorithm", "EAGLE", "--speculative-eagle-topk",
                               "1"], "3", "speculative_num_draft_tokens", 4),
    "speculative_eagle_topk": (["--speculative-algorithm", "EAGLE", "--speculative-num-steps",
                                "2"], "1", "speculative_num_draft_tokens", 3),
    "speculative_num_draft_tokens": (["--speculative-algorithm", "NGRAM"], "8",
                                     "speculative_num_draft_tokens", 8),
    "speculative_dflash_block_size": (["--speculative-algorithm", "DFLASH"], "8",
                                      "speculative_num_draft_tokens", 8),
    "speculative_dspark_block_size": (["--speculative-algorithm", "DSPARK"], "3",
                                      "speculative_num_draft_tokens", 4),
    "speculative_draft_model_path": (["--model-path", "zai-org/GLM-5.3-Flash",
                                      "--speculative-algorithm", "EAGLE"],
                                     "zai-org/GLM-5.3-Flash", "speculative_draft_model",
                                     DraftModel.TARGET),
    "enable_hierarchical_cache": ([], None, "enable_hierarchical_cache", True),
    "hicache_ratio": (["--enable-hierarchical-cache"], "1.5", "hicache_ratio", 1.5),
    "hicache_size_gb": (["--enable-hierarchical-cache"], "64", "hicache_size_gb", 64),
    "pp_size": ([], "2", "pp_size", 2),
    "dcp_size": (["--tp", "4"], "2", "dcp_size", 2),
    "disaggregation_mode": ([], "decode", "disaggregation_mode", DisaggMode.DECODE),
    "disaggregation_decode_extra_slots": (["--disaggregation-mode", "decode"], "0",
                                          "disaggregation_decode_extra_slots", 0),
    "disaggregation_decode_enable_radix_cache": (["--disaggregation-mode", "decode"], None,
                                                 "disaggregation_decode_enable_radix_cache",
                                                 True),
    "disable_cuda_graph": ([], None, "disable_cuda_graph", True),
    "disable_prefill_cuda_graph": ([], None, "disable_prefill_cuda_graph", True),
    "disable_decode_cuda_graph": ([], None, "disable_decode_cuda_graph", True),
    "cuda_graph_backend_prefill": ([], "full", "cuda_graph_backend_prefill", GraphBackend.FULL),
    "cuda_graph_backend_decode": ([], "breakable", "cuda_graph_backend_decode",
                                  GraphBackend.BREAKABLE),
}


def test_every_flag_has_a_sample():
    assert {f.key for f in FLAGS} == set(SAMPLES)


@pytest.mark.parametrize(
    ("spelling", "inline"),
    [(s, inline) for f in FLAGS for s in f.spellings for inline in (False, True)
     if not (inline and f.switch)],
)
def test_every_flag_and_alias(spelling, inline):
    flag = BY_SPELLING[spelling]
    context, value, field, expected = SAMPLES[flag.key]
    word = [] if value is None else ([f"{spelling}={value}"] if inline else [spelling, value])
    parsed = parse_flags(context + ([spelling] if value is None else word))
    got = parsed.model_ref if field is None else getattr(parsed.deployment, field)
    assert got == expected
    assert field is None or field in parsed.set_fields


def test_the_tables_agree_on_each_fields_flag():
    # Deployment's error messages name the same spelling the table lists first.
    for field, flag in FIELD_FLAGS.items():
        for spelling in flag.split("/"):
            assert BY_SPELLING[spelling].spellings[0] == spelling, field


def test_help_lists_every_flag():
    text = flags_help()
    spellings = [s for f in FLAGS for s in f.spellings] + [u.spellings[0] for u in UNSUPPORTED]
    missing = [s for s in spellings + sorted(IGNORED) if s not in text]
    assert not missing


def test_repeated_flags_must_agree():
    same = parse_flags(["--tp", "8", "--tensor-parallel-size", "8", "--kv-cache-dtype", "bf16",
                        "--kv-cache-dtype", "bfloat16"])
    assert (same.deployment.tp_size, same.deployment.kv_cache_dtype) == (8, KVDtype.BF16)


def test_neutral_values_of_unsupported_flags_are_ignored():
    parsed = parse_flags(["--json-model-override-args", "{}", "--hicache-host-memory-mode",
                          "cache", "--tp", "2"])
    assert parsed.ignored == ("--json-model-override-args", "--hicache-host-memory-mode")
    assert parsed.unrecognised == ()


def test_ignored_flags_take_their_values_with_them():
    parsed = parse_flags(["--cuda-graph-bs-decode", "1", "2", "4", "--chunked-prefill-size",
                          "-1", "--tp", "2"])
    assert parsed.deployment.tp_size == 2
    assert parsed.ignored == ("--cuda-graph-bs-decode", "--chunked-prefill-size")
    assert parsed.unrecognised == ("--cuda-graph-bs-decode",)


def test_dsa_backend_pair_folds_into_the_row_layout():
    # calculate_mla_kv_cache_dim: trtllm on either side keeps raw rows
    both = parse_flags(["--nsa-prefill-backend", "flashmla_sparse", "--dsa-decode-backend", "fa3"])
    assert both.deployment.dsa_backend is DsaBackend.FA3 and "dsa_backend" in both.set_fields
    one = parse_flags(["--dsa-decode-backend", "flashmla_kv"])
    assert one.deployment.dsa_backend is DsaBackend.FLASHMLA_KV
    assert "dsa_backend" not in one.set_fields  # SGLang picks the prefill side per GPU
    assert one.notes == ("one DSA backend given: SGLang picks the other for the GPU and KV dtype "
                         "(trtllm for fp8 on Blackwell, which stores raw fp8 rows)",)


def test_hicache_size_zero_means_the_ratio():
    parsed = parse_flags(["--enable-hierarchical-cache", "--hicache-size", "0"])
    assert parsed.deployment.hicache_size_gb is None and "hicache_size_gb" in parsed.set_fields


ERRORS = [
    (["--tp", "x"], "--tp 'x': expected a positive integer"),
    (["--tp"], "--tp: expected a value: a positive integer"),
    (["--tp", "8", "9"], "--tp 8: unexpected extra word '9'"),
    (["--tp", "0"], "--tp-size 0: expected a positive integer"),
    (["--mem-fraction-static", "lots"], "--mem-fraction-static 'lots': expected a number in "
     "(0, 1]"),
    (["--mem-fraction-static", "inf"], "--mem-fraction-static 'inf': expected a number in "
     "(0, 1]"),
    (["--enable-dp-attention=true"], "--enable-dp-attention takes no value (got 'true')"),
    (["--disable-radix-cache", "yes"], "--disable-radix-cache takes no value (got 'yes')"),
    (["--kv-cache-dtype", "fp8"], "--kv-cache-dtype 'fp8': expected one of auto, bf16, fp8_e4m3, "
     "bfloat16"),
    (["--kv-cache-dtype", "fp8_e5m2"], "--kv-cache-dtype 'fp8_e5m2': a valid SGLang KV dtype that "
     "kvledger does not size; use one of auto, bf16, fp8_e4m3, bfloat16"),
    (["--mamba-scheduler-strategy", "extra_buffer_lazy"], "--mamba-scheduler-strategy "
     "'extra_buffer_lazy': a valid SGLang strategy that kvledger does not model; use one of "
     "auto, extra_buffer, no_buffer"),
    (["--hicache-size", "1.5"], "--hicache-size '1.5': expected a whole number of GB (0 = use "
     "the ratio)"),
    (["--context-length", "1.5K"], "--context-length '1.5K': binary suffix K takes a whole "
     "number; did you mean 1.5k?"),
    (["--tp", "8", "--tp-size", "4"], "--tp-size 4: contradicts --tp 8 given earlier"),
    (["--nsa-decode-backend", "trtllm", "--dsa-decode-backend", "fa3"],
     "--dsa-decode-backend fa3: contradicts --nsa-decode-backend trtllm given earlier"),
    # argparse (SGLang's parser, allow_abbrev): unknown and ambiguous flags exit 2
    (["--tpp", "8"], "--tpp: unknown flag; did you mean --tp?"),
    (["--some-new-flag", "a"], "--some-new-flag: unknown flag"),
    (["--max", "8"], "--max: ambiguous flag, could be --max-ep-size, --max-loaded-loras, "
     "--max-lora-chunk-size, --max-lora-rank, --max-loras-per-batch, --max-mamba-cache-size "
     "(and 4 more)"),
    ("sglang serve glm extra --tp 2", "'extra': SGLang takes no positional arguments here; "
     "expected a --flag"),
    (["8"], "'8': not an SGLang launch; expected flags (--tp 8 …), 'python -m "
     "sglang.launch_server …' or 'sglang serve …'"),
    (["--hicache-host-memory-mode", "buffer_only"], "--hicache-host-memory-mode buffer_only: "
     "buffer_only makes host memory a staging buffer; kvledger models only "
     "--hicache-host-memory-mode cache"),
    (["--dcp-size", "3", "--tp", "8"], "--dcp-size 3: SGLang needs it to divide --tp-size 8 "
     "(\"tensor_model_parallel_size must be divisible by decode_context_parallel_size\")"),
    (["--disaggregation-mode", "both"], "--disaggregation-mode 'both': expected one of null, "
     "prefill, decode"),
    (["--disaggregation-decode-extra-slots", "4"], "--disaggregation-decode-extra-slots 4: has "
     "no effect without --disaggregation-mode decode"),
    (["--enable-unified-memory"], "--enable-unified-memory: one shared byte buffer replaces the "
     "static pools; kvledger does not model it"),
    (["--config", "serve.yaml"], "--config: kvledger does not read SGLang config files; pass "
     "the flags themselves; kvledger does not model it"),
    ("vllm serve zai-org/GLM-5.3-Flash --tp 8", "'vllm serve zai-org/GLM-5.3-Flash': not an "
     "SGLang launch; expected flags (--tp 8 …), 'python -m sglang.launch_server …' or "
     "'sglang serve …'"),
    ("python -m sglang.launch_server --model-path 'glm", "cannot split the pasted command: "
     "No closing quotation"),
    ("sglang serve a --model-path b", "--model-path b: contradicts `sglang serve a`"),
    (["--hicache-ratio", "2"], "--hicache-ratio 2.0: has no effect without "
     "--enable-hierarchical-cache"),
]


@pytest.mark.parametrize(("argv", "message"), ERRORS)
def test_each_error_names_the_flag(argv, message):
    with pytest.raises(DeploymentError) as caught:
        parse_flags(argv)
    assert str(caught.value) == message


# A consistent deployment, each flag written in any of its spellings, in any order.
FULL = [
    ("tp_size", "8"), ("dp_size", "4"), ("enable_dp_attention", None),
    ("kv_cache_dtype", "fp8_e4m3"), ("dsa_decode_backend", "trtllm"),
    ("mamba_ssm_dtype", "bfloat16"), ("mamba_strategy", "extra_buffer"),
    ("max_running_requests", "64"), ("context_length", "131072"),
    ("enable_hierarchical_cache", None), ("hicache_ratio", "2"), ("speculative_algorithm", "EAGLE"),
]
_FLAG_OF = {f.key: f for f in FLAGS}


@settings(max_examples=60, deadline=None)
@given(st.permutations(FULL), st.lists(st.integers(0, 2), min_size=len(FULL), max_size=len(FULL)),
       st.lists(st.booleans(), min_size=len(FULL), max_size=len(FULL)))
def test_order_spelling_and_equals_form_do_not_matter(order, picks, inline):
    words: list[str] = []
    for (key, value), pick, eq in zip(order, picks, inline, strict=True):
        flag = _FLAG_OF[key]
        spelling = flag.spellings[pick % len(flag.spellings)]
        if value is None:
            words.append(spelling)
        else:
            words += [f"{spelling}={value}"] if eq else [spelling, value]
    assert parse_flags(words).deployment == Deployment(
        tp_size=8, dp_size=4, enable_dp_attention=True, kv_cache_dtype=KVDtype.FP8_E4M3,
        dsa_backend=DsaBackend.TRTLLM, mamba_ssm_dtype=StateDtype.BFLOAT16,
        mamba_strategy=MambaStrategy.EXTRA_BUFFER, max_running_requests=64,
        context_length=131_072, enable_hierarchical_cache=True, hicache_ratio=2.0,
        speculative_algorithm=SpecAlgorithm.EAGLE, speculative_num_draft_tokens=4,
    )


def test_unambiguous_prefixes_read_as_sglang_argparse_reads_them():
    # SGLang's docs launch with --speculative-algo NEXTN; its argparse parser (allow_abbrev,
    # prepare_server_args in server_args.py) reads any unique prefix as the flag.
    parsed = parse_flags(["--mem-frac", "0.8", "--speculative-algo", "NEXTN", "--kv-cache-d",
                          "fp8_e4m3"])
    dep = parsed.deployment
    assert dep.mem_fraction_static == 0.8 and dep.kv_cache_dtype is KVDtype.FP8_E4M3
    assert dep.speculative_algorithm is not None and parsed.ignored == ()


@pytest.mark.parametrize("alias, sglang", [("--max-model-len", "--context-length"),
                                           ("--block-size", "--page-size")])
def test_vllm_spellings_are_bare_flags_only_never_part_of_a_pasted_sglang_command(alias, sglang):
    # kvledger reads vLLM's spelling among bare flags, the same value as SGLang's
    bare = parse_flags([alias, "64"]).deployment
    assert bare == parse_flags([sglang, "64"]).deployment
    # SGLang's argparse refuses it in a real launch command, so a pasted one is refused too
    with pytest.raises(DeploymentError, match=f"^{alias}: not a flag of "
                       f"`python -m sglang.launch_server`.*spells it {sglang}$"):
        parse_flags(f"python -m sglang.launch_server --tp 2 {alias} 64")


@pytest.mark.parametrize(("algorithm", "topk", "draft_tokens", "steps_flag"), [
    (SpecAlgorithm.EAGLE, None, 4, None),  # unset: SGLang picks (3, 1, 4) itself
    (SpecAlgorithm.EAGLE, 1, 4, "--speculative-num-steps 3"),
    (SpecAlgorithm.EAGLE, 1, 6, "--speculative-num-steps 5"),
    (SpecAlgorithm.EAGLE3, 1, 3, "--speculative-num-steps 2"),
])
def test_a_speculative_launch_command_parses_back(algorithm, topk, draft_tokens, steps_flag):
    # SGLang's EAGLE handler (arg_groups/speculative_hook.py) refuses draft tokens without
    # steps, so the command states the chain's steps (draft tokens − 1 with topk 1) instead
    from kvledger.sglang.launch.line import sglang_command

    dep = Deployment(speculative_algorithm=algorithm, speculative_eagle_topk=topk,
                     speculative_num_draft_tokens=draft_tokens)
    line = sglang_command("zai-org/GLM-5.3-Flash", dep)
    assert "--speculative-num-draft-tokens" not in line
    assert (steps_flag in line) if steps_flag else ("--speculative-num-steps" not in line)
    back = parse_flags(line).deployment
    assert (back.speculative_algorithm, back.speculative_eagle_topk,
            back.speculative_num_draft_tokens) == (algorithm, topk, draft_tokens)


@pytest.mark.parametrize(("algorithm", "topk", "steps", "draft_tokens"), [
    (SpecAlgorithm.EAGLE, 4, 5, 8),  # Llama's EAGLE default tree, stated
    (SpecAlgorithm.EAGLE3, 2, 3, 6),
    (SpecAlgorithm.STANDALONE, 8, 1, 8),
])
def test_a_speculative_tree_states_its_steps_and_draft_tokens(algorithm, topk, steps,
                                                              draft_tokens):
    # with topk > 1 SGLang's handler derives neither steps nor draft tokens: both are written
    from kvledger.sglang.launch.line import sglang_command

    dep = Deployment(speculative_algorithm=algorithm, speculative_eagle_topk=topk,
                     speculative_num_steps=steps, speculative_num_draft_tokens=draft_tokens,
                     max_running_requests=48)  # what SGLang fills in when speculating
    line = sglang_command("zai-org/GLM-5.3-Flash", dep)
    assert f"--speculative-num-steps {steps} --speculative-num-draft-tokens {draft_tokens}" in line
    assert f"--speculative-eagle-topk {topk}" in line
    back = parse_flags(line)
    assert back.deployment == dep
    assert "speculative_num_steps" in back.set_fields


def test_pasted_steps_are_kept_for_an_eagle_chain_only():
    chain = parse_flags("--speculative-algorithm EAGLE --speculative-num-steps 2 "
                        "--speculative-eagle-topk 1").deployment
    assert (chain.speculative_num_steps, chain.speculative_num_draft_tokens) == (2, 3)
    # unset: SGLang picks (3, 1, 4) itself, and kvledger records no steps
    auto = parse_flags("--speculative-algorithm EAGLE").deployment
    assert (auto.speculative_num_steps, auto.speculative_num_draft_tokens) == (None, 4)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"speculative_algorithm": SpecAlgorithm.EAGLE, "speculative_num_draft_tokens": 8,
      "speculative_eagle_topk": 4},
     "--speculative-eagle-topk 4: with topk > 1 SGLang needs --speculative-num-steps too"),
    ({"speculative_algorithm": SpecAlgorithm.EAGLE, "speculative_num_draft_tokens": 4,
      "speculative_num_steps": 3},
     "--speculative-num-steps 3: needs --speculative-eagle-topk too"),
    ({"speculative_algorithm": SpecAlgorithm.EAGLE, "speculative_num_draft_tokens": 5,
      "speculative_eagle_topk": 1, "speculative_num_steps": 3},
     "--speculative-num-draft-tokens 5: with topk 1 SGLang runs steps \\+ 1 = 4 draft tokens"),
    ({"speculative_algorithm": SpecAlgorithm.NGRAM, "speculative_num_draft_tokens": 12,
      "speculative_eagle_topk": 1, "speculative_num_steps": 3},
     "--speculative-num-steps 3: is read with an EAGLE-family --speculative-algorithm only"),
    ({"speculative_algorithm": SpecAlgorithm.EAGLE, "speculative_num_draft_tokens": 4,
      "speculative_eagle_topk": 1, "speculative_num_steps": 0},
     "--speculative-num-steps 0: expected"),
])
def test_steps_are_validated_as_sglang_s_handler_reads_them(kwargs, message):
    with pytest.raises(DeploymentError, match=message):
        Deployment(**kwargs)
