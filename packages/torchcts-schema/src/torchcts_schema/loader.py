"""The one loader every tool uses to read a result, whatever form it is in.

It accepts a results directory, a ``<key>_latest.json`` (snapshot or reference), a
history artifact or a journal; follows references safely; prefers the journal when it
holds more cases than the snapshot; and turns every malformed input into one
`ArtifactError` that names the file.

Every JSON artifact it loads is checked against its digest (format 2; format 1 has
none), and a canonical one (anything but a recovery snapshot, whose counts lag its
records during a run) must have metadata counts that agree with its records. A
``<key>_latest.json`` or journal that is a symlink out of its directory is refused
like a reference that leaves it.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

from torchcts_schema.artifact import RESULT_FORMAT, RunArtifact, decode_artifact
from torchcts_schema.errors import ArtifactError
from torchcts_schema.integrity import DIGEST_KEY, check_counts, check_digest
from torchcts_schema.journal import read_journal
from torchcts_schema.layout import (
    JOURNAL_SUFFIX,
    LATEST_SUFFIX,
    SELECTIONS_DIR,
    ResultsLayout,
    run_key_of,
)
from torchcts_schema.records import RunMetadata
from torchcts_schema.store import REFERENCE_FORMAT, REFERENCE_VERSION

MAX_REFERENCE_DEPTH = 8


def load_result(path: Path | str, *, run_key: str | None = None) -> RunArtifact:
    """Load the result that `path` designates; see the module docstring."""
    path = Path(path)
    if path.is_dir():
        return load_result(find_latest(path, run_key=run_key))
    if not path.exists():
        raise ArtifactError(path, "no such file")
    _refuse_escaping_link(path)
    if path.name.endswith(JOURNAL_SUFFIX):
        return rebuild_from_journal(path)
    return _load_json_artifact(path, root=path.parent, seen=[])


def find_latest(results_dir: Path, *, run_key: str | None = None) -> Path:
    """The ``<key>_latest.json`` (or journal) of the only run key, or of `run_key`."""
    if run_key is not None:
        layout = ResultsLayout(results_dir, run_key)
        for candidate in (layout.latest, layout.journal):
            if candidate.exists():
                return candidate
        raise ArtifactError(results_dir, f"no result for run key {run_key!r}")
    keys = sorted(run_keys(results_dir))
    if not keys:
        raise ArtifactError(
            results_dir,
            f"no *{LATEST_SUFFIX} or *{JOURNAL_SUFFIX} here{_subset_hint(results_dir)}",
        )
    if len(keys) > 1:
        raise ArtifactError(
            results_dir,
            f"several run keys ({', '.join(keys)}); name one with --run-key KEY",
        )
    return find_latest(results_dir, run_key=keys[0])


def _subset_hint(results_dir: Path) -> str:
    """Where the results are when only subset runs wrote here."""
    selections = results_dir / SELECTIONS_DIR
    if not selections.is_dir() or selections.is_symlink():
        return ""
    names = sorted(p.name for p in selections.iterdir() if p.is_dir())
    if not names:
        return ""
    shown = ", ".join(f"{SELECTIONS_DIR}/{n}" for n in names[:3])
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return f"; only subset runs wrote here, each in its own folder: {shown}{more}"


def run_keys(results_dir: Path) -> set[str]:
    """Every run key with a latest file or a journal in `results_dir`."""
    keys = set()
    for entry in results_dir.iterdir():
        key = run_key_of(entry.name)
        if key is not None:
            keys.add(key)
    return keys


def resolve_reference(path: Path) -> Path:
    """Follow references from `path` to the artifact file they end at."""
    _refuse_escaping_link(path)
    seen: list[Path] = []
    current = path
    while True:
        data = _read_json(current)
        if not _is_reference(data):
            return current
        current = _reference_target(current, data, root=path.parent, seen=seen)


def rebuild_from_journal(path: Path) -> RunArtifact:
    """An artifact from the journal alone (after a kill, or a stale snapshot)."""
    contents = read_journal(path)
    if contents.metadata is None:
        raise ArtifactError(path, "journal has no run_start line, so no run metadata")
    records = list(contents.records.values())
    metadata = contents.metadata
    if not contents.ended:
        metadata = RunMetadata.from_dict(
            {**metadata.to_dict(), "completed_normally": False}
        )
    diagnostics = dict(contents.diagnostics)
    if contents.truncated_tail:
        diagnostics["journal_truncated_tail"] = True
    return RunArtifact.from_records(metadata, records, diagnostics)


def _load_json_artifact(path: Path, *, root: Path, seen: list[Path]) -> RunArtifact:
    data = _read_json(path)
    if _is_reference(data):
        target = _reference_target(path, data, root=root, seen=seen)
        return _load_json_artifact(target, root=root, seen=seen)
    artifact = decode_artifact(data, str(path))
    # decoded first, so a malformed file gets its own words rather than "mismatch"
    if data.get("format_version") != 1 or DIGEST_KEY in data:
        check_digest(data, str(path))
    snapshot = data.get("snapshot")
    if not isinstance(snapshot, dict):
        check_counts(artifact.metadata.counts, artifact.records, str(path))
    elif path.name.endswith(LATEST_SUFFIX):
        key = path.name[: -len(LATEST_SUFFIX)]
        journal = ResultsLayout(path.parent, key).journal
        if journal.exists():
            _refuse_escaping_link(journal)
            contents = read_journal(journal)
            if contents.case_lines > snapshot.get("journal_cases", 0):
                return rebuild_from_journal(journal)
    return artifact


def _refuse_escaping_link(path: Path) -> None:
    """A symlinked latest file or journal must stay in its own directory."""
    # the same rule a reference target obeys: nothing outside results/ is read
    if path.is_symlink() and not path.resolve().is_relative_to(path.parent.resolve()):
        raise ArtifactError(
            path, "is a symlink to a file outside its results directory"
        )


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ArtifactError(path, f"cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ArtifactError(path, "not UTF-8 text") from None
    if not text.strip():
        raise ArtifactError(path, "empty file (truncated write?)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(
            path,
            f"corrupted or truncated JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from None
    except RecursionError:
        raise ArtifactError(path, "not valid JSON (nested too deeply)") from None


def _is_reference(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == REFERENCE_FORMAT


def _reference_target(
    path: Path, data: dict[str, Any], *, root: Path, seen: list[Path]
) -> Path:
    if data.get("format_version") != REFERENCE_VERSION:
        raise ArtifactError(
            path, f"unknown reference format_version {data.get('format_version')!r}"
        )
    target = data.get("target")
    if not isinstance(target, str) or not target:
        raise ArtifactError(path, "reference has no 'target' string")
    pure = PurePosixPath(target)
    if pure.is_absolute() or Path(target).is_absolute() or "\\" in target:
        raise ArtifactError(
            path, f"reference target {target!r} is absolute; it must be relative"
        )
    if ".." in pure.parts:
        raise ArtifactError(path, f"reference target {target!r} uses '..'")
    resolved = (path.parent / pure).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise ArtifactError(
            path, f"reference target {target!r} leaves the results directory"
        )
    seen.append(path.resolve())
    if resolved in seen:
        chain = " -> ".join(p.name for p in [*seen, resolved])
        raise ArtifactError(path, f"reference loop: {chain}")
    if len(seen) > MAX_REFERENCE_DEPTH:
        raise ArtifactError(path, f"more than {MAX_REFERENCE_DEPTH} chained references")
    if not resolved.exists():
        raise ArtifactError(path, f"reference target {target!r} does not exist")
    return resolved


__all__ = [
    "RESULT_FORMAT",
    "find_latest",
    "load_result",
    "rebuild_from_journal",
    "resolve_reference",
    "run_keys",
]
