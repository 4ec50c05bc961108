"""Choose what a submission holds: one run's files and the manifest that produced it.

A directory a live run holds (its lock, `torchcts_schema.live_holder`) is refused: its
result is a recovery snapshot. The run is read through `torchcts_schema.load_result`;
the manifest is found from the explicit path, the run's own command,
``manifests/<device>.py`` or a digest match, and must have the digest the run
recorded. Refusals say exactly why.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from torchcts_schema import (
    JOURNAL_SUFFIX,
    LATEST_SUFFIX,
    REPORT_SUFFIXES,
    ArtifactError,
    Manifest,
    ResultsLayout,
    RunArtifact,
    Status,
    find_latest,
    journal_path,
    latest_path,
    live_holder,
    load_manifest,
    load_result,
    manifest_digest,
    metadata_problems,
    read_manifest_file,
    resolve_reference,
    run_keys,
)

from torchcts_evidence.errors import EvidenceError
from torchcts_evidence.repros import LeftOut, run_repros

NOT_EXECUTED = frozenset({Status.NOT_RUN, Status.SKIPPED})
# the placeholder `torchcts-cases init` templates give BACKEND_NAME
TEMPLATE_BACKEND_NAME = "my backend"


@dataclass(frozen=True)
class RunFiles:
    """One run in a results directory: its key, artifact and member files."""

    results_dir: Path
    run_key: str
    artifact: RunArtifact
    files: tuple[Path, ...]  # relative to results_dir, sorted
    latest: Path | None  # relative
    canonical: Path | None  # relative; None when latest is a snapshot or absent
    other_runs: tuple[str, ...] = ()  # run keys in the directory that were left out
    repros: tuple[Path, ...] = ()  # the scripts the records name, relative, sorted
    left_out: LeftOut = field(default_factory=dict)  # reason -> member names


def collect_run(results_dir: Path, run_key: str | None = None) -> RunFiles:
    """The files of the run in `results_dir`; refuses an empty or unexecuted run."""
    if not results_dir.is_dir():
        raise EvidenceError(f"{results_dir}: not a directory")
    holder = live_holder(results_dir)
    if holder is not None:
        # its latest file is a recovery snapshot and its journal grows: archived now,
        # it would pass for an interrupted run
        raise EvidenceError(
            f"{results_dir}: a TorchCTS run is still writing here ({holder}); "
            "archive it after the run ends"
        )
    keys = sorted(run_keys(results_dir))
    if not keys:
        raise EvidenceError(
            f"{results_dir}: empty results directory (no *{LATEST_SUFFIX} or "
            f"*{JOURNAL_SUFFIX}); run TorchCTS first, then archive its results"
        )
    if run_key is None and len(keys) > 1:
        # `make submission-archive` passes no key: take the run written last, and say so
        run_key = max(keys, key=lambda k: (_last_write(results_dir, k), k))
    elif run_key is not None and run_key not in keys:
        raise EvidenceError(
            f"{results_dir}: no run {run_key!r} here (runs: {', '.join(keys)})"
        )
    key = run_key if run_key is not None else keys[0]
    try:
        source = find_latest(results_dir, run_key=key)
        artifact = load_result(source)
    except ArtifactError as exc:
        raise EvidenceError(str(exc)) from None
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
        # malformed values the schema's loader does not yet turn into ArtifactError
        raise EvidenceError(f"{results_dir}: malformed result ({exc!r})") from None
    wrong = metadata_problems(artifact.metadata)
    if wrong:
        raise EvidenceError(f"{source}: malformed run metadata: {'; '.join(wrong)}")
    executed = [r for r in artifact.results if r.status not in NOT_EXECUTED]
    if not executed:
        raise EvidenceError(
            f"{source}: the run executed no case ({len(artifact.records)} records, all "
            "not_run or skipped); fix the manifest or selection and run again"
        )
    latest = latest_path(results_dir, key)
    canonical: Path | None = None
    if latest.exists():
        target = resolve_reference(latest)
        if target != latest:
            canonical = target.resolve().relative_to(results_dir.resolve())
    files = _run_members(results_dir, key)
    if canonical is not None:
        files.add(canonical)
    repros, left_out = run_repros(results_dir, key, artifact)
    return RunFiles(
        results_dir=results_dir,
        run_key=key,
        artifact=artifact,
        files=tuple(sorted(files, key=lambda p: p.as_posix())),
        latest=latest.relative_to(results_dir) if latest.exists() else None,
        canonical=canonical,
        other_runs=tuple(k for k in keys if k != key),
        repros=tuple(repros),
        left_out=left_out,
    )


def _last_write(results_dir: Path, key: str) -> float:
    stamps = [
        path.stat().st_mtime
        for path in (latest_path(results_dir, key), journal_path(results_dir, key))
        if path.exists()
    ]
    return max(stamps, default=0.0)


def _run_members(results_dir: Path, key: str) -> set[Path]:
    """The files that belong to one run, relative to `results_dir`: its own files
    and the trees of its crash records and of the shared coverage audit."""
    layout = ResultsLayout(results_dir, key)
    files = [
        layout.latest,
        layout.journal,
        *(layout.report(suffix) for suffix in REPORT_SUFFIXES),
        layout.runlog,
        layout.runlog_prev,
        *layout.glob("probe_failures"),
        *layout.glob("oracle_failures"),
        layout.adaptive_decisions,
    ]
    for root in (layout.crashes_dir, layout.coverage_dir):
        if root.is_dir() and not root.is_symlink():
            files += root.rglob("*")
    found = {
        path.relative_to(results_dir)
        for path in files
        if path.is_file() and not path.is_symlink()
    }
    return {p for p in found if not any(part.startswith(".") for part in p.parts)}


def find_manifest(
    run: RunFiles, explicit: Path | None, search_roots: tuple[Path, ...]
) -> Manifest:
    """The manifest with the run's digest: explicit, from the command, or by device."""
    meta = run.artifact.metadata
    want = meta.manifest_digest
    if explicit is not None:
        candidates = [explicit]
    else:
        candidates = [
            *(root / p for root in search_roots for p in _manifest_args(meta.command)),
            *(root / "manifests" / f"{meta.device}.py" for root in search_roots),
            *(
                p
                for root in search_roots
                for p in sorted((root / "manifests").glob("*.py"))
            ),
        ]
    tried: list[str] = []
    for path in dict.fromkeys(candidates):
        if not path.is_file():
            continue
        digest = manifest_digest(path)
        if digest == want:
            try:
                manifest = load_manifest(path)
            except ArtifactError as exc:
                raise EvidenceError(str(exc)) from None
            _refuse_template(manifest)
            return manifest
        tried.append(f"{path} ({digest[:19]}...)")
    if explicit is not None and not explicit.is_file():
        raise EvidenceError(f"{explicit}: manifest not found")
    raise EvidenceError(
        f"no manifest matches the run's digest {want}"
        + (f"; tried {', '.join(tried)}" if tried else "")
        + "; pass the manifest the run used with --manifest (it must be unchanged)"
    )


def _manifest_args(command: str) -> list[Path]:
    try:
        argv = shlex.split(command)
    except ValueError:
        argv = command.split()
    found: list[Path] = []
    for index, arg in enumerate(argv):
        if arg == "--manifest" and index + 1 < len(argv):
            found.append(Path(argv[index + 1]))
        elif arg.startswith("--manifest="):
            found.append(Path(arg.split("=", 1)[1]))
    return found


def _refuse_template(manifest: Manifest) -> None:
    if manifest.template:
        raise EvidenceError(
            f"{manifest.path}: unedited template manifest (TEMPLATE = True); edit it "
            "for your backend, delete the TEMPLATE line, run again, then archive"
        )
    if manifest.backend_name.strip().lower() == TEMPLATE_BACKEND_NAME:
        raise EvidenceError(
            f"{manifest.path}: BACKEND_NAME is still the template's placeholder "
            f"{manifest.backend_name!r}; an unedited template is not a submission"
        )
    mine = _without_template(manifest.path)
    for other in sorted(manifest.path.parent.glob("*.py")):
        if other.resolve() == manifest.path.resolve():
            continue
        try:
            raw = read_manifest_file(other)
        except ArtifactError:
            continue
        if raw.get("TEMPLATE") is True and _without_template(other) == mine:
            raise EvidenceError(
                f"{manifest.path}: identical to the template {other.name} apart from "
                "the TEMPLATE line; describe your backend in it and run again"
            )


def _without_template(path: Path) -> dict[str, object]:
    raw = read_manifest_file(path)
    raw.pop("TEMPLATE", None)
    return raw
