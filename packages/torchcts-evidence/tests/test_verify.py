"""Verifying received archives: acceptance, the summary, and each crafted rejection."""

from __future__ import annotations

import json
import stat
import warnings
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from evidence_builders import RUN_KEY, make_project, record
from hostile_archives import forge_history
from torchcts_evidence import (
    Limits,
    build_archive,
    format_verification,
    sha256_of,
    verify_archive,
)
from torchcts_schema import CaseRecord, CrashInfo, CrashKind, Status

Members = list[tuple[zipfile.ZipInfo, bytes]]


@pytest.fixture
def good(tmp_path: Path) -> Path:
    """A real archive built from a synthetic run."""
    make_project(tmp_path / "p")
    return build_archive(
        tmp_path / "p" / "results", out_dir=tmp_path, project_root=tmp_path / "p"
    ).path


def _members(archive: Path) -> Members:
    with zipfile.ZipFile(archive) as zf:
        return [(info, zf.read(info)) for info in zf.infolist()]


def _write(path: Path, members: Members) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names warn; we want them
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for info, data in members:
                zf.writestr(info, data)
    return path


def _info(name: str, mode: int = 0o100644) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0))
    info.create_system = 3
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _with_submission(members: Members, edit: object) -> Members:
    out = []
    for info, data in members:
        if info.filename == "SUBMISSION.json":
            body = json.loads(data)
            edit(body)  # type: ignore[operator]
            data = json.dumps(body).encode()
        out.append((info, data))
    return out


def _listed(members: Members, name: str, data: bytes) -> Members:
    """Add a member and list it with its true hash, so only the tested flaw remains."""

    def add(body: dict) -> None:  # type: ignore[type-arg]
        body["files"][name] = {"sha256": sha256_of(data), "bytes": len(data)}

    return [*_with_submission(members, add), (_info(name), data)]


def _problems(path: Path, limits: Limits | None = None) -> str:
    result = verify_archive(path, limits)
    assert not result.ok
    return "\n".join(result.problems)


def test_a_built_archive_verifies_and_summarises_the_run(good: Path) -> None:
    """verify accepts a built archive and summarises backend, versions and statuses."""
    result = verify_archive(good)
    assert result.ok, result.problems
    assert result.artifact is not None
    assert len(result.artifact.results) == 3
    text = format_verification(result)
    assert text.startswith("OK ")
    assert "simdev" in text and "2.13.0+cpu" in text
    assert "crashed: opinfo/mul/forward/float32/0 (SIGSEGV)" in text
    assert "dtype_not_supported 1" in text


def test_absolute_member_path_is_rejected(good: Path, tmp_path: Path) -> None:
    """A member named with an absolute path is rejected."""
    bad = _write(tmp_path / "bad.zip", [*_members(good), (_info("/etc/x"), b"x")])
    assert "absolute path" in _problems(bad)


def test_dotdot_member_path_is_rejected(good: Path, tmp_path: Path) -> None:
    """A member whose name climbs out with '..' is rejected."""
    bad = _write(
        tmp_path / "bad.zip", [*_members(good), (_info("results/../../x"), b"x")]
    )
    assert "'..' escapes" in _problems(bad)


def test_symlink_member_is_rejected(good: Path, tmp_path: Path) -> None:
    """A member whose mode says symbolic link is rejected."""
    link = _info("results/link", stat.S_IFLNK | 0o777)
    bad = _write(tmp_path / "bad.zip", [*_members(good), (link, b"/etc/passwd")])
    assert "symbolic link" in _problems(bad)


def test_oversized_member_is_rejected(good: Path) -> None:
    """A member larger than the limit is rejected before it is decompressed."""
    assert "bytes uncompressed (limit 100)" in _problems(
        good, Limits(max_member_bytes=100)
    )


def test_oversized_total_is_rejected(good: Path) -> None:
    """Members that together exceed the total limit are rejected."""
    assert "in all (limit 1000)" in _problems(good, Limits(max_total_bytes=1000))


def test_zip_bomb_compression_ratio_is_rejected(good: Path, tmp_path: Path) -> None:
    """A member of zeros past the ratio floor (129 MiB, ~1000:1) is rejected as a
    likely bomb from the directory alone; written as a stream, so the test holds
    1 MiB at a time."""
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in _members(good):
            zf.writestr(info, data)
        with zf.open(_info("results/bomb.txt"), "w") as fh:
            for _ in range(129):
                fh.write(b"\0" * 2**20)
    problems = _problems(bad)
    assert "'results/bomb.txt': compression ratio" in problems
    assert "(limit 200:1; a zip bomb?)" in problems


def test_hash_mismatch_is_rejected(good: Path, tmp_path: Path) -> None:
    """A member altered after archiving fails its SUBMISSION.json hash."""
    members = [
        (info, data + b"\n" if info.filename.endswith(".md") else data)
        for info, data in _members(good)
    ]
    bad = _write(tmp_path / "bad.zip", members)
    assert f"results/{RUN_KEY}.md: sha256 mismatch" in _problems(bad)


def test_missing_listed_file_is_rejected(good: Path, tmp_path: Path) -> None:
    """A file listed in SUBMISSION.json but absent from the zip is rejected."""
    members = [(i, d) for i, d in _members(good) if not i.filename.endswith(".md")]
    bad = _write(tmp_path / "bad.zip", members)
    assert "listed in SUBMISSION.json but missing" in _problems(bad)


def test_missing_manifest_is_rejected(good: Path, tmp_path: Path) -> None:
    """An archive without manifest.py is rejected even if the listing agrees."""

    def drop(body: dict) -> None:  # type: ignore[type-arg]
        del body["files"]["manifest.py"]

    members = [(i, d) for i, d in _members(good) if i.filename != "manifest.py"]
    bad = _write(tmp_path / "bad.zip", _with_submission(members, drop))
    assert "missing required file manifest.py" in _problems(bad)


def test_missing_submission_is_rejected(good: Path, tmp_path: Path) -> None:
    """An archive without SUBMISSION.json (e.g. a plain zip -r) is rejected."""
    members = [(i, d) for i, d in _members(good) if i.filename != "SUBMISSION.json"]
    assert "missing required file SUBMISSION.json" in _problems(
        _write(tmp_path / "bad.zip", members)
    )


def test_unknown_format_version_is_rejected(good: Path, tmp_path: Path) -> None:
    """A SUBMISSION.json of a future format version is rejected, naming it."""
    bad = _write(
        tmp_path / "bad.zip",
        _with_submission(_members(good), lambda b: b.update(format_version=99)),
    )
    assert "unknown format_version 99" in _problems(bad)


def test_duplicate_member_names_are_rejected(good: Path, tmp_path: Path) -> None:
    """Two members with the same name are rejected (which one would be reviewed?)."""
    members = _members(good)
    bad = _write(tmp_path / "bad.zip", [*members, members[1]])
    assert "duplicate member name" in _problems(bad)


def test_unlisted_member_is_rejected(good: Path, tmp_path: Path) -> None:
    """A member that SUBMISSION.json does not list is rejected."""
    bad = _write(tmp_path / "bad.zip", [*_members(good), (_info("results/x"), b"x")])
    assert "results/x: member not listed" in _problems(bad)


def test_not_a_zip_is_rejected(tmp_path: Path) -> None:
    """Random bytes are rejected with one line, not a traceback."""
    path = tmp_path / "x.zip"
    path.write_bytes(b"not a zip")
    assert "not a readable zip archive" in _problems(path)


def test_manifest_with_code_is_never_executed(good: Path, tmp_path: Path) -> None:
    """A manifest holding code is refused by the static reader and never runs."""
    marker = tmp_path / "executed"
    code = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n".encode()

    def digest(body: dict) -> None:  # type: ignore[type-arg]
        body["files"]["manifest.py"] = {"sha256": sha256_of(code), "bytes": len(code)}
        body["manifest_digest"] = sha256_of(code)

    members = [
        (i, code if i.filename == "manifest.py" else d) for i, d in _members(good)
    ]
    bad = _write(tmp_path / "bad.zip", _with_submission(members, digest))
    assert "only NAME = <literal> assignments" in _problems(bad)
    assert not marker.exists()


def test_manifest_digest_must_match_the_run(good: Path, tmp_path: Path) -> None:
    """A swapped manifest (hash listed correctly) no longer matches the run's digest."""
    other = b'DEVICE = "simdev"\n'

    def relist(body: dict) -> None:  # type: ignore[type-arg]
        body["files"]["manifest.py"] = {"sha256": sha256_of(other), "bytes": len(other)}

    members = [
        (i, other if i.filename == "manifest.py" else d) for i, d in _members(good)
    ]
    bad = _write(tmp_path / "bad.zip", _with_submission(members, relist))
    assert "is not the run's" in _problems(bad)


def test_an_interrupted_run_verifies_from_its_journal(tmp_path: Path) -> None:
    """A killed run (journal, no canonical artifact) is accepted and shown incomplete."""
    make_project(tmp_path / "p", completed=False)
    built = build_archive(
        tmp_path / "p" / "results", out_dir=tmp_path, project_root=tmp_path / "p"
    )
    result = verify_archive(built.path)
    assert result.ok, result.problems
    assert result.submission["result"] == f"results/{RUN_KEY}_journal.jsonl"
    assert "completed normally  False" in format_verification(result)


def test_submission_claims_must_agree_with_the_run(good: Path, tmp_path: Path) -> None:
    """A SUBMISSION.json claiming another backend or completion than the run is rejected."""

    def lie(body: dict) -> None:  # type: ignore[type-arg]
        body["completed_normally"] = False
        body["hardware_key"] = "nvidia-h200"

    bad = _write(tmp_path / "bad.zip", _with_submission(_members(good), lie))
    problems = _problems(bad)
    assert "completed_normally False differs from the run's True" in problems
    assert "hardware_key 'nvidia-h200' differs" in problems


def test_names_differing_only_in_case_are_rejected(good: Path, tmp_path: Path) -> None:
    """Two members that collide on a case-insensitive file system are rejected."""
    members = _listed(_members(good), "results/A.txt", b"a")
    bad = _write(tmp_path / "bad.zip", _listed(members, "results/a.txt", b"b"))
    assert "only in case" in _problems(bad)


def test_file_and_directory_with_one_name_are_rejected(
    good: Path, tmp_path: Path
) -> None:
    """A member that is also another member's directory is rejected."""
    members = _listed(_members(good), "results/x", b"a")
    bad = _write(tmp_path / "bad.zip", _listed(members, "results/x/y", b"b"))
    assert "is both a file and the directory" in _problems(bad)


def _crashed_add(record: CaseRecord) -> CaseRecord:
    if record.op != "add":
        return record
    return replace(record, status=Status.CRASHED, crash=CrashInfo(CrashKind.SIGNAL))


def test_a_resumed_case_is_judged_by_its_last_journal_line(tmp_path: Path) -> None:
    """A case that crashed in an interrupted attempt and passed on resume: the result
    that says passed is accepted, one that kept the earlier crash is rejected."""
    earlier = [record("add", Status.CRASHED, crash=CrashInfo(CrashKind.SIGNAL))]
    make_project(tmp_path / "p", earlier=earlier)
    built = build_archive(
        tmp_path / "p" / "results", out_dir=tmp_path, project_root=tmp_path / "p"
    )
    assert verify_archive(built.path).ok, verify_archive(built.path).problems
    forged = forge_history(built.path, tmp_path / "forged.zip", _crashed_add)
    assert verify_archive(forged).problems == [
        f"results/{RUN_KEY}_journal.jsonl: case 'opinfo/add/forward/float32/0' is "
        f"passed in the journal but crashed in results/{RUN_KEY}_latest.json"
    ]
