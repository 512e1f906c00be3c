"""Names of a function's positional parameters, for messages that point at an argument."""

from __future__ import annotations

import inspect


def positional_names(fn, nargs) -> list[str]:
    names = [f"args[{i}]" for i in range(nargs)]
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return names
    for i, p in enumerate(params[:nargs]):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names[i] = p.name
        else:
            break
    return names
