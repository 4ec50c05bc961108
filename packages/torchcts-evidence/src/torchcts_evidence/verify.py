"""Check a received submission archive without executing anything in it.

Structure first (names, links, sizes, compression ratios, duplicates), so a hostile
archive is refused before a byte of it is decompressed; then ``SUBMISSION.json``,
hashes and required files; then the manifest is read statically and the result loaded
from a private temporary extraction for the summary.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_schema import (
    ArtifactError,
    RunArtifact,
    load_result,
    read_manifest_source,
    validate_manifest,
)

from torchcts_evidence.archive import (
    MANIFEST_NAME,
    RESULTS_PREFIX,
    SUBMISSION_FORMAT,
    SUBMISSION_NAME,
    SUBMISSION_VERSION,
    sha256_of,
)
from torchcts_evidence.metadata import metadata_problems
from torchcts_evidence.zipcheck import Limits, read_member, structure_problems

# fields SUBMISSION.json repeats from the run metadata; they must agree
CONSISTENT_KEYS = (
    "backend", "device", "hardware_key", "torch_version", "torchcts_version",
    "manifest_digest", "completed_normally",
)  # fmt: skip


@dataclass
class Verification:
    """Problems found (empty means accepted) and what the archive holds."""

    archive: Path
    problems: list[str] = field(default_factory=list)
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
        infos = [i for i in zf.infolist() if not i.is_dir()]
        result.problems += structure_problems(zf.infolist(), limits)
        if result.problems:
            return result
        data: dict[str, bytes] = {}
        for info in infos:
            try:
                data[info.filename] = read_member(zf, info)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                result.problems.append(f"{info.filename}: cannot be read ({exc})")
    if result.problems:
        return result
    result.submission = _submission(data, result.problems, limits)
    if result.problems:
        return result
    _hashes(data, result.submission, result.problems)
    _manifest(data, result.submission, result.problems)
    if not result.problems:
        result.artifact = _load(data, result.submission, result.problems)
    return result


def _submission(
    data: dict[str, bytes], problems: list[str], limits: Limits
) -> dict[str, Any]:
    raw = data.get(SUBMISSION_NAME)
    if raw is None:
        problems.append(
            f"missing required file {SUBMISSION_NAME} (a plain zip of results/? build "
            "the archive with: torchcts-evidence archive results)"
        )
        return {}
    if len(raw) > limits.max_submission_bytes:
        problems.append(f"{SUBMISSION_NAME}: {len(raw)} bytes is too large")
        return {}
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:
        problems.append(f"{SUBMISSION_NAME}: not valid UTF-8 JSON ({exc})")
        return {}
    if not isinstance(body, dict) or body.get("format") != SUBMISSION_FORMAT:
        problems.append(f"{SUBMISSION_NAME}: format is not {SUBMISSION_FORMAT!r}")
        return {}
    if body.get("format_version") != SUBMISSION_VERSION:
        problems.append(
            f"{SUBMISSION_NAME}: unknown format_version {body.get('format_version')!r}"
            f" (this torchcts-evidence reads {SUBMISSION_VERSION})"
        )
        return {}
    files = body.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("sha256"), str) for v in files.values()
    ):
        problems.append(f"{SUBMISSION_NAME}: 'files' is not a name -> {{sha256}} map")
        return {}
    return body


def _hashes(data: dict[str, bytes], body: dict[str, Any], problems: list[str]) -> None:
    files: dict[str, Any] = body["files"]
    required = {
        MANIFEST_NAME,
        body.get("result"),
        body.get("latest"),
        body.get("canonical_artifact"),
    }
    for name in sorted(n for n in required if isinstance(n, str)):
        if name not in data:
            problems.append(f"missing required file {name}")
        elif name not in files:
            problems.append(f"{name}: not listed in {SUBMISSION_NAME}")
    result = body.get("result")
    if not isinstance(result, str) or not result.startswith(RESULTS_PREFIX):
        problems.append(f"{SUBMISSION_NAME}: names no result file under results/")
    for name, entry in sorted(files.items()):
        if name == SUBMISSION_NAME:
            continue
        if name not in data:
            problems.append(f"{name}: listed in {SUBMISSION_NAME} but missing")
        elif sha256_of(data[name]) != entry["sha256"]:
            problems.append(f"{name}: sha256 mismatch (altered after archiving)")
    for name in sorted(set(data) - set(files) - {SUBMISSION_NAME}):
        problems.append(f"{name}: member not listed in {SUBMISSION_NAME}")


def _manifest(
    data: dict[str, bytes], body: dict[str, Any], problems: list[str]
) -> None:
    raw = data.get(MANIFEST_NAME)
    if raw is None:
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


def _load(
    data: dict[str, bytes], body: dict[str, Any], problems: list[str]
) -> RunArtifact | None:
    with tempfile.TemporaryDirectory(prefix="torchcts-verify-") as tmp:
        root = Path(tmp)
        result = str(body["result"])
        key = _run_key_of(result)
        # only what the loader reads: the result file, its history and its journal
        wanted = (result, f"{RESULTS_PREFIX}{key}_journal.jsonl")
        try:
            for name, content in data.items():
                if name in wanted or name.startswith(f"{RESULTS_PREFIX}{key}_history/"):
                    target = root / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(content)
        except OSError as exc:
            problems.append(
                f"members cannot be extracted side by side ({exc.strerror})"
            )
            return None
        try:
            artifact = load_result(root / result)
        except ArtifactError as exc:
            problems.append(str(exc).replace(str(root) + "/", ""))
            return None
        except Exception as exc:
            # the schema's loader still lets some malformed values escape as TypeError
            # or AttributeError; for a reviewer they are all "this artifact is broken"
            problems.append(
                f"{body['result']}: malformed artifact ({type(exc).__name__}: {exc})"
            )
            return None
    wrong = metadata_problems(artifact)
    if wrong:
        problems += [f"{body['result']}: run metadata {w}" for w in wrong]
        return None
    for key in CONSISTENT_KEYS:
        mine = getattr(artifact.metadata, key)
        if mine != body.get(key):
            problems.append(
                f"{SUBMISSION_NAME}: {key} {body.get(key)!r} differs from the run's "
                f"{mine!r} in {body['result']}"
            )
    return artifact


def _run_key_of(result: str) -> str:
    name = result.rsplit("/", 1)[-1]
    for suffix in ("_latest.json", "_journal.jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
