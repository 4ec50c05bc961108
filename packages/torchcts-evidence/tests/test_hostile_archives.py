"""Every input of the hostile archive pack gets its one-line rejection (or is accepted)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from evidence_builders import make_project
from hostile_archives import (
    ESCAPES,
    HOSTILE,
    MIB,
    ZEROS,
    Hostile,
    raw_zip,
    read_members,
)
from torchcts_evidence import (
    Limits,
    Verification,
    build_archive,
    format_verification,
    verify_archive,
)
from torchcts_evidence.cli import main

RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real archive built from a synthetic run."""
    root = tmp_path_factory.mktemp("good")
    make_project(root / "p")
    return build_archive(
        root / "p" / "results", out_dir=root, project_root=root / "p"
    ).path


@pytest.mark.parametrize("case", HOSTILE, ids=[h.name for h in HOSTILE])
def test_hostile_archive_gets_its_one_line_rejection(
    case: Hostile, good: Path, tmp_path: Path
) -> None:
    """verify names the flaw in one line, and prints no raw control character."""
    archive = case.build(good, tmp_path / "hostile.zip")
    result = verify_archive(archive, case.limits)
    if case.rejection is None:
        assert result.ok, result.problems
        return
    assert not result.ok
    assert any(case.rejection in p for p in result.problems), result.problems
    text = format_verification(result)
    assert not RAW_CONTROL.search(text)
    assert text.count("\n") == len(result.problems)  # one line per problem


def test_default_bounds_reject_the_2000_member_bomb_fast_and_small(
    good: Path, tmp_path: Path
) -> None:
    """2,000 x 1 MiB of zeros (2 GB expanded) is refused in seconds, reading nothing."""
    archive = HOSTILE[0].build(good, tmp_path / "bomb.zip")
    assert archive.stat().st_size < 8 * MIB
    tracemalloc.start()
    started = time.perf_counter()
    result = verify_archive(archive)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(result.problems) == 1 and "over all members" in result.problems[0]
    assert elapsed < 10 and peak < 16 * MIB


def test_hashes_stream_through_300_mib_in_small_memory(
    good: Path, tmp_path: Path
) -> None:
    """With the ratio bound lifted, 300 MiB of members is hashed without holding it."""
    members = read_members(good)
    bomb = [(f"results/b{i:03d}.bin", ZEROS, 0o100644) for i in range(300)]
    archive = raw_zip(tmp_path / "bomb.zip", [*members, *bomb])
    tracemalloc.start()
    result = verify_archive(archive, Limits(max_ratio=1e12))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # every bomb member was read to its end: each is reported as unlisted
    assert len(result.problems) == 300
    assert (
        result.problems[0] == "results/b000.bin: member not listed in SUBMISSION.json"
    )
    assert peak < 16 * MIB, peak


def test_verify_json_reports_the_rejection_machine_readably(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify --json prints accepted, problems and summary, escapes kept as escapes."""
    case = next(h for h in HOSTILE if h.name == "escape sequences in a claim")
    archive = case.build(good, tmp_path / "hostile.zip")
    assert main(["verify", "--json", str(archive)]) == 1
    out = capsys.readouterr().out
    assert not RAW_CONTROL.search(out)
    body = json.loads(out)
    assert body["accepted"] is False and body["summary"] is None
    assert any("SUBMISSION.json: os " in p for p in body["problems"])


def test_verify_names_a_list_where_a_member_name_belongs_in_both_forms(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """result as a list is one problem naming the field, exit 1, in text and --json
    (it was a TypeError traceback: a list cannot be a set member)."""
    case = next(h for h in HOSTILE if h.name == "result named by a list")
    archive = case.build(good, tmp_path / "hostile.zip")
    assert main(["verify", str(archive)]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines()[1:] == [f"  - {case.rejection}"]
    assert "Traceback" not in out.err
    assert main(["verify", "--json", str(archive)]) == 1
    assert json.loads(capsys.readouterr().out)["problems"] == [case.rejection]


def test_verify_json_summarises_an_accepted_archive(
    good: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An accepted archive's JSON summary carries the run's claims and counts."""
    assert main(["verify", "--json", str(good)]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["accepted"] is True and body["problems"] == []
    summary = body["summary"]
    assert summary["os"] == "Linux-6.1-x86_64" and summary["python"] == "3.11.7"
    assert summary["statuses"]["crashed"] == 1
    assert summary["not_run_reasons"] == {"dtype_not_supported": 1}
    assert summary["crashed"] == [
        {"case_id": "opinfo/mul/forward/float32/0", "how": "SIGSEGV"}
    ]


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """--version prints the distribution name and version and exits 0."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == "torchcts-evidence 0.1.0"


def test_verify_into_a_closed_pipe_exits_141_without_a_traceback(
    good: Path, tmp_path: Path
) -> None:
    """verify | head -1 (reader gone) ends quietly with status 141, no traceback."""
    # many problem lines, so the output is larger than the pipe's buffer
    members = read_members(good)
    extra = [(f"results/x{i:05d}", b"x", 0o100644) for i in range(3000)]
    archive = raw_zip(tmp_path / "many.zip", [*members, *extra])
    code = "import sys; from torchcts_evidence.cli import main; sys.exit(main())"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "verify", str(archive)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what head -1 does after its line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert first.startswith(b"REJECTED many.zip: 3000 problem(s)")
    assert b"Traceback" not in err and err == b""


def test_accepted_summary_escapes_every_archive_value() -> None:
    """Claims printed in an OK summary show escapes as text and cannot forge lines."""
    claims = {"files": {}, "os": ESCAPES, "command": "run\n  - forged line"}
    text = format_verification(Verification(Path("x.zip"), submission=claims))
    assert not RAW_CONTROL.search(text)
    assert "Linux\\x1b]0;owned\\x07\\x1b[2J\\u202e" in text
    assert "run\\n  - forged line" in text
