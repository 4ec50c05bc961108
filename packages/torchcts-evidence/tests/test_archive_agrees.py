"""archive and verify agree: what archive writes verify accepts, and what verify would
reject archive refuses with verify's own line, leaving nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from evidence_builders import MANIFEST, RUN_KEY, default_records, make_project
from hostile_archives import raw_zip, read_members, relisted
from torchcts_evidence import (
    EvidenceError,
    build_archive,
    format_verification,
    verification_json,
    verify_archive,
)
from torchcts_schema import CaseRecord

MIB = 2**20


def _build(root: Path) -> Path:
    return build_archive(root / "results", out_dir=root / "out", project_root=root).path


def test_a_manifest_past_the_read_limit_is_refused_with_its_line(
    tmp_path: Path,
) -> None:
    """A valid manifest of 1.1 MiB (comments), which a run now refuses too, is refused
    by archive with the line every manifest reader gives, and no file is written."""
    notes = "".join(f"# reviewed exclusion note {i:06d}\n" for i in range(36_000))
    project = make_project(tmp_path, manifest_text=MANIFEST + notes)
    assert project.manifest.stat().st_size > MIB
    with pytest.raises(EvidenceError) as refused:
        _build(tmp_path)
    assert str(refused.value) == (
        f"{project.manifest}: manifest is larger than 1 MiB ({MIB} bytes), the most "
        "a manifest may hold"
    )
    assert not (tmp_path / "out").exists()  # refused before any output


def test_megabytes_of_a_repeated_backend_message_archive_and_verify(
    tmp_path: Path,
) -> None:
    """A 3 MiB backend message of one repeated line (deflates past 400:1 in journal
    and history) is an honest run: archived, and accepted by verify."""
    message = "device fault at 0x0: retrying the launch\n" * (3 * MIB // 41)
    records = [
        CaseRecord.from_dict({**r.to_dict(), "exception_message": message})
        if r.op == "sub"
        else r
        for r in default_records()
    ]
    make_project(tmp_path, records=records)
    result = verify_archive(_build(tmp_path))
    assert result.ok, result.problems


def test_a_results_directory_verify_would_reject_is_refused_by_archive(
    tmp_path: Path,
) -> None:
    """A journal left by another run beside the result (its start differs) is refused
    by archive with the line verify gives, not only by verify."""
    make_project(tmp_path)
    journal = tmp_path / "results" / f"{RUN_KEY}_journal.jsonl"
    journal.write_text(
        journal.read_text().replace("2026-11-30T01:00:00Z", "2026-12-01T00:00:00Z")
    )
    with pytest.raises(
        EvidenceError, match="not written, verify would reject it: "
    ) as e:
        _build(tmp_path)
    assert str(e.value).endswith(
        f"results/{RUN_KEY}_journal.jsonl: the journal of another run ('{RUN_KEY}' "
        f"started '2026-12-01T00:00:00Z') than results/{RUN_KEY}_latest.json "
        f"('{RUN_KEY}' started '2026-11-30T01:00:00Z')"
    )
    assert list((tmp_path / "out").iterdir()) == []


def _cut_journal(root: Path, nbytes: int = 300) -> Path:
    """The journal with its last `nbytes` cut off, mid-line, as a kill mid-write or
    a damaged copy leaves it."""
    journal = root / "results" / f"{RUN_KEY}_journal.jsonl"
    data = journal.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    assert len(data) - last > nbytes, "the cut must fall inside the last line"
    journal.write_bytes(data[:-nbytes])
    return journal


def test_a_cut_journal_of_a_completed_run_is_refused_and_rejected(
    tmp_path: Path,
) -> None:
    """A completed run whose journal's last line (run_end) is cut mid-line: archive
    refuses with the line verify gives, naming the journal and the cut, and writes
    nothing; an archive holding such a journal (crafted, hashes relisted) is
    rejected by verify with the same line."""
    records = [
        CaseRecord.from_dict({**r.to_dict(), "detail": "x" * 400})
        for r in default_records()
    ]
    make_project(tmp_path / "good", records=records)
    good = _build(tmp_path / "good")
    make_project(tmp_path, records=records)
    _cut_journal(tmp_path)
    with pytest.raises(EvidenceError) as refused:
        _build(tmp_path)
    line = (
        f"results/{RUN_KEY}_journal.jsonl: its last line is cut off, but "
        f"results/{RUN_KEY}_latest.json says the run completed normally"
    )
    assert line in str(refused.value)
    assert "\n" not in str(refused.value)
    assert list((tmp_path / "out").iterdir()) == []

    name = f"results/{RUN_KEY}_journal.jsonl"
    members = read_members(good)
    whole = {n: d for n, d, _mode in members}[name]
    crafted = raw_zip(tmp_path / "crafted.zip", relisted(members, {name: whole[:-300]}))
    result = verify_archive(crafted)
    assert not result.ok
    assert any(line in p for p in result.problems), result.problems


def test_a_completed_runs_journal_without_its_run_end_line_is_refused(
    tmp_path: Path,
) -> None:
    """Cut exactly at a line break, a completed run's journal loses its run_end line
    whole (no torn tail for the reader to notice): archive refuses it, naming it."""
    make_project(tmp_path)
    journal = tmp_path / "results" / f"{RUN_KEY}_journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    assert b'"type":"run_end"' in lines[-1]
    journal.write_bytes(b"".join(lines[:-1]))
    with pytest.raises(EvidenceError) as refused:
        _build(tmp_path)
    assert (
        f"results/{RUN_KEY}_journal.jsonl: it has no run_end line, but "
        f"results/{RUN_KEY}_latest.json says the run completed normally"
    ) in str(refused.value)


def test_a_cut_journal_of_an_interrupted_run_is_noted_not_refused(
    tmp_path: Path,
) -> None:
    """An interrupted run's journal cut mid-line (the kill landed mid-write) is what
    --resume repairs: archive writes the zip and notes the cut; verify accepts it and
    notes it in its summary and its JSON."""
    make_project(tmp_path, completed=False)
    _cut_journal(tmp_path, nbytes=20)
    built = build_archive(
        tmp_path / "results", out_dir=tmp_path / "out", project_root=tmp_path
    )
    note = f"results/{RUN_KEY}_journal.jsonl: its last line is cut off"
    assert [n for n in built.notes if n.startswith(note)], built.notes
    result = verify_archive(built.path)
    assert result.ok, result.problems
    assert any(n.startswith(note) for n in result.notes)
    assert f"note: {note}" in format_verification(result)
    assert verification_json(result)["notes"] == result.notes
