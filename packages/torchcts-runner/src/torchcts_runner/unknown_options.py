"""An option no parser of the run knows, said in one line with the closest known one.

``torchcts-run`` passes the options it does not own to pytest on purpose (``-x``,
``--maxfail 3``, ``-p no:foo``, ``-k EXPR``), so a typo such as ``--levle 4`` used
to reach pytest's own usage error: the whole usage text, then the ``inifile:`` and
``rootdir:`` lines with absolute paths. The plugin asks pytest's parser, once every
plugin and initial conftest has added its options, which flags it would refuse, and
stops the run with this line instead (pytest's usage error, exit status 4).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


def flag_name(argument: str) -> str:
    """``--levle`` for ``--levle=4``: the option as typed, without its value."""
    return argument.split("=", 1)[0] if argument.startswith("--") else argument


def unknown_option_line(unknown: Sequence[str], known: Iterable[str]) -> str | None:
    """The line naming the first of `unknown` (flags as pytest's parser left them),
    with the closest of `known` when one is close; None when nothing is unknown."""
    if not unknown:
        return None
    typed = flag_name(unknown[0])
    pool = sorted({k for k in known if k.startswith("--") == typed.startswith("--")})
    close = difflib.get_close_matches(typed, pool, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    more = f"; also unknown: {', '.join(flag_name(u) for u in unknown[1:])}"
    return f"unknown option {typed}{hint}{more if len(unknown) > 1 else ''}"


__all__ = ["flag_name", "unknown_option_line"]
