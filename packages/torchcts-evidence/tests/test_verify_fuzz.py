"""Hostile run artifacts inside an otherwise valid archive: one problem, no traceback."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from evidence_builders import make_project
from torchcts_evidence import (
    build_archive,
    format_verification,
    sha256_of,
    verify_archive,
)
from torchcts_evidence.submission_schema import FIELDS, OPTIONAL_FIELDS

ODD_VALUES: list[Any] = [None, -1.5, "", [None], {"a": 1}]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:1]):
            yield from _paths(item, (*prefix, index))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    node = copy
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = new
    return copy


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Any]:
    """A good archive, the name of its canonical artifact and that artifact's JSON."""
    root = tmp_path_factory.mktemp("fuzz")
    make_project(root / "p")
    built = build_archive(root / "p" / "results", out_dir=root, project_root=root / "p")
    with zipfile.ZipFile(built.path) as zf:
        body = json.loads(zf.read("SUBMISSION.json"))
        name = body["canonical_artifact"]
        return built.path, name, json.loads(zf.read(name))


def _variant(archive: Path, name: str, content: bytes, out: Path) -> Path:
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == name:
                data = content
            elif info.filename == "SUBMISSION.json":
                body = json.loads(data)
                body["files"][name]["sha256"] = sha256_of(content)
                data = json.dumps(body).encode()
            info.compress_type = zipfile.ZIP_STORED  # fast: hundreds of variants
            dst.writestr(info, data)
    return out


def test_any_json_in_any_artifact_field_is_a_problem_not_a_crash(
    archive: tuple[Path, str, Any], tmp_path: Path
) -> None:
    """Every field of the canonical artifact replaced by odd JSON verifies or is refused
    with problems listed; verify never raises."""
    path, name, artifact = archive
    tried = 0
    for field_path in _paths(artifact):
        for odd in ODD_VALUES:
            content = json.dumps(_replace(artifact, field_path, odd)).encode()
            variant = _variant(path, name, content, tmp_path / "v.zip")
            result = verify_archive(variant)  # must not raise
            assert result.ok or result.problems
            assert format_verification(result)
            tried += 1
    assert tried > 100


def _with_submission(archive: Path, body: dict[str, Any], out: Path) -> Path:
    """The archive with SUBMISSION.json replaced by `body`; nothing else moves."""
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "SUBMISSION.json":
                data = json.dumps(body).encode()
            info.compress_type = zipfile.ZIP_STORED
            dst.writestr(info, data)
    return out


def test_any_json_in_any_submission_field_is_a_problem_not_a_crash(
    archive: tuple[Path, str, Any], tmp_path: Path
) -> None:
    """Every field of SUBMISSION.json, and of each of its file entries, replaced by
    odd JSON is refused with problems listed; verify never raises."""
    path = archive[0]
    with zipfile.ZipFile(path) as zf:
        body = json.loads(zf.read("SUBMISSION.json"))
    tried = 0
    for field_path in _paths(body):
        if not field_path:
            continue
        for odd in ODD_VALUES:
            out = tmp_path / "s.zip"
            edited = _replace(body, field_path, odd)
            result = verify_archive(_with_submission(path, edited, out))
            assert result.ok or result.problems
            assert format_verification(result)
            tried += 1
    assert tried > 100


WRONG: dict[str, Any] = {
    "a list": [None],
    "an object": {"results/x": None},
    "a number": 7,
    "a boolean": True,
}
# the one wrong-looking value each field may legitimately hold
LEGAL = {"executed_cases": "a number", "completed_normally": "a boolean"}


def test_every_submission_field_written_is_typed(
    archive: tuple[Path, str, Any],
) -> None:
    """The shape table covers every field the archive writes (format and
    format_version are checked on their own)."""
    with zipfile.ZipFile(archive[0]) as zf:
        body = json.loads(zf.read("SUBMISSION.json"))
    assert set(body) == {*FIELDS, *OPTIONAL_FIELDS, "format", "format_version"}


@pytest.mark.parametrize("key", sorted(FIELDS | OPTIONAL_FIELDS))
def test_a_submission_field_of_the_wrong_type_is_one_line_naming_it(
    key: str, archive: tuple[Path, str, Any], tmp_path: Path
) -> None:
    """A list, object, number or bool where the field holds another type is exactly
    one problem naming the field and what was found."""
    with zipfile.ZipFile(archive[0]) as zf:
        body = json.loads(zf.read("SUBMISSION.json"))
    for found, value in WRONG.items():
        if LEGAL.get(key) == found:
            continue
        out = _with_submission(archive[0], {**body, key: value}, tmp_path / "w.zip")
        problems = verify_archive(out).problems
        assert len(problems) == 1, problems
        assert problems[0].startswith(f"SUBMISSION.json: {key!r} is not "), problems
        assert problems[0].endswith(f"(found {found})"), problems
