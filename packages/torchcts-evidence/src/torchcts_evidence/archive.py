"""Build ``torchcts-results-<UTC stamp>.zip``: the real run artifacts, the manifest and
``SUBMISSION.json``, byte-identical for identical inputs.

Determinism: members sorted, one fixed timestamp (the run's end), fixed permissions and
creator system, deflate at a fixed level, no comment or extra fields, and a stamp taken
from the run rather than the clock. Host identity is scrubbed from every member except
the manifest, whose bytes must keep the digest the run recorded (so a manifest holding
host identity is refused instead); a scrubbed result artifact gets the digest of its
scrubbed content, so the archive passes its own verification.

The run's repro scripts go in as far as `verify` accepts them, and ``SUBMISSION.json``
names what is left out and why (`repros`).

The zip is checked with `verify_archive` before it takes its name: what a reviewer
accepts (sizes, compression ratios, the manifest's read limit, claims, the journal)
has one definition, so an archive `verify` would reject is refused here with the
line `verify` would print, never written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from torchcts_schema import (
    HostIdentity,
    Manifest,
    find_identity,
    journal_path,
    redigested,
    scrub_bytes,
    scrub_text,
)

from torchcts_evidence import __version__
from torchcts_evidence.collect import NOT_EXECUTED, RunFiles, collect_run, find_manifest
from torchcts_evidence.errors import EvidenceError
from torchcts_evidence.repros import LeftOut, sorted_left_out, too_large, too_many
from torchcts_evidence.submission_schema import (
    MANIFEST_NAME,
    RESULTS_PREFIX,
    SUBMISSION_FORMAT,
    SUBMISSION_NAME,
    SUBMISSION_VERSION,
    sha256_of,
)
from torchcts_evidence.verify import verify_archive
from torchcts_evidence.zipcheck import Limits

FILE_MODE = 0o100644
UNIX = 3
COMPRESS_LEVEL = 9
EARLIEST_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
# Python holds a lone surrogate in a str (a results path that is not UTF-8 reaches the
# recorded command as "\udcff"); UTF-8 cannot encode one, JSON can escape it
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class BuiltArchive:
    """What `build_archive` wrote."""

    path: Path
    run_key: str
    members: tuple[str, ...]
    scrubbed: tuple[str, ...]
    other_runs: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what `verify` notes without rejecting


def build_archive(
    results_dir: Path,
    *,
    out_dir: Path,
    manifest: Path | None = None,
    run_key: str | None = None,
    project_root: Path | None = None,
    identity: HostIdentity | None = None,
    limits: Limits | None = None,
) -> BuiltArchive:
    """Collect, check, scrub and zip one run; refusals raise `EvidenceError`.

    `limits` are what the zip must pass in `verify_archive` (the defaults unless a
    caller verifies with others)."""
    limits = limits or Limits()
    root = (project_root or Path.cwd()).resolve()
    run = collect_run(results_dir, run_key)
    chosen = find_manifest(run, manifest, (root, results_dir.resolve().parent))
    ident = identity or HostIdentity.current(
        roots=(root, results_dir.resolve().parent, chosen.path.resolve().parent)
    )
    manifest_bytes = chosen.path.read_bytes()
    leaks = find_identity(manifest_bytes.decode("utf-8", "replace"), ident)
    if leaks:
        raise EvidenceError(
            f"{chosen.path}: the manifest holds host identity ({leaks[0]}); it is "
            "archived unchanged to keep its digest, so use relative paths and run again"
        )
    members: dict[str, bytes] = {MANIFEST_NAME: manifest_bytes}
    scrubbed: list[str] = []
    for rel in run.files:
        name, clean = _scrubbed_member(results_dir, rel, ident, scrubbed)
        members[name] = clean
    left_out = _add_repros(run, members, ident, scrubbed, limits)
    submission = _submission(run, chosen, members, scrubbed, ident, left_out)
    members[SUBMISSION_NAME] = submission
    for name, data in members.items():
        if name != MANIFEST_NAME and find_identity(
            data.decode("utf-8", "replace"), ident
        ):
            raise EvidenceError(
                f"{name}: host identity survived scrubbing; not written"
            )
    stamp = _run_stamp(run)
    target = out_dir / f"torchcts-results-{stamp.strftime('%Y%m%dT%H%M%SZ')}.zip"
    order = [SUBMISSION_NAME, MANIFEST_NAME, *sorted(set(members) - _FIRST)]
    notes = _write_zip(target, [(name, members[name]) for name in order], stamp, limits)
    return BuiltArchive(
        target, run.run_key, tuple(order), tuple(scrubbed), run.other_runs, notes
    )


_FIRST = {SUBMISSION_NAME, MANIFEST_NAME}


def _scrubbed_member(
    results_dir: Path, rel: Path, ident: HostIdentity, scrubbed: list[str]
) -> tuple[str, bytes]:
    """One results file as a member: its name and scrubbed bytes."""
    name = RESULTS_PREFIX + rel.as_posix()
    if find_identity(name, ident):
        raise EvidenceError(f"{name}: the file name holds host identity; rename it")
    raw = (results_dir / rel).read_bytes()
    clean = scrub_bytes(raw, ident)
    if clean != raw:
        scrubbed.append(name)
        clean = redigested(raw, clean)  # an artifact's digest covers its text
    return name, clean


def _add_repros(
    run: RunFiles,
    members: dict[str, bytes],
    ident: HostIdentity,
    scrubbed: list[str],
    limits: Limits,
) -> LeftOut:
    """The run's repro scripts added to `members` as far as `verify` accepts them
    (each script's size, the archive's member count); what is left out, and why."""
    left = {reason: list(names) for reason, names in run.left_out.items()}
    room = limits.max_members - len(members) - 1  # SUBMISSION.json comes last
    for rel in run.repros:
        if room <= 0:
            left.setdefault(too_many(limits), []).append(
                RESULTS_PREFIX + rel.as_posix()
            )
            continue
        mine: list[str] = []
        name, clean = _scrubbed_member(run.results_dir, rel, ident, mine)
        if len(clean) > limits.max_repro_bytes:
            left.setdefault(too_large(limits), []).append(name)
            continue
        members[name] = clean
        scrubbed += mine
        room -= 1
    return sorted_left_out(left)


def _submission(
    run: RunFiles,
    manifest: Manifest,
    members: dict[str, bytes],
    scrubbed: list[str],
    ident: HostIdentity,
    left_out: LeftOut,
) -> bytes:
    meta = run.artifact.metadata
    executed = sum(1 for r in run.artifact.results if r.status not in NOT_EXECUTED)
    body: dict[str, Any] = {
        "format": SUBMISSION_FORMAT,
        "format_version": SUBMISSION_VERSION,
        "backend": meta.backend,
        "device": meta.device,
        "hardware_key": meta.hardware_key,
        "run_key": run.run_key,
        "os": meta.os,
        "python": meta.python,
        "torch_version": meta.torch_version,
        "torchcts_version": meta.torchcts_version,
        "manifest_digest": meta.manifest_digest,
        "manifest_backend": manifest.backend_name,
        "command": scrub_text(meta.command, ident),
        "completed_normally": meta.completed_normally,
        "started_at": meta.started_at,
        "ended_at": meta.ended_at,
        "counts": {s: n for s, n in sorted(_counts(run).items())},
        "executed_cases": executed,
        "latest": _member(run.latest),
        "result": _member(run.latest or _relative_journal(run)),
        "canonical_artifact": _member(run.canonical),
        "scrubbed": sorted(scrubbed),
        "left_out": left_out,
        "archived_by": f"torchcts-evidence {__version__}",
        "files": {
            name: {"sha256": sha256_of(data), "bytes": len(data)}
            for name, data in sorted(members.items())
        },
    }
    text = json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    return _submission_bytes(scrub_text(text, ident))


def _submission_bytes(text: str) -> bytes:
    """`text` (JSON written with ``ensure_ascii=False``) as UTF-8, each lone surrogate
    kept as its JSON escape.

    Non-ASCII stays as text so the scrubber sees a name as it is written (``\\u00e9``
    would hide ``José`` from it). A lone surrogate can only stand inside a JSON string,
    where ``\\ud800`` reads back as the same str: the run's own journal and history
    (``ensure_ascii=True``) hold it that way, so `verify` compares equal values.
    """
    escaped = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return escaped.encode("utf-8")


def _counts(run: RunFiles) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in run.artifact.records:
        counts[record.status.value] = counts.get(record.status.value, 0) + 1
    return counts


def _relative_journal(run: RunFiles) -> Path:
    return journal_path(run.results_dir, run.run_key).relative_to(run.results_dir)


def _member(path: Path | None) -> str | None:
    return None if path is None else RESULTS_PREFIX + path.as_posix()


def _run_stamp(run: RunFiles) -> datetime:
    meta = run.artifact.metadata
    for value in (meta.ended_at, meta.started_at):
        if not value:
            continue
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            continue
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)
    if run.canonical is not None:
        try:
            return datetime.strptime(run.canonical.stem[:16], "%Y%m%dT%H%M%SZ").replace(
                tzinfo=UTC
            )
        except ValueError:
            pass
    raise EvidenceError(
        f"{run.results_dir}: the run records no usable start or end time "
        f"(started_at={meta.started_at!r}); cannot name the archive from the run"
    )


def _write_zip(
    target: Path, members: list[tuple[str, bytes]], stamp: datetime, limits: Limits
) -> tuple[str, ...]:
    """Write the zip beside `target`, verify it, and only then give it its name;
    the notes `verify` makes about it."""
    date_time = max(EARLIEST_ZIP_TIME, stamp.timetuple()[:6])
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with (
            os.fdopen(fd, "wb") as fh,
            zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf,
        ):
            for name, data in members:
                info = zipfile.ZipInfo(name, date_time=date_time)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.create_system = UNIX
                info.external_attr = FILE_MODE << 16
                zf.writestr(info, data, compresslevel=COMPRESS_LEVEL)
        os.chmod(tmp, 0o644)
        verified = verify_archive(Path(tmp), limits)
        problems = verified.problems
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise EvidenceError(
                f"{target.name}: not written, verify would reject it: "
                f"{problems[0]}{more}"
            )
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tuple(verified.notes)
