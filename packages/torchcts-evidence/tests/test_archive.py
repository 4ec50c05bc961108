"""Building submission archives: contents, determinism and refusals."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from evidence_builders import MANIFEST, RUN_KEY, make_project, record
from torchcts_evidence import EvidenceError, build_archive, sha256_of, verify_archive
from torchcts_schema import Status


def _build(project_root: Path, out: Path, **kw: object):  # type: ignore[no-untyped-def]
    return build_archive(
        project_root / "results", out_dir=out, project_root=project_root, **kw
    )


def test_archive_holds_the_run_artifacts_and_submission(tmp_path: Path) -> None:
    """The zip holds latest, canonical artifact, report, runlog, journal, coverage,
    oracle JSONL, crash record, manifest.py and a SUBMISSION.json hashing them all."""
    project = make_project(tmp_path)
    built = _build(tmp_path, tmp_path / "out")
    assert built.path.name == "torchcts-results-20261130T010203Z.zip"
    with zipfile.ZipFile(built.path) as zf:
        names = zf.namelist()
        body = json.loads(zf.read("SUBMISSION.json"))
        data = {n: zf.read(n) for n in names}
    history = [n for n in names if n.startswith(f"results/{RUN_KEY}_history/")]
    assert len(history) == 1
    for expected in (
        "manifest.py",
        f"results/{RUN_KEY}_latest.json",
        f"results/{RUN_KEY}_journal.jsonl",
        f"results/{RUN_KEY}.md",
        f"results/{RUN_KEY}_runlog.txt",
        "results/coverage/summary.json",
        f"results/{RUN_KEY}_opinfo_oracle_failures_123.jsonl",
        f"results/{RUN_KEY}_crashes/opinfo~mul~forward~float32~0.json",
    ):
        assert expected in names
    assert data["manifest.py"] == project.manifest.read_bytes()
    assert body["canonical_artifact"] == history[0]
    assert body["latest"] == f"results/{RUN_KEY}_latest.json"
    assert body["backend"] == "simdev"
    assert body["hardware_key"] == "x86-64-2cpu-24gb"
    assert body["torch_version"] == "2.13.0+cpu"
    assert body["command"] == "torchcts-run --manifest manifests/simdev.py"
    assert body["completed_normally"] is True
    assert body["executed_cases"] == 3
    assert body["manifest_digest"] == sha256_of(project.manifest.read_bytes())
    assert set(body["files"]) == set(names) - {"SUBMISSION.json"}
    for name, entry in body["files"].items():
        assert entry["sha256"] == sha256_of(data[name])


def test_same_inputs_give_a_byte_identical_archive(tmp_path: Path) -> None:
    """Rebuilding after touching every file's mtime gives the same bytes."""
    make_project(tmp_path)
    first = _build(tmp_path, tmp_path / "a").path.read_bytes()
    for path in (tmp_path / "results").rglob("*"):
        os.utime(path, (1_900_000_000, 1_900_000_000))
    second = _build(tmp_path, tmp_path / "b").path.read_bytes()
    assert first == second


def test_members_have_fixed_times_and_permissions(tmp_path: Path) -> None:
    """Every member carries the run's end time, mode 0644 and the Unix creator."""
    make_project(tmp_path)
    with zipfile.ZipFile(_build(tmp_path, tmp_path / "out").path) as zf:
        infos = zf.infolist()
    # zip stores seconds in 2-second steps: 01:02:03 is written as 01:02:02
    assert {i.date_time for i in infos} == {(2026, 11, 30, 1, 2, 2)}
    assert {i.external_attr >> 16 for i in infos} == {0o100644}
    assert {i.create_system for i in infos} == {3}
    assert [i.filename for i in infos][:2] == ["SUBMISSION.json", "manifest.py"]


def test_interrupted_run_is_archived_as_not_completed(tmp_path: Path) -> None:
    """A run without run_end (killed) is still evidence: archived, marked incomplete."""
    make_project(tmp_path, completed=False)
    with zipfile.ZipFile(_build(tmp_path, tmp_path / "out").path) as zf:
        body = json.loads(zf.read("SUBMISSION.json"))
    assert body["completed_normally"] is False
    assert body["canonical_artifact"] is None


def test_empty_results_directory_is_refused(tmp_path: Path) -> None:
    """An empty results dir is refused with the reason."""
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "README.md").write_text("x")
    with pytest.raises(EvidenceError, match="empty results directory"):
        _build(tmp_path, tmp_path / "out")


def test_run_without_executed_case_is_refused(tmp_path: Path) -> None:
    """A run whose records are all not_run or skipped is refused."""
    make_project(
        tmp_path,
        records=[record("add", Status.SKIPPED), record("sub", Status.NOT_RUN)],
    )
    with pytest.raises(EvidenceError, match="executed no case"):
        _build(tmp_path, tmp_path / "out")


def test_template_manifest_is_refused(tmp_path: Path) -> None:
    """A manifest still marked TEMPLATE = True is refused."""
    make_project(tmp_path, manifest_text=MANIFEST + "TEMPLATE = True\n")
    with pytest.raises(EvidenceError, match="unedited template"):
        _build(tmp_path, tmp_path / "out")


def test_manifest_identical_to_a_template_is_refused(tmp_path: Path) -> None:
    """Deleting only the TEMPLATE line of a shipped template is still refused."""
    make_project(tmp_path)
    (tmp_path / "manifests" / "template.py").write_text(MANIFEST + "TEMPLATE = True\n")
    with pytest.raises(EvidenceError, match=r"identical to the template template\.py"):
        _build(tmp_path, tmp_path / "out")


def test_manifest_with_another_digest_is_refused(tmp_path: Path) -> None:
    """An explicit manifest that is not the run's (digest differs) is refused."""
    project = make_project(tmp_path)
    other = tmp_path / "other.py"
    other.write_text(MANIFEST + "LEVEL = 2\n")
    with pytest.raises(EvidenceError, match="no manifest matches the run's digest"):
        _build(tmp_path, tmp_path / "out", manifest=other)
    project.manifest.write_text(MANIFEST + "LEVEL = 3\n")
    with pytest.raises(EvidenceError, match="pass the manifest the run used"):
        _build(tmp_path, tmp_path / "out")


def test_manifest_is_found_by_device_when_the_command_names_none(
    tmp_path: Path,
) -> None:
    """With --best-device (no --manifest in the command) manifests/<device>.py is used."""
    make_project(tmp_path, command="torchcts-run --best-device")
    built = _build(tmp_path, tmp_path / "out")
    assert "manifest.py" in built.members


def test_several_runs_archive_the_one_written_last(tmp_path: Path) -> None:
    """Two runs in results/: the newest is archived (and named), or --run-key's."""
    make_project(tmp_path)
    other = make_project(tmp_path / "other")
    for path in other.results.iterdir():
        if path.name.startswith(RUN_KEY):
            path.rename(tmp_path / "results" / path.name.replace(RUN_KEY, "cpu_x", 1))
    os.utime(tmp_path / "results" / "cpu_x_latest.json", (1, 1))
    os.utime(tmp_path / "results" / "cpu_x_journal.jsonl", (1, 1))
    built = _build(tmp_path, tmp_path / "out")
    assert built.run_key == RUN_KEY and built.other_runs == ("cpu_x",)
    with pytest.raises(EvidenceError, match="no run 'gpu_y' here"):
        _build(tmp_path, tmp_path / "out", run_key="gpu_y")


def test_malformed_run_metadata_is_refused_naming_the_field(tmp_path: Path) -> None:
    """A journal whose metadata has a wrong-typed field is refused, not a traceback."""
    make_project(tmp_path, completed=False)
    journal = tmp_path / "results" / f"{RUN_KEY}_journal.jsonl"
    lines = journal.read_text().splitlines()
    start = json.loads(lines[0])
    start["metadata"]["level"] = "high"
    journal.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    with pytest.raises(
        EvidenceError, match=r"level (has the wrong type|is str, not int)"
    ):
        _build(tmp_path, tmp_path / "out")


def test_template_placeholder_backend_name_is_refused(tmp_path: Path) -> None:
    """A template with only the TEMPLATE line deleted still names 'my backend'."""
    text = MANIFEST.replace('BACKEND_NAME = "simdev"', 'BACKEND_NAME = "my backend"')
    make_project(tmp_path, manifest_text=text)
    with pytest.raises(EvidenceError, match="template's placeholder"):
        _build(tmp_path, tmp_path / "out")


@pytest.mark.parametrize("odd", ["\ud800", "\udcff"])
def test_a_lone_surrogate_in_the_command_is_archived_escaped_and_verifies(
    tmp_path: Path, odd: str
) -> None:
    """A command holding a lone surrogate (a results path that is not UTF-8 reads
    as \\udcff) is archived as its JSON escape, read back unchanged, and verified;
    other non-ASCII text stays as UTF-8 text."""
    command = f"torchcts-run --manifest manifests/simdev.py --results r{odd}-café"
    make_project(tmp_path, command=command)
    built = _build(tmp_path, tmp_path / "out")
    with zipfile.ZipFile(built.path) as zf:
        raw = zf.read("SUBMISSION.json")
    assert f"\\u{ord(odd):04x}".encode() in raw
    assert "café".encode() in raw
    assert json.loads(raw.decode("utf-8"))["command"] == command
    result = verify_archive(built.path)
    assert result.ok, result.problems
