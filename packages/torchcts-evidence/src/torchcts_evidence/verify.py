"""Check a received submission archive without executing anything in it.

Structure first (names, links, sizes, compression ratios, collisions), so a hostile
archive is refused before a byte of it is decompressed; then ``SUBMISSION.json``,
hashes streamed over every member and required files; then the manifest is read
statically, the result loaded from a private temporary extraction, every claim of
``SUBMISSION.json`` compared with the run's own metadata, and the result compared
with the journal and crash records the archive carries (`consistency`). Repro scripts
are read as text and searched for absolute paths, and each record's script must be in
the archive or listed as left out (`repros`).
"""

from __future__ import annotations

import json
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_schema import (
    HISTORY_SUFFIX,
    JOURNAL_SUFFIX,
    LATEST_SUFFIX,
    ArtifactError,
    RunArtifact,
    load_result,
    metadata_problems,
    read_manifest_source,
    tool_command,
    tool_prefix_at,
    validate_manifest,
)

from torchcts_evidence.claims import claim_problems
from torchcts_evidence.consistency import evidence_problems, journal_findings
from torchcts_evidence.repros import (
    left_out_problems,
    named_problems,
    script_problems,
)
from torchcts_evidence.submission_schema import (
    MANIFEST_NAME,
    RESULTS_PREFIX,
    SUBMISSION_FORMAT,
    SUBMISSION_NAME,
    SUBMISSION_VERSION,
    sha256_of,
    submission_problems,
)
from torchcts_evidence.zipcheck import (
    Limits,
    member_digest,
    read_member,
    stream_member,
    structure_problems,
)

# what reading a damaged or lying member can raise; each becomes one problem line
READ_ERRORS = (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error)
Members = dict[str, zipfile.ZipInfo]


@dataclass
class Verification:
    """Problems found (empty means accepted), notes that reject nothing (a journal
    an interrupted run left cut short), and what the archive holds."""

    archive: Path
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    submission: dict[str, Any] = field(default_factory=dict)
    artifact: RunArtifact | None = None

    @property
    def ok(self) -> bool:
        """True when nothing was wrong."""
        return not self.problems


def verify_archive(path: Path, limits: Limits | None = None) -> Verification:
    """Every check in order; later stages run only when earlier ones pass."""
    limits = limits or Limits()
    result = Verification(path)
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        result.problems.append(f"not a readable zip archive ({exc})")
        return result
    with zf:
        result.problems += structure_problems(zf.infolist(), limits)
        if result.problems:
            return result
        members = {i.filename: i for i in zf.infolist() if not i.is_dir()}
        result.submission = _submission(zf, members, result.problems, limits)
        if result.problems:
            return result
        digests: dict[str, str] = {}
        for name, info in members.items():
            try:
                digests[name] = member_digest(zf, info)
            except READ_ERRORS as exc:
                result.problems.append(f"{name}: cannot be read ({exc})")
        if result.problems:
            return result
        _hashes(digests, result.submission, result.problems)
        result.problems += script_problems(zf, members, limits)
        result.problems += left_out_problems(result.submission, members, limits)
        _manifest(zf, members, result.submission, result.problems, limits)
        if not result.problems:
            result.artifact = _load(zf, members, result.submission, result)
    return result


def _submission(
    zf: zipfile.ZipFile, members: Members, problems: list[str], limits: Limits
) -> dict[str, Any]:
    info = members.get(SUBMISSION_NAME)
    if info is None:
        problems.append(
            f"missing required file {SUBMISSION_NAME} (a plain zip of results/? build "
            f"the archive with: {tool_command('torchcts-evidence', tool_prefix_at())} "
            "archive results)"
        )
        return {}
    try:
        raw = read_member(zf, info, limits.max_submission_bytes)
    except READ_ERRORS as exc:
        problems.append(f"{SUBMISSION_NAME}: cannot be read ({exc})")
        return {}
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:
        problems.append(f"{SUBMISSION_NAME}: not valid UTF-8 JSON ({exc})")
        return {}
    if not isinstance(body, dict) or body.get("format") != SUBMISSION_FORMAT:
        problems.append(f"{SUBMISSION_NAME}: format is not {SUBMISSION_FORMAT!r}")
        return {}
    version = body.get("format_version")
    if type(version) is not int or version != SUBMISSION_VERSION:  # true == 1
        problems.append(
            f"{SUBMISSION_NAME}: unknown format_version {version!r:.40}"
            f" (this torchcts-evidence reads {SUBMISSION_VERSION})"
        )
        return {}
    shape = submission_problems(body)
    if shape:
        problems += shape
        return {}
    return body


def _hashes(digests: dict[str, str], body: dict[str, Any], problems: list[str]) -> None:
    files: dict[str, Any] = body["files"]
    # the shape was checked (`submission_problems`): each is a name or null
    required = {
        MANIFEST_NAME,
        body["result"],
        body["latest"],
        body["canonical_artifact"],
    }
    for name in sorted(n for n in required if n is not None):
        if name not in digests:
            problems.append(f"missing required file {name}")
        elif name not in files:
            problems.append(f"{name}: not listed in {SUBMISSION_NAME}")
    for name, entry in sorted(files.items()):
        if name == SUBMISSION_NAME:
            continue
        if name not in digests:
            problems.append(f"{name}: listed in {SUBMISSION_NAME} but missing")
        elif digests[name] != entry["sha256"]:
            problems.append(f"{name}: sha256 mismatch (altered after archiving)")
    for name in sorted(set(digests) - set(files) - {SUBMISSION_NAME}):
        problems.append(f"{name}: member not listed in {SUBMISSION_NAME}")


def _manifest(
    zf: zipfile.ZipFile,
    members: Members,
    body: dict[str, Any],
    problems: list[str],
    limits: Limits,
) -> None:
    info = members.get(MANIFEST_NAME)
    if info is None:
        return
    try:
        raw = read_member(zf, info, limits.max_manifest_bytes)
    except READ_ERRORS as exc:
        problems.append(f"{MANIFEST_NAME}: cannot be read ({exc})")
        return
    digest = sha256_of(raw)
    if digest != body.get("manifest_digest"):
        problems.append(
            f"{MANIFEST_NAME}: digest {digest} is not the run's "
            f"{body.get('manifest_digest')!r}"
        )
    try:
        values = read_manifest_source(raw.decode("utf-8"), MANIFEST_NAME)
        manifest = validate_manifest(values, Path(MANIFEST_NAME), digest)
    except UnicodeDecodeError:
        problems.append(f"{MANIFEST_NAME}: not UTF-8 text")
        return
    except (RecursionError, MemoryError, ValueError):
        problems.append(f"{MANIFEST_NAME}: too deeply nested to read statically")
        return
    except ArtifactError as exc:
        problems.append(str(exc))
        return
    if manifest.template:
        problems.append(f"{MANIFEST_NAME}: an unedited template (TEMPLATE = True)")
    if manifest.backend_name != body.get("manifest_backend"):
        problems.append(
            f"{SUBMISSION_NAME}: manifest_backend {body.get('manifest_backend')!r} "
            f"differs from {manifest.backend_name!r} in {MANIFEST_NAME}"
        )


def _load(
    zf: zipfile.ZipFile, members: Members, body: dict[str, Any], found: Verification
) -> RunArtifact | None:
    problems = found.problems
    result = str(body["result"])
    key = _run_key_of(result)
    if body.get("run_key") != key:
        problems.append(
            f"{SUBMISSION_NAME}: run_key {body.get('run_key')!r} differs from the "
            f"run key {key!r} of {result}"
        )
        return None
    with tempfile.TemporaryDirectory(prefix="torchcts-verify-") as tmp:
        root = Path(tmp)
        # only what the loader reads: the result file, its history and its journal
        journal = RESULTS_PREFIX + key + JOURNAL_SUFFIX
        wanted = (result, journal)
        history = RESULTS_PREFIX + key + HISTORY_SUFFIX + "/"
        try:
            for name, info in members.items():
                if name in wanted or name.startswith(history):
                    target = root / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with target.open("wb") as fh:
                        stream_member(zf, info, fh.write)
        except OSError as exc:
            problems.append(
                f"members cannot be extracted side by side ({exc.strerror})"
            )
            return None
        except READ_ERRORS as exc:
            problems.append(f"{result}: cannot be extracted ({exc})")
            return None
        artifact = _load_result(root, result, problems)
        if artifact is None:
            return None
        wrong = metadata_problems(artifact.metadata)
        if wrong:
            problems += [f"{result}: run metadata {w}" for w in wrong]
            return None
        problems += claim_problems(body, artifact, result)
        if journal in members:
            # a result rebuilt from its journal agrees with it by construction
            wrong, notes = journal_findings(
                root / journal, journal, artifact, result, compare=journal != result
            )
            problems += wrong
            found.notes += notes
    problems += evidence_problems(artifact, members, result)
    problems += named_problems(artifact, members, body, result)
    return artifact


def _load_result(root: Path, result: str, problems: list[str]) -> RunArtifact | None:
    try:
        return load_result(root / result)
    except ArtifactError as exc:
        problems.append(str(exc).replace(str(root) + "/", ""))
    except Exception as exc:
        # the schema's loader still lets some malformed values escape as TypeError
        # or AttributeError; for a reviewer they are all "this artifact is broken"
        problems.append(f"{result}: malformed artifact ({type(exc).__name__}: {exc})")
    return None


def _run_key_of(result: str) -> str:
    name = result.rsplit("/", 1)[-1]
    for suffix in (LATEST_SUFFIX, JOURNAL_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
