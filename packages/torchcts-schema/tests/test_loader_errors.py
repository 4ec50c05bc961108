"""Every malformed input gives one ArtifactError that names the file and the problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from schema_factories import metadata, record
from torchcts_schema import (
    ArtifactError,
    JournalWriter,
    RunArtifact,
    Status,
    count_statuses,
    encode_artifact,
    journal_path,
    load_result,
    write_history,
)

KEY = "cpu_x86-64"


def _reference(path: Path, target: str) -> None:
    path.write_text(
        json.dumps(
            {"format": "torchcts-reference", "format_version": 1, "target": target}
        )
    )


def _expect(path: Path, message: str) -> ArtifactError:
    with pytest.raises(ArtifactError, match=message) as info:
        load_result(path)
    assert str(path.name) in str(info.value)
    assert info.value.__cause__ is None  # never a raw traceback from inside json
    return info.value


def test_truncated_json(tmp_path: Path) -> None:
    """A history cut short names the line and column."""
    artifact = write_history(
        tmp_path, KEY, RunArtifact.from_records(metadata(), [record()])
    )
    artifact.write_text(artifact.read_text()[:-40])
    _expect(artifact, "corrupted or truncated JSON at line 1")


def test_empty_file(tmp_path: Path) -> None:
    """An empty file is called out as such."""
    path = tmp_path / f"{KEY}_latest.json"
    path.write_text("")
    _expect(path, "empty file")


def test_not_utf8(tmp_path: Path) -> None:
    """Binary garbage is not UTF-8 text."""
    path = tmp_path / f"{KEY}_latest.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    _expect(path, "not UTF-8")


def test_unknown_format_version(tmp_path: Path) -> None:
    """A newer format version is refused by name."""
    data = json.loads(encode_artifact(RunArtifact.from_records(metadata(), [record()])))
    data["format_version"] = 99
    path = tmp_path / "a.json"
    path.write_text(json.dumps(data))
    _expect(path, "unknown format_version 99")


def test_not_a_result(tmp_path: Path) -> None:
    """Some other JSON document is not a TorchCTS result."""
    path = tmp_path / "a.json"
    path.write_text('{"hello": 1}')
    _expect(path, "not a TorchCTS result")


def test_bad_status_value(tmp_path: Path) -> None:
    """An unknown status names the case and the allowed values."""
    data = json.loads(
        encode_artifact(
            RunArtifact.from_records(metadata(), [record()]), encoding="plain"
        )
    )
    data["results"][0]["status"] = "kinda_passed"
    path = tmp_path / "a.json"
    path.write_text(json.dumps(data))
    _expect(path, "'kinda_passed' is not one of passed")


def test_reference_loop(tmp_path: Path) -> None:
    """References that point at each other are a loop, not a hang."""
    _reference(tmp_path / f"{KEY}_latest.json", "b.json")
    _reference(tmp_path / "b.json", f"{KEY}_latest.json")
    _expect(tmp_path / f"{KEY}_latest.json", "reference loop")


def test_reference_self_loop(tmp_path: Path) -> None:
    """A reference to itself is a loop."""
    _reference(tmp_path / f"{KEY}_latest.json", f"{KEY}_latest.json")
    _expect(tmp_path / f"{KEY}_latest.json", "reference loop")


def test_reference_leaving_results(tmp_path: Path) -> None:
    """A reference that climbs out of results/ is refused."""
    results = tmp_path / "results"
    results.mkdir()
    (tmp_path / "secret.json").write_text("{}")
    _reference(results / f"{KEY}_latest.json", "../secret.json")
    _expect(results / f"{KEY}_latest.json", "uses '..'")


def test_reference_through_symlink_leaving_results(tmp_path: Path) -> None:
    """A relative target that is a link out of results/ is refused too."""
    results = tmp_path / "results"
    results.mkdir()
    (tmp_path / "outside.json").write_text("{}")
    (results / "link.json").symlink_to(tmp_path / "outside.json")
    _reference(results / f"{KEY}_latest.json", "link.json")
    _expect(results / f"{KEY}_latest.json", "leaves the results directory")


def test_absolute_reference(tmp_path: Path) -> None:
    """An absolute target is refused even when it exists."""
    target = write_history(
        tmp_path, KEY, RunArtifact.from_records(metadata(), [record()])
    )
    _reference(tmp_path / f"{KEY}_latest.json", str(target))
    _expect(tmp_path / f"{KEY}_latest.json", "is absolute")


def test_missing_reference_target(tmp_path: Path) -> None:
    """A dangling reference names its target."""
    _reference(tmp_path / f"{KEY}_latest.json", f"{KEY}_history/nope.json")
    _expect(tmp_path / f"{KEY}_latest.json", "does not exist")


def test_corrupt_middle_journal_line(tmp_path: Path) -> None:
    """A corrupt line before the end is an error with its line number."""
    path = journal_path(tmp_path, KEY)
    with JournalWriter(path) as journal:
        journal.run_start(metadata())
        journal.case(record(sample=0))
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "{broken\n" + lines[1])
    _expect(path, "line 2 is not valid JSON")


@pytest.mark.parametrize("encoding", ["plain", "compact"])
@pytest.mark.parametrize("second", [Status.FAILED, Status.NOT_RUN])
def test_a_case_id_recorded_twice_is_refused(
    tmp_path: Path, encoding: str, second: Status
) -> None:
    """A history with a second record for one case (its counts and digest made to
    agree) is refused by the case id, not counted as one more case."""
    records = [record(sample=0), record(sample=1), record(sample=0, status=second)]
    artifact = RunArtifact.from_records(
        metadata(counts=count_statuses(records)), records
    )
    path = tmp_path / "history.json"
    path.write_text(encode_artifact(artifact, encoding=encoding))
    _expect(path, f"case id '{record(sample=0).case_id}' has more than one record")


def test_json_nested_too_deeply_is_one_error(tmp_path: Path) -> None:
    """100,000 nested brackets in a latest file or a journal line are refused by
    name, not a RecursionError traceback."""
    latest = tmp_path / f"{KEY}_latest.json"
    latest.write_text("[" * 100_000 + "]" * 100_000)
    _expect(latest, "not valid JSON \\(nested too deeply\\)")
    path = journal_path(tmp_path / "j", KEY)
    with JournalWriter(path) as journal:
        journal.run_start(metadata())
    with path.open("a") as fh:
        fh.write("[" * 100_000 + "\n" + "{}\n")
    _expect(path, "line 2 is not valid JSON \\(nested too deeply\\)")


def test_journal_without_run_start(tmp_path: Path) -> None:
    """A journal with cases but no metadata says what it lacks."""
    path = journal_path(tmp_path, KEY)
    with JournalWriter(path) as journal:
        journal.case(record(sample=0))
    _expect(path, "no run_start line")


def test_several_run_keys_need_a_choice(tmp_path: Path) -> None:
    """A results dir with two run keys lists them instead of guessing."""
    for key in ("a_x", "b_y"):
        write_history(
            tmp_path, key, RunArtifact.from_records(metadata(run_key=key), [record()])
        )
    with pytest.raises(
        ArtifactError,
        match="several run keys \\(a_x, b_y\\); name one with --run-key KEY",
    ):
        load_result(tmp_path)
    assert load_result(tmp_path, run_key="b_y").metadata.run_key == "b_y"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("counts", None, "counts has the wrong type"),
        ("counts", {"passed": "3"}, "counts must map names to integers"),
        ("completed_normally", "yes", "completed_normally has the wrong type"),
        ("run_key", 7, "run_key has the wrong type"),
    ],
)
def test_metadata_field_types(
    field: str, value: object, message: str, tmp_path: Path
) -> None:
    """Metadata with a field of the wrong type is refused by name, not later."""
    data = json.loads(
        encode_artifact(
            RunArtifact.from_records(metadata(), [record()]), encoding="plain"
        )
    )
    data["metadata"][field] = value
    path = tmp_path / "a.json"
    path.write_text(json.dumps(data))
    _expect(path, message)


def test_crash_block_not_an_object(tmp_path: Path) -> None:
    """A crash block that is not an object is an ArtifactError, not AttributeError."""
    data = json.loads(
        encode_artifact(
            RunArtifact.from_records(metadata(), [record()]), encoding="plain"
        )
    )
    data["results"][0]["crash"] = "boom"
    path = tmp_path / "a.json"
    path.write_text(json.dumps(data))
    _expect(path, "crash block is not an object")


def test_a_results_dir_with_only_subset_runs_names_their_folders(
    tmp_path: Path,
) -> None:
    """No result of its own, but subset runs under selections/: the error says where."""
    for name in ("op-mul", "case-opinfo.add.forward.float32.0"):
        (tmp_path / "selections" / name).mkdir(parents=True)
    error = _expect(tmp_path, "no .*_latest.json")
    assert "selections/case-opinfo.add.forward.float32.0, selections/op-mul" in str(
        error
    )
    (tmp_path / "selections" / "op-mul").rmdir()
    (tmp_path / "selections" / "case-opinfo.add.forward.float32.0").rmdir()
    assert "selections" not in str(_expect(tmp_path, "no .*_latest.json"))
