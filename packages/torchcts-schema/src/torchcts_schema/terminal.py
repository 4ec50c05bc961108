"""Artifact text made safe for a terminal: backend strings are data, never commands.

A backend message, a manifest value or a crafted archive may hold ANSI escapes, other
control characters or lone surrogates. Printing them raw lets a file move the cursor,
retitle the window or break the encoder of a pipe. Every tool passes artifact text
through `for_terminal` before it reaches stdout or stderr.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, C1 controls, lone surrogates, and the
# bidirectional overrides that can make a line read differently from what it holds
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with every control character, surrogate and bidi override escaped.

    Escapes are visible (``\\x1b``, ``\\ud800``), so a reader still sees that the
    original held them. With ``keep_newlines=False`` newlines are escaped too, for
    one-line output.
    """
    out = _UNSAFE.sub(_escape, text)
    if not keep_newlines:
        out = out.replace("\n", "\\n")
    return out


__all__ = ["for_terminal"]
