"""A journal is read line by line: never held whole, a line past the limit refused by
its number, and every other line read exactly as the whole-file reader read it (a
frozen copy of that reader is the reference)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from schema_factories import metadata, record
from torchcts_schema import (
    ArtifactError,
    JournalLines,
    JournalWriter,
    journal_path,
    read_journal,
)
from torchcts_schema import journal as journal_module

KEY = "simdev_x86-64-2cpu-24gb"
MIB = 2**20


def _reference_lines(path: Path) -> tuple[list[tuple[int, Any]], bool]:
    """The reader before streaming (frozen): the whole text, split by splitlines."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError:
        raise ArtifactError(path, "journal is not UTF-8 text") from None
    pieces = text.splitlines(keepends=True)
    number, out = 0, []
    for index, piece in enumerate(pieces):
        if not piece.strip():
            continue
        number += 1
        try:
            line = json.loads(piece)
        except json.JSONDecodeError as exc:
            if index == len(pieces) - 1 and not piece.endswith("\n"):
                return out, True
            raise ArtifactError(
                path, f"line {number} is not valid JSON ({exc.msg})"
            ) from None
        if not isinstance(line, dict) or "type" not in line:
            raise ArtifactError(path, f"line {number} has no 'type' tag")
        out.append((number, line))
    return out, False


def _outcome(read: Callable[[Path], Any], path: Path) -> Any:
    try:
        return read(path)
    except ArtifactError as exc:
        return ("error", str(exc))


def _streamed(path: Path) -> tuple[list[tuple[int, Any]], bool]:
    lines = JournalLines(path)
    return list(lines), lines.truncated_tail


A = '{"type":"diagnostic","name":"a","value":1}'
B = '{"type":"diagnostic","name":"b","value":"x"}'
SHAPES = {
    "plain": f"{A}\n{B}\n",
    "no final newline": f"{A}\n{B}",
    "torn tail": f'{A}\n{B}\n{{"type":"case","rec',
    "torn tail after blank lines": f'{A}\n\n  \n{{"type":"ca',
    "blank tail after a bad line": f"{A}\n{{bad\n   ",
    "bad middle line": f"{A}\n{{bad\n{B}\n",
    "crlf": f"{A}\r\n{B}\r\n",
    "cr alone": f"{A}\r{B}\r{{torn",
    "cr at the very end of a torn line": f"{A}\n{{torn\r",
    "unicode separators": f"{A}\u2028{B}\x1c\n{A}\x85{{torn",
    "separator ending a bad last line": f"{A}\n{{bad\u2029",
    "no type tag": f"{A}\n[1, 2]\n",
    "only blanks": "\n \n\t\n",
    "empty": "",
    "not utf-8": None,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_lines_are_read_as_the_whole_file_reader_read_them(
    tmp_path: Path, shape: str
) -> None:
    """Torn tails, blank lines, bad lines, CR/CRLF and every splitlines separator:
    the streamed lines, numbers, tail flag and errors equal the frozen reader's."""
    path = tmp_path / f"{KEY}_journal.jsonl"
    text = SHAPES[shape]
    if text is None:
        path.write_bytes(A.encode() + b"\n\xff\xfe\n" + B.encode() + b"\n")
    else:
        path.write_bytes(text.encode("utf-8"))
    assert _outcome(_streamed, path) == _outcome(_reference_lines, path)


def test_a_line_past_the_limit_is_refused_by_its_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line longer than the limit is one error naming the file and the line, wherever
    it is (even last and unterminated, where a torn line is tolerated, and even with a
    separator early in it); a line at the limit is read."""
    monkeypatch.setattr(journal_module, "MAX_JOURNAL_LINE_BYTES", 4096)
    path = journal_path(tmp_path, KEY)
    with JournalWriter(path) as journal:
        journal.run_start(metadata())
        journal.case(record(sample=0))
    head = path.read_text()
    at_limit = json.dumps({"type": "diagnostic", "name": "n", "value": ""})
    filler = "v" * (4095 - len(at_limit))
    at_limit = at_limit.replace('""', f'"{filler}"')
    assert len(at_limit + "\n") == 4096
    path.write_text(head + "\n" + at_limit + "\n")
    assert read_journal(path).diagnostics["n"] == filler
    expected = f"{path}: line 4 is longer than 4096 bytes (not a line TorchCTS writes)"
    for long_line in (
        "x" * 5000 + "\n" + B + "\n",
        '{"type":"case","record":{"case_id":"' + "y" * 5000,  # last, unterminated
        "{\u2028" + "z" * 5000 + "\n",
    ):
        path.write_text(head + "\n" + at_limit + "\n" + long_line)
        with pytest.raises(ArtifactError) as refused:
            read_journal(path)
        assert str(refused.value) == expected


def _peak(action: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_large_journal_is_never_held_whole(tmp_path: Path) -> None:
    """Reading a 16 MiB journal, and opening it to append after a torn line, holds a
    few lines at a time (the whole-file reader held the text twice over)."""
    path = journal_path(tmp_path, KEY)
    value = "d" * 1000
    with JournalWriter(path) as journal:
        journal.run_start(metadata())
        for i in range(16 * MIB // 1040):
            journal.diagnostic(f"d{i % 8}", value)
    with path.open("a") as fh:
        fh.write('{"type":"case","record":{"case_id":"torn' + "t" * 100_000)
    size = path.stat().st_size
    assert size > 16 * MIB
    assert _peak(lambda: read_journal(path)) < MIB
    assert read_journal(path).truncated_tail
    assert _peak(lambda: JournalWriter(path).close()) < MIB
    assert path.stat().st_size == size - 100_040
    assert not read_journal(path).truncated_tail
