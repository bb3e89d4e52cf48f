"""The "did you mean" of every error about an unknown name (a strategy, scenario, model profile, metric,
param or flag), shared by every layer so that each says it the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: How close a known name must be to count as meant (difflib's ratio; 0.6 is its default).
CUTOFF = 0.6


def did_you_mean(wanted: object, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known`` to a mistyped ``wanted``, else ""."""
    if not isinstance(wanted, str):
        return ""
    close = difflib.get_close_matches(wanted, [k for k in known if k != wanted], n=1, cutoff=CUTOFF)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_param(owner: str, param: str, known: Iterable[str], *, also: Iterable[str] = ()) -> str:
    """``<owner> has no param 'p' (did you mean 'q'?) (known: a, b)``: a param that ``owner`` (``strategy
    sliding_window``, ``scenario mix``) does not take, with the ones it does take. ``also`` are other
    keys the same table accepts (a strategy entry's ``label``, ``contracts``...): suggested, not listed."""
    params = list(known)
    return (f"{owner} has no param {param!r}{did_you_mean(param, [*params, *also])} "
            f"(known: {', '.join(params) if params else 'none'})")
