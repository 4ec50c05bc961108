"""How a command TorchCTS prints names one of its own tools, so it works as pasted.

In a checkout of the project the console scripts live in the environment ``make run``
builds (``.nox/torchcts/bin``), which a newcomer has not activated; the checkout's
``bin/`` holds launchers of the same names that run them. A run started at the root of
a checkout records the prefix ``bin/`` (`TOOL_PREFIX_OPTION` in its options), and
every printed command (rerun lines, crash repros, resume hints) starts with
``bin/torchcts-...`` there and with the bare console script everywhere else.

The prefix is read back from artifacts that may be crafted, so only the two known
values are ever printed: a command is text a person pastes into a shell.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

LAUNCHER_DIR = "bin"
LAUNCHER_MARK = ".launch"  # the script the bin/torchcts-* names link to
CHECKOUT_PREFIX = f"{LAUNCHER_DIR}/"
TOOL_PREFIX_OPTION = "tool_prefix"
TOOLS = (
    "torchcts-run",
    "torchcts-report",
    "torchcts-evidence",
    "torchcts-cases",
    "torchcts-isolate",
    "python",  # the environment's interpreter, for repro scripts
)


def tool_prefix_at(root: Path | None = None) -> str:
    """``"bin/"`` when `root` (default: the current directory) is a checkout root
    with the launchers, else ``""``."""
    here = Path.cwd() if root is None else root
    return CHECKOUT_PREFIX if (here / LAUNCHER_DIR / LAUNCHER_MARK).is_file() else ""


def recorded_prefix(options: Mapping[str, Any]) -> str:
    """The prefix a run recorded, or ``""`` for anything but the one known value."""
    value = options.get(TOOL_PREFIX_OPTION)
    return CHECKOUT_PREFIX if value == CHECKOUT_PREFIX else ""


def tool_command(tool: str, prefix: str = "") -> str:
    """The word that starts a printed command of `tool` (``bin/torchcts-run``,
    ``bin/python`` for a repro script, which needs torch and the backend)."""
    if tool not in TOOLS:
        raise ValueError(f"{tool!r} is not a TorchCTS tool ({', '.join(TOOLS)})")
    return f"{CHECKOUT_PREFIX if prefix == CHECKOUT_PREFIX else ''}{tool}"


__all__ = [
    "CHECKOUT_PREFIX",
    "LAUNCHER_DIR",
    "TOOLS",
    "TOOL_PREFIX_OPTION",
    "recorded_prefix",
    "tool_command",
    "tool_prefix_at",
]
