"""DeepSeek sparse attention (DSA): the indexer's shape and which layers own an indexer.

A DSA layer either runs its own indexer ("full") or reuses the previous full layer's top-k
("shared") and then has no indexer weights and writes no index keys. The per-layer choice
comes from, in order of precedence:
1. `indexer_types`: one "full" / "shared" per layer (GLM-5.x checkpoints);
2. `index_topk_pattern`: one "F" / "S" per layer, or a list of "full" / "shared";
3. `index_topk_freq` f and `index_skip_topk_offset` o: layer i owns an indexer iff
   max(i − o + 1, 0) mod f == 0, with o = 2 when unset; no `index_topk_freq` (f = 1) means
   every layer owns one (DeepSeek-V3.2).
This is SGLang's `dsa_layer_skips_topk` (python/sglang/srt/configs/model_config.py) and
transformers' `GlmMoeDsaConfig.__post_init__`, which derives `indexer_types` from the same
rule. When a config carries both `indexer_types` and a pattern or frequency (GLM-5.2 sets
`index_topk_freq` 4 and `index_skip_topk_offset` 3 next to its list), they must agree.

>>> from kvledger.model.reader import ConfigReader
>>> owners = indexer_owners(ConfigReader({"index_topk_freq": 4, "index_skip_topk_offset": 3},
...                                      "c.json"), num_layers=12)
>>> [i for i, owns in enumerate(owners) if owns]
[0, 1, 2, 6, 10]
"""

from __future__ import annotations

from kvledger.model.arch import IndexerShape
from kvledger.model.reader import ConfigReader

PATTERN_CHARS = {"F": True, "S": False}
INDEXER_TYPES = {"full": True, "shared": False}


def indexer_shape(text: ConfigReader) -> IndexerShape:
    # Pooling only happens with index_kpool_compress (GLM-5.3); otherwise one key per token.
    pooled = text.bool("index_kpool_compress", False)
    return IndexerShape(
        head_dim=text.int("index_head_dim", minimum=1),
        n_heads=text.int("index_n_heads", minimum=1),
        topk=text.int("index_topk", minimum=1),
        kpool=text.int("index_kpool", 1, minimum=1) if pooled else 1,
    )


def indexer_owners(text: ConfigReader, num_layers: int) -> tuple[bool, ...]:
    """For each decoder layer, whether a DSA layer there owns an indexer."""
    derived = _from_pattern(text, num_layers) or _from_freq(text, num_layers)
    if not text.has("indexer_types"):
        return derived or (True,) * num_layers
    owners = _from_list(text, "indexer_types", INDEXER_TYPES, num_layers)
    if derived is not None and derived != owners:
        first = next(i for i in range(num_layers) if derived[i] != owners[i])
        source = "index_topk_pattern" if text.has("index_topk_pattern") else "index_topk_freq"
        raise text.error(
            "indexer_types",
            f"says layer {first} is {'full' if owners[first] else 'shared'} but {source} "
            f"makes it {'full' if derived[first] else 'shared'} (expected them to agree)",
        )
    return owners


def _from_list(
    text: ConfigReader, key: str, values: dict[str, bool], num_layers: int
) -> tuple[bool, ...]:
    entries = text.str_list(key)
    if len(entries) != num_layers:
        raise text.error(
            key, f"has {len(entries)} entries (expected num_hidden_layers={num_layers})"
        )
    for i, entry in enumerate(entries):
        if entry not in values:
            raise text.error(f"{key}[{i}]", f"is {entry!r} (expected one of {sorted(values)})")
    return tuple(values[entry] for entry in entries)


def _from_pattern(text: ConfigReader, num_layers: int) -> tuple[bool, ...] | None:
    if not text.has("index_topk_pattern"):
        return None
    pattern = text.raw("index_topk_pattern")
    if isinstance(pattern, str):
        if len(pattern) != num_layers or set(pattern) - set(PATTERN_CHARS):
            raise text.error(
                "index_topk_pattern",
                f"is {pattern!r} (expected {num_layers} characters, each 'F' or 'S')",
            )
        return tuple(PATTERN_CHARS[c] for c in pattern)
    return _from_list(text, "index_topk_pattern", INDEXER_TYPES, num_layers)


def _from_freq(text: ConfigReader, num_layers: int) -> tuple[bool, ...] | None:
    freq = text.int("index_topk_freq", 1, minimum=1)
    if freq == 1:
        return None
    offset = text.int("index_skip_topk_offset", 2, minimum=1)
    return tuple(max(i - offset + 1, 0) % freq == 0 for i in range(num_layers))
