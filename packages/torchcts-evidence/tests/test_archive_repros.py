"""The run's repro scripts travel in its submission archive: the ones its records
name, scrubbed and checked by verify; their saved inputs are left out and named so."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from evidence_builders import RUN_KEY, default_records, make_project
from hostile_archives import edit_submission, listed, raw_zip, read_members, relisted
from torchcts_evidence import (
    Limits,
    build_archive,
    format_verification,
    verify_archive,
)
from torchcts_evidence.repros import SAVED_INPUTS
from torchcts_schema import CaseRecord, ResultsLayout, Status

FAILED_STEM = "opinfo~sub~forward~float32~0"
SCRIPT = f"{RUN_KEY}_repros/{FAILED_STEM}.py"  # what the failed record names
SOURCE = '"""Repro."""\nimport torch\nprint(torch.ones(2) - 1)\n'


def _project(root: Path, script: str = SOURCE) -> Path:
    """A run whose failed case names its repro script, which has saved inputs
    beside it, and a stale script of an earlier run in the same folder."""
    records = [
        CaseRecord.from_dict({**r.to_dict(), "repro": SCRIPT})
        if r.status is Status.FAILED
        else r
        for r in default_records()
    ]
    project = make_project(root, records=records)
    layout = ResultsLayout(project.results, RUN_KEY)
    layout.repros_dir.mkdir()
    layout.repro_script(FAILED_STEM).write_text(script, encoding="utf-8")
    layout.repro_inputs(FAILED_STEM).write_bytes(b"PK\x03\x04 saved sample")
    layout.repro_script("opinfo~old~forward~float32~0").write_text("print(1)\n")
    return project.results


def _build(root: Path, limits: Limits | None = None) -> Path:
    return build_archive(
        root / "results", out_dir=root / "out", project_root=root, limits=limits
    ).path


def test_the_named_repro_is_archived_and_found_where_its_record_says(
    tmp_path: Path,
) -> None:
    """The failed case's script is a member at results/<record.repro> (where
    `explain` on the extracted archive looks), listed with its hash; the saved
    inputs are not members but are named in left_out with the reason; a script no
    record of this run names stays out; verify accepts and prints what was left
    out."""
    _project(tmp_path)
    archive = _build(tmp_path)
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
        body = json.loads(zf.read("SUBMISSION.json"))
        assert zf.read(f"results/{SCRIPT}").decode() == SOURCE
        zf.extractall(tmp_path / "x")
    assert f"results/{SCRIPT}" in body["files"]
    assert f"results/{RUN_KEY}_repros/{FAILED_STEM}.pt" not in names
    assert f"results/{RUN_KEY}_repros/opinfo~old~forward~float32~0.py" not in names
    assert body["left_out"] == {
        SAVED_INPUTS: [f"results/{RUN_KEY}_repros/{FAILED_STEM}.pt"]
    }
    assert (tmp_path / "x" / "results" / SCRIPT).read_text() == SOURCE
    result = verify_archive(archive)
    assert result.ok, result.problems
    assert f"left out: 1 file(s): {SAVED_INPUTS}" in format_verification(result)


def test_a_repro_is_scrubbed_like_every_member(tmp_path: Path) -> None:
    """The project root in a script becomes relative, as in every other member."""
    _project(tmp_path, script=f"DATA = '{tmp_path.resolve()}/data/x.bin'\n")
    with zipfile.ZipFile(_build(tmp_path)) as zf:
        text = zf.read(f"results/{SCRIPT}").decode()
        body = json.loads(zf.read("SUBMISSION.json"))
    assert text == "DATA = 'data/x.bin'\n"
    assert f"results/{SCRIPT}" in body["scrubbed"]


def test_a_named_repro_missing_from_the_results_is_listed_as_left_out(
    tmp_path: Path,
) -> None:
    """A record's script that is not on disk cannot be archived: the archive is
    still written, and left_out names it, so verify accepts it."""
    results = _project(tmp_path)
    (results / SCRIPT).unlink()
    archive = _build(tmp_path)
    with zipfile.ZipFile(archive) as zf:
        body = json.loads(zf.read("SUBMISSION.json"))
    assert [f"results/{SCRIPT}"] in body["left_out"].values()
    assert verify_archive(archive).ok


def test_a_repro_over_the_read_limit_is_left_out_not_refused(tmp_path: Path) -> None:
    """A script past verify's read limit would get the archive rejected: it is left
    out with the reason instead, and the archive verifies."""
    _project(tmp_path, script="# " + "x" * 200 + "\n")
    archive = _build(tmp_path, Limits(max_repro_bytes=100))
    with zipfile.ZipFile(archive) as zf:
        body = json.loads(zf.read("SUBMISSION.json"))
    assert f"results/{SCRIPT}" not in body["files"]
    reasons = [
        r for r, names in body["left_out"].items() if f"results/{SCRIPT}" in names
    ]
    assert reasons == ["repro script over 100 bytes, the most verify reads"]
    assert verify_archive(archive, Limits(max_repro_bytes=100)).ok


def _verify_without_the_script(
    root: Path, left_out: dict[str, list[str]] | None
) -> list[str]:
    """verify's problems with an archive crafted from a good one: the repro script
    taken out (member and listing), and SUBMISSION.json's left_out set when given."""
    _project(root)
    members = [m for m in read_members(_build(root)) if m[0] != f"results/{SCRIPT}"]

    def craft(body: dict[str, object]) -> None:
        files = body["files"]
        assert isinstance(files, dict)
        del files[f"results/{SCRIPT}"]
        if left_out is not None:
            body["left_out"] = left_out

    crafted = raw_zip(root / "c.zip", edit_submission(members, craft))
    return verify_archive(crafted).problems


def test_verify_rejects_a_repro_the_archive_neither_holds_nor_lists(
    tmp_path: Path,
) -> None:
    """An archive whose record names a repro script that is neither a member nor in
    left_out (as every archive made before repros were archived) is rejected,
    naming the case and the script."""
    problems = _verify_without_the_script(tmp_path, left_out=None)
    assert problems == [
        f"results/{RUN_KEY}_latest.json: case 'opinfo/sub/forward/float32/0' names "
        f"its repro script 'results/{SCRIPT}', which the archive neither holds nor "
        "lists as left out"
    ]


@pytest.mark.parametrize(
    ("reason", "problem"),
    [
        ("the maintainer did not want it", "left_out gives a reason no archive writes"),
        (SAVED_INPUTS, "left_out lists as saved inputs a name that is not one"),
    ],
)
def test_verify_rejects_a_left_out_list_an_archive_never_writes(
    tmp_path: Path, reason: str, problem: str
) -> None:
    """A crafted left_out cannot excuse a missing script with any text, nor call a
    script saved inputs: only the archive's own reasons, for what it left out."""
    problems = _verify_without_the_script(
        tmp_path, left_out={reason: [f"results/{SCRIPT}"]}
    )
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        (
            b"open('/home/alice/data.bin')\n",
            "a repro script holding an absolute path '/home/alice/data.bin'",
        ),
        (b"x = 'C:\\\\Users\\\\alice'\n", "a repro script holding an absolute path"),
        (b"\xff\xfe not text\n", "a repro script that is not UTF-8 text"),
    ],
)
def test_verify_rejects_a_repro_with_a_host_path_or_not_text(
    tmp_path: Path, script: bytes, problem: str
) -> None:
    """A script member (hash relisted, so only the flaw remains) holding an absolute
    path, or not UTF-8 text, is one problem naming it; nothing is executed."""
    _project(tmp_path)
    name = f"results/{SCRIPT}"
    crafted = raw_zip(
        tmp_path / "c.zip", relisted(read_members(_build(tmp_path)), {name: script})
    )
    problems = verify_archive(crafted).problems
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{name}: {problem}"), problems


def test_verify_reads_no_repro_past_its_limit(tmp_path: Path) -> None:
    """A script member declaring more than Limits.max_repro_bytes is refused unread."""
    _project(tmp_path)
    name = f"results/{RUN_KEY}_repros/extra.py"
    crafted = raw_zip(
        tmp_path / "c.zip",
        listed(read_members(_build(tmp_path)), [(name, b"#" * 300, 0o100644)]),
    )
    problems = verify_archive(crafted, Limits(max_repro_bytes=200)).problems
    assert problems == [f"{name}: cannot be read (300 bytes is too large (limit 200))"]


def test_no_repro_budget_is_spent_past_the_member_limit(tmp_path: Path) -> None:
    """With room for no more members, the script is left out with the reason; the
    archive is still written and verifies under the same limit."""
    _project(tmp_path)
    with zipfile.ZipFile(_build(tmp_path)) as zf:
        count = len(zf.namelist())
    (tmp_path / "out").rename(tmp_path / "first")
    archive = _build(tmp_path, Limits(max_members=count - 1))
    with zipfile.ZipFile(archive) as zf:
        body = json.loads(zf.read("SUBMISSION.json"))
        assert len(zf.namelist()) == count - 1
    assert body["left_out"][
        f"repro scripts past {count - 1} members, the most verify accepts"
    ] == [f"results/{SCRIPT}"]
    assert verify_archive(archive, Limits(max_members=count - 1)).ok
