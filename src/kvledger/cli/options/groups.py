"""Option groups: a frozen dataclass whose fields are typer options, spliced into commands.

Several commands take the same options (the model and memory inputs; the simulation knobs).
Each group is declared once as a dataclass whose field annotations carry the `typer.Option`;
`option_group(Group, "param")` adds those fields to a command's signature and hands the
command one `Group` instance, so a flag is spelled, documented and defaulted in one place.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Size:
...     width_tokens: int = 64
>>> @option_group(Size, "size")
... def cmd(name: str, size: Size, verbose: bool = False) -> str:
...     return f"{name}:{size.width_tokens}"
>>> list(inspect.signature(cmd).parameters)
['name', 'width_tokens', 'verbose']
>>> cmd("page", width_tokens=256)
'page:256'
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import fields
from typing import Any, get_type_hints


def option_group(group: type, param: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Replace `param` of the decorated command by the fields of `group`, as keyword options."""
    hints = get_type_hints(group, include_extras=True)
    names = [f.name for f in fields(group)]
    spliced = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                          annotation=hints[f.name])
        for f in fields(group)
    ]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command, eval_str=True)
        if param not in signature.parameters:
            raise TypeError(f"{command.__name__} has no parameter {param!r} to splice into")
        own = [p for p in signature.parameters.values() if p.name != param]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            return command(*args, **kwargs, **{param: group(**values)})

        # Required parameters (the typer.Context) stay first, the group's options come next
        # so `--help` lists them before a command's own options.
        required = [p for p in own if p.default is inspect.Parameter.empty]
        rest = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own
                if p.default is not inspect.Parameter.empty]
        params = required + spliced + rest
        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate
