"""The submission format: its fixed member names, and the shape of ``SUBMISSION.json``
(every field `archive` writes and what it holds).

`verify` checks a received body against the shape in one step, before a member is
hashed, so a crafted value (a list where a member name belongs, a bool where a count
does) is one problem naming the field, never a TypeError in a later stage that
assumed the type. The claims about the run are compared with the run afterwards
(`claims.claim_problems`); here only their types are checked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

SUBMISSION_FORMAT = "torchcts-submission"
SUBMISSION_VERSION = 1
SUBMISSION_NAME = "SUBMISSION.json"
MANIFEST_NAME = "manifest.py"
RESULTS_PREFIX = "results/"

Check = Callable[[Any], bool]


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _member(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(RESULTS_PREFIX)


def _counts(value: Any) -> bool:
    return isinstance(value, dict) and all(_count(n) for n in value.values())


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, str) for n in value)


def _files(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(entry, dict)
        and isinstance(entry.get("sha256"), str)
        and _count(entry.get("bytes"))
        for entry in value.values()
    )


TEXT: tuple[Check, str] = (_text, "a string")
# field -> (check, what it must be); ``format`` and ``format_version`` are checked
# first, on their own, so another version is named as such
FIELDS: dict[str, tuple[Check, str]] = {
    "backend": TEXT,
    "device": TEXT,
    "hardware_key": TEXT,
    "run_key": TEXT,
    "os": TEXT,
    "python": TEXT,
    "torch_version": TEXT,
    "torchcts_version": TEXT,
    "manifest_digest": TEXT,
    "manifest_backend": TEXT,
    "command": TEXT,
    "completed_normally": (lambda v: isinstance(v, bool), "true or false"),
    "started_at": TEXT,
    "ended_at": (lambda v: v is None or _text(v), "null or a string"),
    "counts": (_counts, "a map of status -> count"),
    "executed_cases": (_count, "a count"),
    "latest": (
        lambda v: v is None or _member(v),
        f"null or a name under {RESULTS_PREFIX}",
    ),
    "result": (_member, f"a member name under {RESULTS_PREFIX}"),
    "canonical_artifact": (
        lambda v: v is None or _member(v),
        f"null or a name under {RESULTS_PREFIX}",
    ),
    "scrubbed": (_names, "a list of member names"),
    "archived_by": TEXT,
    "files": (_files, "a map of name -> {sha256, bytes}"),
}


def _left_out(value: Any) -> bool:
    return isinstance(value, dict) and all(_names(v) for v in value.values())


# fields an archive of an earlier torchcts-evidence does not have; checked when present
OPTIONAL_FIELDS: dict[str, tuple[Check, str]] = {
    "left_out": (_left_out, "a map of reason -> member names"),
}


def submission_problems(body: dict[str, Any]) -> list[str]:
    """One line per field that is missing or not what `FIELDS` says, in its order
    (and per optional field present but not what `OPTIONAL_FIELDS` says).

    The line names the field and the JSON type found, never the value: a crafted
    value can be megabytes long.
    """
    problems = []
    for key, (check, what) in (FIELDS | OPTIONAL_FIELDS).items():
        if key not in body:
            if key not in OPTIONAL_FIELDS:
                problems.append(f"{SUBMISSION_NAME}: {key!r} is missing")
        elif not check(body[key]):
            problems.append(
                f"{SUBMISSION_NAME}: {key!r} is not {what} (found "
                f"{_json_type(body[key])})"
            )
    return problems


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def sha256_of(data: bytes) -> str:
    """``sha256:<hex>``, the digest form every TorchCTS file uses."""
    return "sha256:" + hashlib.sha256(data).hexdigest()
