"""Failure clusters: failing cases grouped by op family, error signature and dtype.

One backend bug usually fails many cases with the same message, differing only in
sizes, values and addresses. Normalising those out of the message gives a signature,
so the report can say "this one problem explains 340 failures" and hand over one
example with the command that reruns it.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath, PureWindowsPath

from torchcts_schema import (
    CaseRecord,
    RunMetadata,
    Status,
    node_id_for_case,
    recorded_prefix,
    tool_command,
)

from torchcts_report.text import one_line

FAILING: tuple[Status, ...] = (
    Status.CRASHED,
    Status.FAILED,
    Status.ERROR,
    Status.UNSUPPORTED,
)
# namespaces whose next segment is part of the op's identity
_NAMESPACES = ("nn.functional.", "linalg.", "fft.", "special.", "sparse.", "masked.")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][\w.\-~]+){2,}")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
_SPACES = re.compile(r"\s+")
SIGNATURE_LIMIT = 200
# torchcts-run takes --manifest; under plain pytest the plugin's flag is longer
_MANIFEST_FLAGS = ("--manifest", "--torchcts-manifest")
_POSIX_HOME = re.compile(r"^/(?:home|Users)/[^/]+/")
_WINDOWS_HOME = re.compile(r"^[A-Za-z]:\\Users\\[^\\]+\\", re.IGNORECASE)
MESSAGE_LIMIT = 300


@dataclass(frozen=True)
class Cluster:
    """Failing cases that share an op family, a signature and a dtype."""

    family: str
    signature: str
    dtype: str
    status: Status
    case_ids: tuple[str, ...]  # sorted

    @property
    def size(self) -> int:
        """How many cases the cluster explains."""
        return len(self.case_ids)

    @property
    def example(self) -> str:
        """The first case id, a stable example to start from."""
        return self.case_ids[0]


def op_family(op: str) -> str:
    """The op without variant suffix, in-place underscore or spatial dimension.

    ``max.reduction_with_dim`` -> ``max``; ``add_`` -> ``add``;
    ``nn.functional.conv2d`` -> ``nn.functional.conv``; ``linalg.svd`` stays.
    """
    prefix = next((ns for ns in _NAMESPACES if op.startswith(ns)), "")
    base = op[len(prefix) :].split(".", 1)[0]
    base = re.sub(r"[123]d$", "", base.rstrip("_")) or base
    return prefix + base if (prefix + base) else "(unknown)"


@lru_cache(maxsize=8192)
def normalise_message(text: str) -> str:
    """A message with addresses, paths and numbers replaced, whitespace collapsed.

    Only the start of the first line counts: signatures group, they do not quote.
    """
    head = text[: SIGNATURE_LIMIT * 8].strip()
    first = head.splitlines()[0] if head else ""
    value = _HEX.sub("0x?", first)
    value = _PATH.sub("<path>", value)
    value = _NUMBER.sub("N", value)
    return one_line(_SPACES.sub(" ", value), SIGNATURE_LIMIT)


def error_signature(record: CaseRecord) -> str:
    """What went wrong, without the details that differ from case to case."""
    if record.status is Status.CRASHED:
        crash = record.crash
        if crash is None:
            return "crashed (no crash details recorded)"
        how = crash.signal or (
            f"exit code {crash.exit_code}" if crash.exit_code is not None else ""
        )
        return one_line(f"crashed: {crash.kind.value} {how}".strip(), SIGNATURE_LIMIT)
    if record.status is Status.FAILED and record.mismatch:
        return "mismatch: " + normalise_message(record.mismatch)
    if record.exception_type or record.exception_message:
        kind = one_line(record.exception_type or "exception", 80)
        return f"{kind}: {normalise_message(record.exception_message or '')}"
    if record.detail:
        return normalise_message(record.detail)
    return f"{record.status.value} (no message recorded)"


def example_message(record: CaseRecord) -> str:
    """What went wrong in this one case, as recorded: first line, numbers kept.

    The signature groups cases; this is what a person reads for one of them.
    """
    if record.status is Status.CRASHED:
        crash = record.crash
        if crash is None:
            return "crashed (no crash details recorded)"
        how = crash.signal or (
            f"exit code {crash.exit_code}" if crash.exit_code is not None else ""
        )
        detail = f": {crash.detail}" if crash.detail else ""
        head = f"crashed: {crash.kind.value} {how}".strip()
        return one_line(head + detail, MESSAGE_LIMIT)
    if record.status is Status.FAILED and record.mismatch:
        return "mismatch: " + _first_line(record.mismatch)
    if record.exception_type or record.exception_message:
        kind = one_line(record.exception_type or "exception", 80)
        return f"{kind}: {_first_line(record.exception_message or '')}"
    if record.detail:
        return _first_line(record.detail)
    return f"{record.status.value} (no message recorded)"


def _first_line(text: str) -> str:
    head = text[: MESSAGE_LIMIT * 8].strip()
    return one_line(head.splitlines()[0] if head else "", MESSAGE_LIMIT)


def build_clusters(records: Iterable[CaseRecord]) -> list[Cluster]:
    """Clusters of failing records, largest first, ties in a stable name order."""
    groups: dict[tuple[str, str, str, Status], list[str]] = {}
    for record in records:
        if record.status not in FAILING:
            continue
        key = (
            op_family(record.op),
            error_signature(record),
            record.dtype or "(none)",
            record.status,
        )
        groups.setdefault(key, []).append(record.case_id)
    clusters = [
        Cluster(family, signature, dtype, status, tuple(sorted(ids)))
        for (family, signature, dtype, status), ids in groups.items()
    ]
    clusters.sort(
        key=lambda c: (-c.size, FAILING.index(c.status), c.family, c.signature, c.dtype)
    )
    return clusters


def manifest_of(metadata: RunMetadata, base: Path | None = None) -> str:
    """The manifest the run used, as a path a person can paste (never absolute).

    A relative path stays as recorded. An absolute one is made relative to `base`
    (the directory holding the results directory, where the rerun commands are run
    from) when it lies below it, else shown from the home directory as ``~/...``,
    else made relative to `base` with ``..``. Only without a `base` (a caller
    outside the report) does an absolute path outside a home shrink to its name.
    """
    value = metadata.options.get("manifest")
    if not isinstance(value, str) or not value:
        value = _manifest_from_command(metadata.command) or "manifest.py"
    if PureWindowsPath(value).is_absolute() and "\\" in value:
        home = _WINDOWS_HOME.match(value)
        return "~\\" + value[home.end() :] if home else PureWindowsPath(value).name
    if not PurePosixPath(value).is_absolute():
        return value
    if base is not None:
        root = os.path.abspath(base)
        inside = os.path.relpath(value, root)
        if not inside.startswith(".."):
            return inside
    home = _POSIX_HOME.match(value)
    if home:
        return "~/" + value[home.end() :]
    if base is not None:
        return os.path.relpath(value, os.path.abspath(base))
    return PurePosixPath(value).name


def rerun_command(
    metadata: RunMetadata,
    case_id: str,
    *,
    base: Path | None = None,
    isolate: bool = False,
) -> str:
    """The shell command that reruns exactly one case (in a child process if `isolate`).

    `base` is the directory the command is run from (see `manifest_of`).
    """
    flags = " --isolate all" if isolate else ""
    if metadata.options.get("validation") is True:
        flags = f" --validation{flags}"
    results = metadata.options.get("results")
    if (
        isinstance(results, str)
        and results
        and not PurePosixPath(results).is_absolute()
    ):
        flags = f" --results {shell_path(results)}{flags}"
    return (
        f"{tool_command('torchcts-run', recorded_prefix(metadata.options))} "
        f"--manifest {shell_path(manifest_of(metadata, base))}{flags} "
        f"{quote(node_id_for_case(case_id))}"
    )


def outside_list_command(
    metadata: RunMetadata, reason: str, *, base: Path | None = None
) -> str:
    """The command that lists the ids of the cases a run counted outside its level
    and filters for `reason` (a run records a count, the index has the ids)."""
    options = metadata.options
    flags = ""
    level = options.get("level")
    if isinstance(level, int) and not isinstance(level, bool):
        flags += f" --level {level}"
    for option, flag in (
        ("suites", "--suite"),
        ("dtypes", "--dtype"),
        ("op_globs", "--op"),
    ):
        values = options.get(option)
        if isinstance(values, list):
            flags += "".join(f" {flag} {quote(str(v))}" for v in values)
    return (
        f"{tool_command('torchcts-cases', recorded_prefix(options))} list "
        f"--manifest {shell_path(manifest_of(metadata, base))}{flags} "
        f"--not-run {quote(reason)}"
    )


def shell_path(path: str) -> str:
    """A quoted path whose leading ``~/`` stays outside the quotes, so it expands."""
    if path.startswith("~/"):
        return "~/" + quote(path[2:])
    return quote(path)


def quote(text: str) -> str:
    """Single-quote for POSIX shells, always, so commands look the same every time."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


@lru_cache(maxsize=64)
def _manifest_from_command(command: str) -> str | None:
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    for index, arg in enumerate(argv):
        if arg in _MANIFEST_FLAGS and index + 1 < len(argv):
            return argv[index + 1]
        flag, _, value = arg.partition("=")
        if value and flag in _MANIFEST_FLAGS:
            return value
    return None
