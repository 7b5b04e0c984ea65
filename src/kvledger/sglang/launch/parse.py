"""parse_flags: SGLang flags, or a pasted launch command, to a validated Deployment.

Rules, beyond SGLang's own (which keeps the last of repeated flags and accepts any
unambiguous abbreviation):
1. `--flag value` and `--flag=value`; a switch takes no value. SGLang takes no positional words.
2. A flag given twice (under any of its spellings) must agree with itself, or it is an error.
3. UNSUPPORTED flags are refused unless given their neutral value (then listed as ignored).
4. IGNORED flags, and SGLang flags the table does not list, are skipped with their values (the
   words up to the next --flag) and listed in `ignored`; the unlisted ones also in
   `unrecognised`.
5. A word is read as argparse reads it (`kvledger.sglang.launch.spellings`): an unambiguous prefix
   of an SGLang flag is that flag (`--mem-frac` is --mem-fraction-static), an ambiguous one
   or one SGLang does not know (`--tpp`) is an error, with a did-you-mean.
6. Defaults SGLang derives from flags alone are applied and named in `notes`: the draft tokens
   of a speculative algorithm, and --max-running-requests 48 under speculative decoding.
7. vLLM's spelling of a flag that means the same (`--max-model-len 32k` = --context-length,
   `--block-size`, `--mamba-ssm-cache-dtype`, `--no-enable-prefix-caching`) is read as the
   SGLang flag, spelled in full (`flags.VLLM_ALIASES`), among bare flags only: in a pasted
   SGLang command it is an error, because SGLang's own parser refuses it.

>>> p = parse_flags("python -m sglang.launch_server --model-path zai-org/GLM-5.3-Flash "
...                 "--tp 8 --dp 8 --enable-dp-attention --kv-cache-dtype fp8_e4m3 --port 30000")
>>> p.model_ref, p.deployment.attn_tp_size, p.deployment.kv_cache_dtype.value, p.ignored
('zai-org/GLM-5.3-Flash', 1, 'fp8_e4m3', ('--port',))
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kvledger.sglang.deploy import (
    EAGLE_FAMILY,
    FIELD_FLAGS,
    Deployment,
    DeploymentError,
    DisaggMode,
    DraftModel,
    DsaBackend,
)
from kvledger.sglang.launch.command import Launch, split_launch
from kvledger.sglang.launch.flags import (
    BY_SPELLING,
    IGNORED,
    UNSUPPORTED_BY_SPELLING,
    VLLM_ALIASES,
    Flag,
    Unsupported,
)
from kvledger.sglang.launch.speculative import MAX_RUNNING_REQUESTS, speculation
from kvledger.sglang.launch.spellings import SGLANG_SPELLINGS, read_flag

# Fields whose flag maps straight onto them; the rest are derived from several flags.
_DERIVED = {"dsa_backend", "speculative_algorithm", "speculative_num_draft_tokens",
            "speculative_num_steps", "speculative_draft_model"}
DIRECT_FIELDS = frozenset(FIELD_FLAGS) - _DERIVED


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedFlags:
    model_ref: str | None  # --model-path / --model / `sglang serve MODEL`
    deployment: Deployment
    ignored: tuple[str, ...]  # flags without effect here, as spelled, in order given
    unrecognised: tuple[str, ...]  # the ignored flags kvledger does not know at all
    set_fields: frozenset[str]  # Deployment fields the flags determined
    notes: tuple[str, ...]  # defaults applied and words set aside, for the user to see


def _groups(words: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """(flag, its values) pairs; values are the words up to the next --flag."""
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":  # end-of-options marker: nothing for SGLang to read
            i += 1
            continue
        if not word.startswith("--"):
            raise DeploymentError(f"{word!r}: SGLang takes no positional arguments here; "
                                  "expected a --flag")
        name, eq, inline = word.partition("=")
        j = i + 1
        while j < len(words) and not words[j].startswith("--"):
            j += 1
        yield name, ([inline] if eq else []) + list(words[i + 1:j])
        i = j


def _take(flag: Flag, name: str, args: list[str], values: dict, spelled: dict) -> None:
    if flag.switch:
        if args:
            raise DeploymentError(f"{name} takes no value (got {args[0]!r})")
        value, shown = True, name
    else:
        if not args:
            raise DeploymentError(f"{name}: expected a value: {flag.expects}")
        if len(args) > 1:
            raise DeploymentError(f"{name} {args[0]}: unexpected extra word {args[1]!r}")
        try:
            value = flag.parse(args[0])
        except ValueError as exc:
            reason = str(exc) or f"expected {flag.expects}"
            raise DeploymentError(f"{name} {args[0]!r}: {reason}") from None
        shown = f"{name} {args[0]}"
    if flag.key in values and values[flag.key] != value:
        raise DeploymentError(f"{shown}: contradicts {spelled[flag.key]} given earlier")
    values[flag.key], spelled[flag.key] = value, shown


def _check_unsupported(rule: Unsupported, name: str, args: list[str]) -> None:
    if rule.neutral is None:
        raise DeploymentError(f"{name}: {rule.reason}; kvledger does not model it")
    if args != [rule.neutral]:
        raise DeploymentError(f"{name} {' '.join(args)}: {rule.reason}; kvledger models only "
                              f"{name} {rule.neutral}")


def _dsa_backend(values: dict, notes: list[str]) -> tuple[DsaBackend | None, bool]:
    """The one backend that decides the fp8 row layout, and whether the flags settle it:
    calculate_mla_kv_cache_dim keeps raw rows when either side is trtllm; on a prefill or
    decode server only the local role's backend counts (both releases)."""
    prefill, decode = values.get("dsa_prefill_backend"), values.get("dsa_decode_backend")
    mode = values.get("disaggregation_mode", DisaggMode.NULL)
    if mode is not DisaggMode.NULL:
        local = decode if mode.is_decode else prefill
        if local is None and (prefill or decode) is not None:
            notes.append(f"{mode.label}: only the {mode.value} DSA backend sets the row layout, "
                         "and SGLang picks it for the GPU and KV dtype")
        return local, local is not None
    if prefill is None and decode is None:
        return None, False
    if DsaBackend.TRTLLM in (prefill, decode):
        return DsaBackend.TRTLLM, True
    if prefill is None or decode is None:
        notes.append("one DSA backend given: SGLang picks the other for the GPU and KV dtype "
                     "(trtllm for fp8 on Blackwell, which stores raw fp8 rows)")
        return decode or prefill, False
    return decode, True


def _draft_model(path: str, model_ref: str | None, notes: list[str]) -> DraftModel:
    """--speculative-draft-model-path against the model's path, as written (kvledger cannot
    tell whether two spellings name one checkpoint)."""
    if model_ref is not None and path.rstrip("/") == model_ref.rstrip("/"):
        return DraftModel.TARGET
    if model_ref is None:
        notes.append(f"--speculative-draft-model-path {path}: no model path to compare it "
                     "with; planned as another checkpoint")
    return DraftModel.OTHER


def _model_ref(launch: Launch, values: dict, spelled: dict) -> str | None:
    flag_ref = values.get("model_path")
    if launch.model_ref and flag_ref and launch.model_ref != flag_ref:
        raise DeploymentError(f"{spelled['model_path']}: contradicts `sglang serve "
                              f"{launch.model_ref}`")
    return flag_ref or launch.model_ref


def parse_flags(argv: Sequence[str] | str) -> ParsedFlags:
    """Flags as a list (`["--tp", "8"]`) or a pasted command (one string); see module doc."""
    launch = split_launch(argv)
    values: dict[str, object] = {}
    spelled: dict[str, str] = {}
    ignored: list[str] = []
    unrecognised: list[str] = []
    for word, args in _groups(launch.flags):
        if word in VLLM_ALIASES:  # vLLM's spelling, read exactly (module doc, rule 7)
            if launch.launcher:
                raise DeploymentError(
                    f"{word}: not a flag of `{' '.join(launch.launcher)}` (SGLang's parser "
                    f"refuses it); SGLang spells it {VLLM_ALIASES[word]}")
            _take(BY_SPELLING[VLLM_ALIASES[word]], word, args, values, spelled)
            continue
        name = read_flag(word, SGLANG_SPELLINGS)
        if name in BY_SPELLING:
            _take(BY_SPELLING[name], name, args, values, spelled)
            continue
        if name in UNSUPPORTED_BY_SPELLING:
            _check_unsupported(UNSUPPORTED_BY_SPELLING[name], name, args)
        elif name not in IGNORED:
            unrecognised.append(name)
        ignored.append(name)

    notes = [f"set aside before the launcher: {' '.join(launch.prefix)}"] if launch.prefix else []
    if launch.shell:
        notes.append(f"shell syntax set aside: {' '.join(launch.shell)}")
    kwargs = {key: value for key, value in values.items() if key in DIRECT_FIELDS}
    set_fields = set(kwargs)
    backend, settled = _dsa_backend(values, notes)
    if backend is not None:
        kwargs["dsa_backend"] = backend
        set_fields |= {"dsa_backend"} if settled else set()
    spec = speculation(values, spelled)
    notes += spec.notes
    if spec.algorithm is not None:
        kwargs |= {"speculative_algorithm": spec.algorithm,
                   "speculative_num_draft_tokens": spec.draft_tokens}
        set_fields |= {"speculative_algorithm", "speculative_num_draft_tokens"}
        if spec.algorithm in EAGLE_FAMILY and values.get("speculative_num_steps") is not None:
            kwargs["speculative_num_steps"] = values["speculative_num_steps"]
            set_fields.add("speculative_num_steps")
        if "max_running_requests" not in kwargs:
            kwargs["max_running_requests"] = MAX_RUNNING_REQUESTS
            notes.append(f"speculative decoding: SGLang sets --max-running-requests "
                         f"{MAX_RUNNING_REQUESTS} when it is not given")
    model_ref = _model_ref(launch, values, spelled)
    if spec.algorithm is not None and "speculative_draft_model_path" in values:
        kwargs["speculative_draft_model"] = _draft_model(
            values["speculative_draft_model_path"], model_ref, notes)
        set_fields.add("speculative_draft_model")
    return ParsedFlags(
        model_ref=model_ref,
        deployment=Deployment(**kwargs),
        ignored=tuple(ignored),
        unrecognised=tuple(unrecognised),
        set_fields=frozenset(set_fields),
        notes=tuple(notes),
    )
