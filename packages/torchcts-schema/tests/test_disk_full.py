"""A full disk (or any OSError) while writing an artifact: one clear error, no torn file."""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from schema_factories import metadata, record
from torchcts_schema import (
    ArtifactError,
    ArtifactWriteError,
    JournalWriter,
    RunArtifact,
    history_dir,
    latest_path,
    load_result,
    read_journal,
    write_atomic,
    write_history,
    write_once,
    write_reference,
    write_snapshot,
)

KEY = "simdev_x86-64-2cpu-24gb"
ENOSPC_WORDS = "cannot write (no space left on device)"


def _raise(code: int) -> Callable[..., Any]:
    def fail(*args: object, **kwargs: object) -> Any:
        raise OSError(code, os.strerror(code))

    return fail


def _artifact(n: int = 3) -> RunArtifact:
    return RunArtifact.from_records(
        metadata(completed_normally=True), [record(sample=i) for i in range(n)]
    )


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("fails", ["write", "fsync", "replace"])
def test_write_atomic_failure_keeps_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str
) -> None:
    """ENOSPC at any step: one ArtifactWriteError naming the file, old text intact."""
    target = tmp_path / "report.md"
    target.write_text("old\n", encoding="utf-8")
    monkeypatch.setattr(os, fails, _raise(errno.ENOSPC))
    with pytest.raises(ArtifactWriteError) as info:
        write_atomic(target, "new text\n")
    monkeypatch.undo()
    assert str(info.value) == f"{target}: {ENOSPC_WORDS}"
    assert info.value.errno == errno.ENOSPC
    assert isinstance(info.value, ArtifactError)
    assert target.read_text(encoding="utf-8") == "old\n"
    assert _names(tmp_path) == ["report.md"]


@pytest.mark.parametrize("write", [write_atomic, write_once])
def test_text_utf8_cannot_hold_is_one_error_naming_the_file(
    tmp_path: Path, write: Callable[[Path, str], object]
) -> None:
    """A lone surrogate has no UTF-8 form: one write error naming the file and the
    offset (was a UnicodeEncodeError traceback), the old text intact, no temp file."""
    target = tmp_path / "repro.py"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(ArtifactWriteError) as info:
        write(target, "x = '\ud800'\n")
    assert str(info.value) == (
        f"{target}: cannot write (the text holds '\\ud800' at offset 5, "
        "a lone surrogate that UTF-8 cannot encode)"
    )
    assert info.value.errno == errno.EILSEQ
    assert target.read_text(encoding="utf-8") == "old\n"
    assert _names(tmp_path) == ["repro.py"]


@pytest.mark.parametrize("below", ["", "sub/deeper"])
def test_a_file_where_the_folder_should_be_is_named(tmp_path: Path, below: str) -> None:
    """Writing into a path whose folder is an existing file names that file as
    not a directory (was 'cannot write (file exists)'), and leaves it as it was."""
    taken = tmp_path / "reports"
    taken.write_text("mine\n", encoding="utf-8")
    target = taken / below / "run.md" if below else taken / "run.md"
    with pytest.raises(ArtifactWriteError) as info:
        write_atomic(target, "text\n")
    assert (
        str(info.value)
        == f"{target}: cannot write ({taken} is a file, not a directory)"
    )
    assert info.value.errno == errno.ENOTDIR
    assert taken.read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.EDQUOT, "disk quota exceeded"),
        (errno.EFBIG, "file too large"),
        (errno.EROFS, "read-only file system"),
    ],
)
def test_other_write_errors_are_named_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, words: str
) -> None:
    """Quota, file size and read-only mounts read as the OS words them, lower-cased."""
    monkeypatch.setattr(os, "write", _raise(code))
    with pytest.raises(
        ArtifactWriteError, match=rf"^.*x\.json: cannot write \({words}\)$"
    ):
        write_atomic(tmp_path / "x.json", "{}")


def test_history_on_a_full_disk_leaves_nothing_under_a_final_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_history that hits ENOSPC leaves no history file, temp or reference."""
    monkeypatch.setattr(os, "write", _raise(errno.ENOSPC))
    with pytest.raises(ArtifactWriteError, match=re.escape(ENOSPC_WORDS)):
        write_history(tmp_path, KEY, _artifact())
    assert _names(history_dir(tmp_path, KEY)) == []
    assert not latest_path(tmp_path, KEY).exists()


def test_failed_link_leaves_no_history_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OSError while claiming the final name removes the temp file too."""
    monkeypatch.setattr(os, "link", _raise(errno.EIO))
    target = tmp_path / "h" / "a.json"
    with pytest.raises(
        ArtifactWriteError, match=r"a\.json: cannot write \(input/output error\)$"
    ):
        write_once(target, "{}\n")
    assert _names(target.parent) == []


def test_write_once_takes_a_suffix_and_never_overwrites(tmp_path: Path) -> None:
    """A taken name gets -1, then -2; every earlier file keeps its text."""
    target = tmp_path / "a.json"
    got = [write_once(target, f"{n}\n") for n in range(3)]
    assert [p.name for p in got] == ["a.json", "a-1.json", "a-2.json"]
    assert [p.read_text(encoding="utf-8") for p in got] == ["0\n", "1\n", "2\n"]
    assert _names(tmp_path) == ["a-1.json", "a-2.json", "a.json"]


def test_write_once_without_hard_links_still_claims_exclusively(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where os.link is refused (EPERM), O_EXCL claims the name; nothing is overwritten."""
    monkeypatch.setattr(os, "link", _raise(errno.EPERM))
    (tmp_path / "a.json").write_text("first\n", encoding="utf-8")
    got = write_once(tmp_path / "a.json", "second\n")
    assert got.name == "a-1.json"
    assert got.read_text(encoding="utf-8") == "second\n"
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == "first\n"
    assert _names(tmp_path) == ["a-1.json", "a.json"]


@pytest.mark.parametrize("writer", ["snapshot", "reference"])
def test_snapshot_and_reference_raise_one_write_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str
) -> None:
    """Snapshot and reference writes fail with ArtifactWriteError, not an OSError."""
    latest = latest_path(tmp_path, KEY)
    target = tmp_path / "t.json"
    target.write_text("{}", encoding="utf-8")
    monkeypatch.setattr(os, "replace", _raise(errno.ENOSPC))
    with pytest.raises(ArtifactWriteError, match=f"{KEY}_latest.json: cannot write"):
        if writer == "snapshot":
            write_snapshot(latest, _artifact(), 3)
        else:
            write_reference(latest, target)
    assert _names(tmp_path) == ["t.json"]


class _FillsUp:
    """os.write that lets `budget` bytes through, then fails like a full disk."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.real = os.write

    def __call__(self, fd: int, data: Any) -> int:
        if self.budget <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = self.real(fd, bytes(data[: self.budget]))
        self.budget -= n
        return n


def test_journal_full_disk_cuts_back_to_last_complete_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line cut short by ENOSPC is removed; every earlier record still loads."""
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    writer.run_start(metadata())
    writer.case(record(sample=0))
    size = path.stat().st_size
    monkeypatch.setattr(os, "write", _FillsUp(40))
    with pytest.raises(ArtifactWriteError) as info:
        writer.case(record(sample=1))
    monkeypatch.undo()
    assert str(info.value) == f"{path}: {ENOSPC_WORDS}"
    assert path.stat().st_size == size
    writer.case(record(sample=2))  # space came back: the journal goes on cleanly
    writer.close()
    contents = read_journal(path)
    assert [r.sample for r in contents.records.values()] == [0, 2]
    assert not contents.truncated_tail


def test_journal_keeps_readable_records_when_it_cannot_cut_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the cut fails too, the torn last line is tolerated and earlier records load."""
    path = tmp_path / "j.jsonl"
    with JournalWriter(path) as writer:
        writer.run_start(metadata())
        writer.case(record(sample=0))
        monkeypatch.setattr(os, "write", _FillsUp(40))
        monkeypatch.setattr(os, "ftruncate", _raise(errno.EIO))
        with pytest.raises(ArtifactWriteError):
            writer.case(record(sample=1))
    monkeypatch.undo()
    contents = read_journal(path)
    assert contents.truncated_tail
    assert [r.sample for r in contents.records.values()] == [0]


def test_journal_that_cannot_be_opened_is_one_write_error(tmp_path: Path) -> None:
    """A journal whose directory is a file: one ArtifactWriteError naming the journal."""
    (tmp_path / "blocker").write_text("", encoding="utf-8")
    path = tmp_path / "blocker" / "j.jsonl"
    with pytest.raises(
        ArtifactWriteError, match=r"j\.jsonl: cannot write \(file exists\)$"
    ):
        JournalWriter(path)


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 2 MiB tmpfs, or a skip that says why one cannot be mounted here."""
    mount = shutil.which("mount")
    if mount is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("a real tmpfs needs root and mount(8); the fakes above cover it")
    point = tmp_path / f"tmpfs-{uuid.uuid4().hex[:8]}"
    point.mkdir()
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"mount -t tmpfs refused here: {done.stderr.strip()[:120]}")
    try:
        yield point
    finally:
        subprocess.run(["umount", str(point)], check=False)


def test_real_full_tmpfs_journal_and_history(tiny_tmpfs: Path) -> None:
    """On a full 2 MiB tmpfs: journal keeps whole lines, history leaves no torn file."""
    journal = tiny_tmpfs / f"{KEY}_journal.jsonl"
    written = 0
    with JournalWriter(journal) as writer, pytest.raises(ArtifactWriteError) as info:
        writer.run_start(metadata())
        for i in range(100_000):
            writer.case(record(sample=i, detail="x" * 200))
            written += 1
    assert str(info.value) == f"{journal}: {ENOSPC_WORDS}"
    contents = read_journal(journal)
    assert len(contents.records) == written > 0
    assert not contents.truncated_tail
    with pytest.raises(ArtifactWriteError, match=re.escape(ENOSPC_WORDS)):
        write_history(tiny_tmpfs, KEY, _artifact(5000))
    assert _names(history_dir(tiny_tmpfs, KEY)) == []
    assert load_result(journal).records[-1].sample == written - 1


def test_history_is_on_disk_before_its_name_and_the_name_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_once: fsync the temp file, link the final name, then fsync the folder."""
    events: list[str] = []
    real_fsync, real_link = os.fsync, os.link

    def fsync(fd: int) -> None:
        events.append("fsync-dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync")
        real_fsync(fd)

    def link(src: Any, dst: Any) -> None:
        events.append(f"link {Path(dst).name}")
        real_link(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)
    write_once(tmp_path / "a.json", "{}\n")
    assert events == ["fsync", "link a.json", "fsync-dir"]
    events.clear()
    write_atomic(tmp_path / "b.json", "{}\n")
    assert events == ["fsync", "fsync-dir"]
    assert _names(tmp_path) == ["a.json", "b.json"]
