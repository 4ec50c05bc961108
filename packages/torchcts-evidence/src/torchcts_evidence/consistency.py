"""An archive must not contradict itself: the journal and the crash records it carries
tell the same story as the result `verify` loads.

The runner appends every finished case to the journal before it is counted, and the
final result is the journal's last record of each case (a resumed or retried case's
later line replaces its earlier one, as `torchcts_schema.read_journal` reads it: the
runner's resume reads it the same way). So a result whose statuses differ from its
own journal's was altered after the run, even when its digest, counts and
``SUBMISSION.json`` were recomputed to match; so is a journal cut short whose run
ended normally. Likewise a crashed case's record names
its crash record (``crash.evidence``), which the archive must hold.

One pass over the journal and one over the result; nothing else is read.
"""

from __future__ import annotations

from collections.abc import Container
from pathlib import Path

from torchcts_schema import (
    ArtifactError,
    JournalContents,
    RunArtifact,
    Status,
    read_journal,
)

from torchcts_evidence.submission_schema import RESULTS_PREFIX

# what a hostile journal line can raise past the schema's reader (deep nesting,
# odd values in a block); each is "this journal is broken", one problem
_MALFORMED = (RecursionError, ValueError, TypeError, KeyError, AttributeError)


def journal_findings(
    path: Path, journal: str, artifact: RunArtifact, result: str, *, compare: bool
) -> tuple[list[str], list[str]]:
    """Problems and notes about the journal at `path` (member `journal`) of the
    result loaded from member `result`.

    Problems: a journal that cannot be read, one of another run, or (with `compare`)
    the first case whose status differs. The journal's reader stops quietly at a
    last line cut short, which only a kill mid-write leaves (the runner's
    ``--resume`` repairs it): of a run its result says completed normally, that cut
    is a problem, as the run wrote its last line whole before it ended; of an
    interrupted run it is a note. A journal cut at a line break loses its run_end
    line whole: of a completed run, a problem too.
    """
    try:
        contents = read_journal(path)
    except ArtifactError as exc:
        return [f"{journal}: {exc.problem}"], []
    except _MALFORMED as exc:
        return [f"{journal}: malformed journal ({type(exc).__name__}: {exc})"], []
    problems = _disagreement(contents, journal, artifact, result) if compare else []
    if not contents.truncated_tail:
        if artifact.metadata.completed_normally and not contents.ended:
            problems.append(
                f"{journal}: it has no run_end line, but {result} says the run "
                "completed normally (the journal was cut after the run)"
            )
        return problems, []
    if artifact.metadata.completed_normally:
        problems.append(
            f"{journal}: its last line is cut off, but {result} says the run "
            "completed normally (the journal was cut after the run)"
        )
        return problems, []
    note = (
        f"{journal}: its last line is cut off (the run was interrupted mid-write; "
        "--resume repairs it)"
    )
    return problems, [note]


def _disagreement(
    contents: JournalContents, journal: str, artifact: RunArtifact, result: str
) -> list[str]:
    meta = contents.metadata
    mine = artifact.metadata
    if meta is None:
        return [
            f"{journal}: no run_start line, so it cannot be the journal of {result}"
        ]
    if (meta.run_key, meta.started_at) != (mine.run_key, mine.started_at):
        return [
            f"{journal}: the journal of another run ({meta.run_key!r} started "
            f"{meta.started_at!r}) than {result} ({mine.run_key!r} started "
            f"{mine.started_at!r})"
        ]
    logged = {case_id: r.status.value for case_id, r in contents.records.items()}
    differ: list[str] = []
    for record in artifact.records:
        status = logged.pop(record.case_id, None)
        if status is None:
            differ.append(
                f"case {record.case_id!r} is {record.status.value} in {result} but "
                "absent from the journal"
            )
        elif status != record.status.value:
            differ.append(
                f"case {record.case_id!r} is {status} in the journal but "
                f"{record.status.value} in {result}"
            )
    differ += [
        f"case {case_id!r} is {status} in the journal but absent from {result}"
        for case_id, status in logged.items()
    ]
    if not differ:
        return []
    more = f" ({len(differ)} cases differ)" if len(differ) > 1 else ""
    return [f"{journal}: {differ[0]}{more}"]


def evidence_problems(
    artifact: RunArtifact, members: Container[str], result: str
) -> list[str]:
    """One line per crashed case whose crash record (``crash.evidence``, relative to
    ``results/``) the archive does not hold."""
    problems = []
    for record in artifact.results:
        if record.status is not Status.CRASHED or record.crash is None:
            continue
        evidence = record.crash.evidence
        if isinstance(evidence, str) and RESULTS_PREFIX + evidence not in members:
            problems.append(
                f"{result}: case {record.case_id!r} names its crash record "
                f"{RESULTS_PREFIX + evidence!r}, which the archive does not hold"
            )
    return problems
