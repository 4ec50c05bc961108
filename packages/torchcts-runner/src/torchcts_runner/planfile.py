"""The controller's plan, handed to xdist workers through one file.

Selection is the most expensive step before the first case (the OpInfo universe is
hundreds of thousands of cases, almost all not_run). The controller selects once and
writes the ordered runnable specs here; every worker, and every worker that replaces a
crashed one, reads the same file instead of selecting again, so all of them collect the
same items in the same order. A failed selection writes its message instead, so no
worker waits for a plan that will never come.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from torchcts_schema import write_atomic

PLAN_FORMAT = "torchcts-plan"
POLL_S = 0.02


class PlanFileError(Exception):
    """The plan file says selection failed, is unreadable, or never appeared."""


def plan_file_path(scratch: Path) -> Path:
    """The plan file of the controller running in this process."""
    return scratch / f"plan-{os.getpid()}.json"


def write_plan(path: Path, specs: Sequence[Any]) -> None:
    """Write the ordered runnable specs (their ``to_dict`` forms) atomically."""
    payload = {"format": PLAN_FORMAT, "to_run": [spec.to_dict() for spec in specs]}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(payload, separators=(",", ":")))


def write_plan_error(path: Path, message: str) -> None:
    """Tell the workers that selection failed, and why."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps({"format": PLAN_FORMAT, "error": message}))


def read_plan(
    path: Path,
    spec_from_dict: Callable[[dict[str, Any]], Any],
    *,
    timeout_s: float,
) -> list[Any]:
    """The specs of the plan at `path`, waiting for the controller to write it."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise PlanFileError(
                f"the controller wrote no case plan to {path.name} within {timeout_s:.0f} s"
            )
        time.sleep(POLL_S)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PlanFileError(f"case plan {path.name} is unreadable ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != PLAN_FORMAT:
        raise PlanFileError(f"case plan {path.name} is not a TorchCTS plan")
    if "error" in data:
        raise PlanFileError(str(data["error"]))
    return [spec_from_dict(item) for item in data["to_run"]]


__all__ = [
    "PlanFileError",
    "plan_file_path",
    "read_plan",
    "write_plan",
    "write_plan_error",
]
