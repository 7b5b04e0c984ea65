"""ConfigReader: typed access to a config.json dict whose errors name the file and the field.

>>> r = ConfigReader({"a": {"b": 3}}, source="cfg.json")
>>> r.section("a").int("b")
3
>>> r.section("a").int("c")
Traceback (most recent call last):
...
kvledger.model.arch.ModelError: cfg.json: field 'a.c' is missing (expected an integer)
>>> r.section("a").pick("c", "b"), r.text_config().prefix
('b', '')
>>> ConfigReader({"num_hidden_layers": 10**30}, source="cfg.json").int("num_hidden_layers")
Traceback (most recent call last):
...
kvledger.model.arch.ModelError: cfg.json: field 'num_hidden_layers' is of 31 digits (expected an integer <= 4096)

Every integer is bounded (`kvledger.core.limits`): layer counts by MAX_LAYERS (4,096; real models
have < 200), any other field by MAX_CONFIG_FIELD (2**32; the largest real value is a
rope_theta of 1e7). Numbers must be finite. A bound guards the arithmetic and the loops over
layers; it never models a real limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvledger.core.limits import MAX_LAYERS, show_value
from kvledger.model.arch import ModelError

_MISSING = object()
MAX_CONFIG_FIELD = 2**32  # any integer field of a config
LAYER_FIELDS = frozenset({"num_hidden_layers", "num_layers", "n_layer",
                          "num_nextn_predict_layers", "first_k_dense_replace"})


@dataclass(frozen=True, slots=True)
class ConfigReader:
    data: dict[str, Any]
    source: str
    prefix: str = ""

    def path(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def error(self, key: str, problem: str) -> ModelError:
        return ModelError(f"{self.source}: field '{self.path(key)}' {problem}")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def pick(self, *keys: str) -> str:
        """The first of several spellings of one field that the config sets, else the first.

        Releases of one family rename fields (`n_groups` → `mamba_n_groups`); reading through
        `pick` accepts either, and a missing field is reported under its first spelling.
        """
        return next((key for key in keys if self.has(key)), keys[0])

    def text_config(self) -> ConfigReader:
        """The language model's fields: `text_config` in multimodal wrappers, else the root."""
        return self.section("text_config") if self.has("text_config") else self

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        value = self.data.get(key, _MISSING)
        if value is _MISSING or value is None:
            if default is _MISSING:
                raise self.error(key, "is missing")
            return default
        return value

    def int(self, key: str, default: Any = _MISSING, *, minimum: int | None = None) -> int:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self.error(key, "is missing (expected an integer)")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"is {show_value(value)} (expected an integer)")
        if minimum is not None and value < minimum:
            raise self.error(key, f"is {show_value(value)} (expected an integer >= {minimum})")
        maximum = MAX_LAYERS if key in LAYER_FIELDS else MAX_CONFIG_FIELD
        if abs(value) > maximum:
            raise self.error(key, f"is {show_value(value)} (expected an integer <= {maximum})")
        return value

    def number(self, key: str, default: Any = _MISSING) -> float:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self.error(key, "is missing (expected a number)")
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"is {show_value(value)} (expected a number)")
        if abs(value) > MAX_CONFIG_FIELD or value != value:
            raise self.error(key, f"is {show_value(value)} (expected a finite number, "
                             f"|x| <= {MAX_CONFIG_FIELD})")
        return float(value)

    def bool(self, key: str, default: Any = _MISSING) -> bool:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self.error(key, "is missing (expected true or false)")
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"is {value!r} (expected true or false)")
        return value

    def str(self, key: str, default: Any = _MISSING) -> str:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self.error(key, "is missing (expected a string)")
            return default
        if not isinstance(value, str):
            raise self.error(key, f"is {value!r} (expected a string)")
        return value

    def int_list(self, key: str, default: Any = _MISSING) -> list[int]:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self.error(key, "is missing (expected a list of integers)")
            return default
        if not isinstance(value, list) or len(value) > MAX_LAYERS or not all(
            isinstance(v, int) and not isinstance(v, bool) and abs(v) <= MAX_CONFIG_FIELD
            for v in value
        ):
            raise self.error(key, f"is {show_value(value)} (expected a list of at most "
                             f"{MAX_LAYERS} integers, each |x| <= {MAX_CONFIG_FIELD})")
        return value

    def str_list(self, key: str, default: Any = _MISSING) -> list[str]:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self.error(key, "is missing (expected a list of strings)")
            return default
        if not isinstance(value, list) or len(value) > MAX_LAYERS or not all(
                isinstance(v, str) for v in value):
            raise self.error(key, f"is {show_value(value)} (expected a list of at most "
                             f"{MAX_LAYERS} strings)")
        return value

    def section(self, key: str) -> ConfigReader:
        value = self.data.get(key)
        if not isinstance(value, dict):
            problem = "is missing" if value is None else f"is {type(value).__name__}"
            raise self.error(key, f"{problem} (expected an object)")
        return ConfigReader(value, self.source, f"{self.prefix}{key}.")

    def optional_section(self, key: str) -> ConfigReader | None:
        return self.section(key) if self.has(key) else None
