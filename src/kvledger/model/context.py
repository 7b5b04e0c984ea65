"""The context length a config allows, derived the way SGLang derives it.

SGLang's `get_context_length` (python/sglang/srt/utils/hf_transformers_utils.py) reads the
first of these keys that the text config sets, in this order of preference, and multiplies it
by the RoPE scaling `factor` unless the scaling already states its original length
(`original_max_position_embeddings`, e.g. DeepSeek's YaRN) or is Llama-3 style, where
`max_position_embeddings` is already the scaled length. Kimi-Linear sets only
`model_max_length`, which is why that key is on the list.

>>> from kvledger.model.reader import ConfigReader
>>> context_tokens(ConfigReader({"max_position_embeddings": 32768,
...                              "rope_scaling": {"type": "linear", "factor": 4.0}}, "c.json"))
131072
>>> context_tokens(ConfigReader({"model_max_length": 1048576}, "c.json"))
1048576
"""

from __future__ import annotations

from kvledger.model.reader import ConfigReader

CONTEXT_LENGTH_KEYS = (
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
)


def rope_factor(text: ConfigReader) -> float:
    rope = text.optional_section(text.pick("rope_scaling", "rope_parameters"))
    if rope is None or rope.has("original_max_position_embeddings"):
        return 1.0
    if rope.str(rope.pick("rope_type", "type"), "") == "llama3":
        return 1.0
    factor = rope.number("factor", 1.0)
    if factor <= 0:
        raise rope.error("factor", f"is {factor:g} (expected a positive RoPE scaling factor)")
    return factor


def context_tokens(text: ConfigReader) -> int:
    """Longest context the model accepts, tokens (SGLang's default when no flag is set)."""
    # When none is set the error names max_position_embeddings, the usual spelling.
    key = next((k for k in CONTEXT_LENGTH_KEYS if text.has(k)), CONTEXT_LENGTH_KEYS[-1])
    return int(text.int(key, minimum=1) * rope_factor(text))
