"""The append-only journal: one JSON line per finished case, on disk before the next starts.

Only the controller process writes it. Each line carries a ``type`` tag (``run_start``,
``case``, ``case_block``, ``diagnostic``, ``run_end``) so readers can skip what they do not know. A line
cut short by a kill is tolerated at the end of the file and repaired before appending.
A case line leaves out the keys whose value is the one a missing key reads as
(`line_record`), so the line holds what the case did, not twenty field names.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_schema import codec
from torchcts_schema.atomic import write_all
from torchcts_schema.errors import ArtifactError, ArtifactWriteError
from torchcts_schema.integrity import check_block
from torchcts_schema.layout import ResultsLayout
from torchcts_schema.records import CaseRecord, JsonDict, RunMetadata


def journal_path(results_dir: Path, run_key: str) -> Path:
    """Where the journal of a run key lives."""
    return ResultsLayout(results_dir, run_key).journal


class JournalWriter:
    """Appends typed lines; `fsync=True` also survives power loss, at a per-case cost.

    Each line goes to the OS in one ``os.write`` of the whole line, so a failed write
    (a full disk) leaves at most a partial last line; the writer then cuts the file
    back to its last complete line and raises `ArtifactWriteError`. Every line
    appended before stays readable.
    """

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self._fsync = fsync
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _drop_partial_tail(path)
            self._fd: int | None = os.open(
                path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
            )
            self._size = os.fstat(self._fd).st_size
        except OSError as exc:
            raise ArtifactWriteError(path, exc) from None

    def append(self, line_type: str, payload: JsonDict) -> None:
        """Write one line and push it to the OS before returning."""
        if self._fd is None:
            raise ValueError(f"{self.path}: journal writer is closed")
        text = json.dumps({"type": line_type, **payload}, separators=(",", ":"))
        data = (text + "\n").encode("utf-8")
        try:
            write_all(self._fd, data)
            if self._fsync:
                os.fsync(self._fd)
        except OSError as exc:
            # a partial line would be repaired by the next reader anyway; cutting it
            # now keeps the file a whole number of lines for a writer that retries
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            raise ArtifactWriteError(self.path, exc) from None
        self._size += len(data)

    def run_start(self, metadata: RunMetadata, *, resumed: bool = False) -> None:
        """Mark the start (or resumption) of a run with its metadata."""
        self.append("run_start", {"resumed": resumed, "metadata": metadata.to_dict()})

    def case(self, record: CaseRecord) -> None:
        """Record one finished case (`line_record`: its nulls and defaults left out)."""
        self.append("case", {"record": line_record(record)})

    def case_block(self, records: list[CaseRecord]) -> None:
        """Record many cases in one compact line (selection's not_run accounting).

        A full OpInfo universe has hundreds of thousands of not_run records; one line
        per record would make the journal hundreds of megabytes.
        """
        if records:
            self.append("case_block", {"records": codec.encode_records(records)})

    def diagnostic(self, name: str, value: Any) -> None:
        """Record run-level diagnostics (probe counts, oracle failures)."""
        self.append("diagnostic", {"name": name, "value": value})

    def run_end(self, metadata: RunMetadata) -> None:
        """Mark a completed run with its final metadata."""
        self.append("run_end", {"metadata": metadata.to_dict()})

    def close(self) -> None:
        """Close the file; safe to call twice."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# what `CaseRecord.from_dict` makes of a key a line leaves out, field by field
_BARE = CaseRecord.from_dict({"case_id": "", "status": "passed"})
_WHEN_ABSENT = {
    name: getattr(_BARE, name)
    for name in codec.FIELD_NAMES
    if name not in ("case_id", "status")  # required: always written
}


def line_record(record: CaseRecord) -> JsonDict:
    """`record.to_dict()` less every key whose value, type included, is what
    `CaseRecord.from_dict` gives for a missing one (null, ``"opinfo"``, level 1,
    an empty ``extra``...): reading the line gives back the same record. Nulls
    and defaults were a quarter of a level-4 journal (about 200 of 750 bytes a
    case)."""
    return {
        name: value
        for name, value in record.to_dict().items()
        if name not in _WHEN_ABSENT
        or type(value) is not type(default := _WHEN_ABSENT[name])
        or value != default
    }


@dataclass
class JournalContents:
    """What a journal says: latest metadata, last record per case, diagnostics."""

    metadata: RunMetadata | None = None
    records: dict[str, CaseRecord] = field(default_factory=dict)
    diagnostics: JsonDict = field(default_factory=dict)
    case_lines: int = 0
    ended: bool = False
    truncated_tail: bool = False


# The longest line a reader takes, newline included. The writer's longest is the
# selection's case_block (about 21 bytes a not_run record: a level-4 run's 26,445
# make 0.55 MB, all of OpInfo's half a million samples about 11 MB); anything past
# this was not written by TorchCTS and is refused before it is held whole.
MAX_JOURNAL_LINE_BYTES = 128 * 2**20


class JournalLines:
    """A journal's lines as JSON objects, in order: the one parser of journal lines.

    Every reader goes through it, so each refuses the same lines: a line cut short at
    the very end (a kill mid-write) ends the iteration and sets `truncated_tail`; any
    other line that is not a JSON object with a ``type`` tag raises `ArtifactError`
    naming the file and the line (numbered among non-blank lines), and so does a line
    longer than `MAX_JOURNAL_LINE_BYTES`. The file is read line by line as it is
    iterated (a journal may be gigabytes), decoded as text mode decodes it, and its
    lines are split as ``str.splitlines`` splits them.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.truncated_tail = False

    def __iter__(self) -> Iterator[tuple[int, JsonDict]]:
        number = 0
        for piece, last in self._pieces():
            if len(piece) > MAX_JOURNAL_LINE_BYTES:
                raise ArtifactError(
                    self.path,
                    f"line {number + 1} is longer than {MAX_JOURNAL_LINE_BYTES} "
                    "bytes (not a line TorchCTS writes)",
                )
            if not piece.strip():
                continue
            number += 1
            try:
                line = json.loads(piece)
            except json.JSONDecodeError as exc:
                if last and not piece.endswith("\n"):
                    self.truncated_tail = True
                    return
                raise ArtifactError(
                    self.path, f"line {number} is not valid JSON ({exc.msg})"
                ) from None
            except RecursionError:
                raise ArtifactError(
                    self.path, f"line {number} is not valid JSON (nested too deeply)"
                ) from None
            if not isinstance(line, dict) or "type" not in line:
                raise ArtifactError(self.path, f"line {number} has no 'type' tag")
            yield number, line

    def _pieces(self) -> Iterator[tuple[str, bool]]:
        """Each line with whether it is the file's last, one line held at a time. A
        line past the limit is read only one character past it and yielded whole,
        unsplit, as the last thing the caller sees (it refuses it)."""
        pending: str | None = None
        try:
            with open(self.path, encoding="utf-8") as fh:
                while chunk := fh.readline(MAX_JOURNAL_LINE_BYTES + 1):
                    if len(chunk) > MAX_JOURNAL_LINE_BYTES:
                        if pending is not None:
                            yield pending, False
                        yield chunk, False
                        return
                    for piece in chunk.splitlines(keepends=True):
                        if pending is not None:
                            yield pending, False
                        pending = piece
        except OSError as exc:
            raise ArtifactError(
                self.path, f"cannot read journal ({exc.strerror})"
            ) from None
        except UnicodeDecodeError:
            raise ArtifactError(self.path, "journal is not UTF-8 text") from None
        if pending is not None:
            yield pending, True


def read_journal(path: Path) -> JournalContents:
    """Parse a journal; a corrupt middle line is an error naming its line number."""
    contents = JournalContents()
    lines = JournalLines(path)
    for number, line in lines:
        try:
            _apply(contents, line)
        except ArtifactError as exc:
            raise ArtifactError(path, f"line {number}: {exc.problem}") from None
        except (KeyError, TypeError) as exc:
            raise ArtifactError(
                path, f"line {number}: malformed {line['type']} line ({exc})"
            ) from None
    contents.truncated_tail = lines.truncated_tail
    return contents


def _apply(contents: JournalContents, line: JsonDict) -> None:
    kind = line["type"]
    if kind == "case":
        record = CaseRecord.from_dict(line["record"])
        contents.records.pop(record.case_id, None)  # a re-run moves to the end
        contents.records[record.case_id] = record
        contents.case_lines += 1
    elif kind == "case_block":
        check_block(line["records"])
        for record in codec.decode_records(line["records"]):
            contents.records.pop(record.case_id, None)
            contents.records[record.case_id] = record
            contents.case_lines += 1
    elif kind == "run_start":
        contents.metadata = RunMetadata.from_dict(line["metadata"])
        contents.ended = False
    elif kind == "run_end":
        contents.metadata = RunMetadata.from_dict(line["metadata"])
        contents.ended = True
    elif kind == "diagnostic":
        contents.diagnostics[line["name"]] = line["value"]
    # unknown types are skipped on purpose: newer writers may add them


def _drop_partial_tail(path: Path) -> None:
    """Cut a half-written last line (a kill mid-write) so new lines start clean;
    only the tail is read, back to the last newline."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as fh:
        end = fh.seek(0, os.SEEK_END)
        fh.seek(end - 1)
        if fh.read(1) == b"\n":
            return
        stop = end  # the window [start, stop) is read, back from the end
        while stop > 0:
            start = max(0, stop - _TAIL_CHUNK)
            fh.seek(start)
            cut = fh.read(stop - start).rfind(b"\n")
            if cut >= 0:
                fh.truncate(start + cut + 1)
                return
            stop = start
        fh.truncate(0)


_TAIL_CHUNK = 2**16
