"""The shape of one backend evidence entry, shared by the writer and the lint check.

Entries are path-free by construction (labels cannot hold '/' or '\\') and checked
again on every lint, so nothing a contributor's machine knows leaks into the store.
"""

from __future__ import annotations

import re
from typing import Any

from torchcts_schema import ExpectedSource, Status

ENTRY_VERSION = 1
INDEX_FORMAT = "torchcts-backend-evidence-index"
INDEX_VERSION = 1
INDEX_NAME = "index.json"
RESULT_ORDER = ("crashed", "error", "failed", "unsupported", "passed")
RUN_STATUSES = ("completed", "incomplete")
LABEL = re.compile(r"^[A-Za-z0-9_.:=+-]{1,80}$")
GATE = re.compile(r"^[A-Za-z0-9_.:=<>!+,() -]{1,120}$")
SURFACE = re.compile(r"^[A-Za-z0-9_.:+-]+(?:/[A-Za-z0-9_.:+-]+)*$")
TEXT = re.compile(r"^[^\\\x00-\x1f]{1,200}$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
RUN_ID = re.compile(r"^r-[0-9a-f]{16}$")

# key -> (checker, what it must be)
FIELDS: dict[str, tuple[Any, str]] = {
    "format_version": (lambda v: v == ENTRY_VERSION, f"the integer {ENTRY_VERSION}"),
    "run": (lambda v: _match(RUN_ID, v), "a run id 'r-<16 hex>'"),
    "date": (lambda v: _match(DATE, v), "a YYYY-MM-DD date"),
    "backend": (lambda v: _match(LABEL, v), "a label [A-Za-z0-9_.:=+-]"),
    "device": (lambda v: _match(LABEL, v), "a device type label"),
    "hardware_key": (lambda v: _match(LABEL, v), "a hardware key label"),
    "backend_gate": (lambda v: _match(GATE, v), "a path-free gate expression"),
    "torch_version": (lambda v: _match(LABEL, v), "a version label"),
    "torchcts_version": (lambda v: _match(LABEL, v), "a version label"),
    "surface": (lambda v: _match(SURFACE, v) and ".." not in v, "a relative surface"),
    "expected_source": (
        lambda v: v is None or v in {s.value for s in ExpectedSource},
        "null or one of " + ", ".join(s.value for s in ExpectedSource),
    ),
    "dtypes": (
        lambda v: isinstance(v, list) and all(_match(LABEL, d) for d in v),
        "a list of dtype labels",
    ),
    "cases": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0, ""),
    "counts": (
        lambda v: (
            isinstance(v, dict)
            and all(
                k in RESULT_ORDER and isinstance(n, int) and n > 0 for k, n in v.items()
            )
        ),
        "a map of executed status -> positive count",
    ),
    "result": (lambda v: v in RESULT_ORDER, "one of " + ", ".join(RESULT_ORDER)),
    "modifications": (
        lambda v: isinstance(v, list) and all(_match(LABEL, m) for m in v),
        "a list of path-free labels",
    ),
    "command_intent": (lambda v: _match(TEXT, v) and _path_free(v), "path-free text"),
    "run_status": (lambda v: v in RUN_STATUSES, "one of " + ", ".join(RUN_STATUSES)),
}


def entry_problems(entry: Any) -> list[str]:
    """Every way `entry` breaks the schema, each naming the key."""
    if not isinstance(entry, dict):
        return ["entry is not a JSON object"]
    problems = [f"unknown key {k!r}" for k in sorted(set(entry) - set(FIELDS))]
    for key, (check, what) in FIELDS.items():
        if key not in entry:
            problems.append(f"missing key {key!r}")
        elif not check(entry[key]):
            problems.append(f"{key}: {entry[key]!r} is not {what or 'valid'}")
    if not problems:
        counts = entry["counts"]
        if sum(counts.values()) != entry["cases"]:
            problems.append("counts do not add up to cases")
        worst = next((s for s in RESULT_ORDER if s in counts), None)
        if worst != entry["result"]:
            problems.append(
                f"result {entry['result']!r} is not the worst count {worst!r}"
            )
    return problems


def worst_result(counts: dict[str, int]) -> str:
    """The first of `RESULT_ORDER` present in `counts`."""
    return next(s for s in RESULT_ORDER if counts.get(s))


EXECUTED = frozenset(Status(s) for s in RESULT_ORDER)


def _match(pattern: re.Pattern[str], value: Any) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def _path_free(text: str) -> bool:
    return not (
        text.startswith(("/", "~"))
        or " /" in text
        or "=/" in text
        or ".." in text
        or re.search(r"(?<![A-Za-z0-9])[A-Za-z]:[\\/]", text)
    )
