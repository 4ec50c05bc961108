"""Which lines of a crash's stderr tail or traceback the report shows: the backend's.

A case that crashes under pytest-xdist leaves a faulthandler dump or traceback whose
last thirty lines are pytest, pluggy and execnet calling each other; the frames that
locate the crash (the backend kernel, the case code) sit before them and were cut.
So harness frames are dropped first (and counted), and only then is the text bounded:
in a faulthandler dump (most recent call first) the crashing thread's first frames
are kept, in a Python traceback (most recent call last) its last ones.
"""

from __future__ import annotations

import re

# frames of the test harness around every case, never the place of a crash
_HARNESS_FRAME = re.compile(
    r'^\s*File "[^"]*(?:^|[/\\])(?:_pytest|pytest|pluggy|execnet|xdist)[/\\]'
    r'|^\s*File "[^"]*(?:^|[/\\])runpy\.py"'
)
_FRAME = re.compile(r'^\s*File "')
_CURRENT_THREAD = re.compile(r"^(?:Current thread|Thread) .*most recent call first")


def backend_lines(text: str, max_lines: int) -> str:
    """`text` without harness frames, bounded to `max_lines` around the fault.

    Says how many harness frames and other lines were left out, never silently.
    """
    kept: list[str] = []
    harness = 0
    in_harness_frame = False
    for line in text.splitlines():
        if _HARNESS_FRAME.match(line):
            harness += 1
            in_harness_frame = True
            continue
        # a traceback prints the frame's source line under it, indented deeper
        if in_harness_frame and line.startswith("    ") and not _FRAME.match(line):
            continue
        in_harness_frame = False
        kept.append(line)
    notes = []
    if harness:
        notes.append(f"[{harness} pytest, pluggy, execnet or xdist frame(s) left out]")
    if len(kept) > max_lines:
        kept, cut = _around_fault(kept, max_lines)
        notes.append(f"[{cut} other line(s) left out]")
    return "\n".join([*notes, *kept])


def _around_fault(lines: list[str], max_lines: int) -> tuple[list[str], int]:
    current = next(
        (i for i, line in enumerate(lines) if line.startswith("Current thread")), None
    )
    if current is None:
        # a Python traceback: the innermost frames and the exception come last
        return lines[-max_lines:], len(lines) - max_lines
    # a faulthandler dump: the first line names the fault, the crashing thread's
    # frames follow its header innermost first
    head = lines[:1] if current > 0 else []
    body = lines[current : current + max_lines - len(head)]
    return [*head, *body], len(lines) - len(head) - len(body)


def same_text(first: str, second: str) -> bool:
    """True when one block holds the other (a stderr tail that is the traceback)."""
    a, b = first.strip(), second.strip()
    return bool(a) and bool(b) and (a in b or b in a)
