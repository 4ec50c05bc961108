"""Check a received submission archive without executing anything in it.

Structure first (names, links, sizes, compression ratios, duplicates), so a hostile
archive is refused before a byte of it is decompressed; then ``SUBMISSION.json``,
hashes and required files; then the manifest is read statically and the result loaded
from a private temporary extraction for the summary.
"""

from __future__ import annotations

import json
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
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

# fields SUBMISSION.json repeats from the run metadata; they must agree
CONSISTENT_KEYS = (
    "backend", "device", "hardware_key", "torch_version", "torchcts_version",
    "manifest_digest", "completed_normally",
)  # fmt: skip


@dataclass(frozen=True)
class Limits:
    """What a reviewer's machine is willing to unpack."""

    max_members: int = 20_000
    max_member_bytes: int = 512 * 2**20
    max_total_bytes: int = 2 * 2**30
    max_ratio: float = 200.0
    ratio_floor_bytes: int = 2**20  # small members may compress well; bombs are big
    max_submission_bytes: int = 16 * 2**20


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
        result.problems += _structure(zf.infolist(), limits)
        if result.problems:
            return result
        data: dict[str, bytes] = {}
        for info in infos:
            try:
                data[info.filename] = _read(zf, info)
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


def _structure(infos: list[zipfile.ZipInfo], limits: Limits) -> list[str]:
    problems: list[str] = []
    if len(infos) > limits.max_members:
        return [f"{len(infos)} members (more than {limits.max_members})"]
    seen: set[str] = set()
    folded: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        problems += [f"{name!r}: {p}" for p in _name_problems(name)]
        if name in seen:
            problems.append(f"{name!r}: duplicate member name")
        elif name.lower() in folded:
            problems.append(f"{name!r}: differs from another member only in case")
        seen.add(name)
        folded.add(name.lower())
        mode = info.external_attr >> 16
        if info.create_system == 3 and mode and stat.S_ISLNK(mode):
            problems.append(f"{name!r}: symbolic link (links are not accepted)")
        elif (
            info.create_system == 3
            and mode
            and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
        ):
            problems.append(f"{name!r}: not a regular file (mode {oct(mode)})")
        if info.flag_bits & 0x1:
            problems.append(f"{name!r}: encrypted member")
        if info.is_dir():
            continue
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            problems.append(f"{name!r}: unsupported compression {info.compress_type}")
        if info.file_size > limits.max_member_bytes:
            problems.append(
                f"{name!r}: {info.file_size} bytes uncompressed (limit "
                f"{limits.max_member_bytes})"
            )
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.ratio_floor_bytes and ratio > limits.max_ratio:
            problems.append(
                f"{name!r}: compression ratio {ratio:.0f}:1 (limit "
                f"{limits.max_ratio:.0f}:1; a zip bomb?)"
            )
        total += info.file_size
    files = {i.filename for i in infos if not i.is_dir()}
    for name in sorted(files):
        parts = name.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in files:
                problems.append(
                    f"{parent!r}: is both a file and the directory of {name!r}"
                )
    if total > limits.max_total_bytes:
        problems.append(
            f"{total} bytes uncompressed in all (limit {limits.max_total_bytes})"
        )
    return problems


def _name_problems(name: str) -> list[str]:
    if not name or "\x00" in name:
        return ["empty or NUL in name"]
    problems = []
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        problems.append("absolute path")
    if "\\" in name:
        problems.append("backslash in name")
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        problems.append("'..' escapes the archive")
    return problems


def _read(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    # never trust the declared size alone: read at most one byte more than it
    with zf.open(info) as fh:
        data = fh.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise ValueError(f"declared {info.file_size} bytes, holds {len(data)}")
    return data


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
