"""Reprs and dicts as users paste them: whole, or clipped with `...` or at the line's end.

Engines log their arguments as one long line: SGLang `server_args=ServerArgs(key=value, …)`
(a dataclass repr), vLLM `non-default args: {'key': value, …}` (a dict literal) and
`… with config: key=value, …`. Pasted into an issue these are often cut: `ServerArgs(
model_path='x', tp_size=4, ...)`, or a dict that stops mid-value. The keys that are there are
facts; a cut value is dropped, never guessed.

`top_level_items` splits the text at top-level commas (commas inside quotes, parentheses,
brackets and braces do not split) and reports whether the text ended inside a value.

>>> top_level_items("a=1, b=(2, 3), c='x, y', d=[4")
(['a=1', ' b=(2, 3)', " c='x, y'"], True)
>>> keyword_values("model_path='m', tp_size=4, dtype=torch.bfloat16, ...")
({'model_path': 'm', 'tp_size': 4}, ('dtype',), True)
>>> keyword_values("model_path='m', tp_size=4, mem_fraction_static=0.8", whole=False)
({'model_path': 'm', 'tp_size': 4}, (), True)
>>> dict_values("{'model': 'x', 'tensor_parallel_size': 2, 'max_model_len': 81")
({'model': 'x', 'tensor_parallel_size': 2}, (), True)
"""

from __future__ import annotations

import ast

_OPEN, _CLOSE = "([{", ")]}"
ELLIPSIS = ("...", "…")


def top_level_items(text: str) -> tuple[list[str], bool]:
    """Items at depth 0, and whether the text ends inside an unclosed value (cut)."""
    depth, quote, start = 0, "", 0
    items: list[str] = []
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    cut = bool(quote) or depth > 0
    if not cut:
        items.append(text[start:])
    return [item for item in items if item.strip()], cut


def _literal(raw: str) -> tuple[bool, object]:
    try:
        return True, ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def keyword_values(text: str, *, whole: bool = True
                   ) -> tuple[dict[str, object], tuple[str, ...], bool]:
    """`key=value` items: (literal values, keys whose value is no literal, clipped?).
    `whole`: the text ended where the engine ended it (its closing parenthesis was seen);
    otherwise the last item may be cut mid-value and is dropped."""
    items, cut = top_level_items(text)
    if not whole and not cut and items:
        items = items[:-1]
    values: dict[str, object] = {}
    opaque: list[str] = []
    clipped = cut or not whole
    for item in items:
        if item.strip() in ELLIPSIS:
            clipped = True
            continue
        key, sep, raw = item.strip().partition("=")
        if not (sep and key.isidentifier()):
            continue
        ok, value = _literal(raw)
        if ok:
            values[key] = value
        else:
            opaque.append(key)  # an object repr (torch.bfloat16, SomeConfig(…))
    return values, tuple(opaque), clipped


def dict_values(text: str) -> tuple[dict[str, object], tuple[str, ...], bool]:
    """`{'key': value, …}` items, the braces optional; same triple as keyword_values."""
    body = text.strip()
    body = body[1:] if body.startswith("{") else body
    whole = body.endswith("}")
    body = body[:-1] if whole else body
    items, cut = top_level_items(body)
    if not whole and not cut and items:
        items = items[:-1]  # the text stops mid-value: the last item may be cut
    values: dict[str, object] = {}
    opaque: list[str] = []
    clipped = cut or not whole
    for item in items:
        if item.strip() in ELLIPSIS:
            clipped = True
            continue
        ok_key, key = _literal(item.partition(":")[0])
        if not (ok_key and isinstance(key, str) and ":" in item):
            continue
        ok, value = _literal(item.partition(":")[2])
        if ok:
            values[key] = value
        else:
            opaque.append(key)
    return values, tuple(opaque), clipped
