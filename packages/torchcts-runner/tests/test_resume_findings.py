"""What --resume makes of the previous attempt's unrecorded starts: crash evidence
outranks an interrupted list (the journal keeps its latest one, maybe an older
session's), and a stuck attempt adopts only the case it was running."""

from __future__ import annotations

from pathlib import Path

from torchcts_runner.crash_evidence import fault_path
from torchcts_runner.resume import INTERRUPTED, adopt_stuck_attempt, inspect_previous
from torchcts_runner.runlog import RunLog
from torchcts_schema import JournalContents

Y = "torchcts::fake/y/forward/float32/0"
SEGFAULT = (
    "Fatal Python error: Segmentation fault\n\n"
    "Current thread 0x1 (most recent call first):\n"
    '  File "k.py", line 1 in run_on\n'
)


def _attempt(tmp_path: Path, *starts: tuple[str, str]) -> tuple[Path, Path]:
    runlog, scratch = tmp_path / "k_runlog.txt", tmp_path / "scratch"
    scratch.mkdir()
    log = RunLog(runlog)
    for node_id, worker in starts:
        log.start(node_id, worker)
    log.close()
    return runlog, scratch


def test_a_case_an_old_interrupted_list_names_that_died_since_is_crashed(
    tmp_path: Path,
) -> None:
    """Ctrl-C during Y, a resume in which Y segfaults: the next resume records Y
    crashed from its dump (it reran Y, blaming nothing, on every resume)."""
    runlog, scratch = _attempt(tmp_path, (Y, "main"))
    prior = JournalContents(diagnostics={INTERRUPTED: [Y]})
    path = fault_path(scratch, "main")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SEGFAULT)
    found = inspect_previous(prior, runlog, scratch)
    assert [c[0] for c in found.crashed] == ["fake/y/forward/float32/0"]
    assert found.rerun == [] and found.retry == []
    path.unlink()  # no evidence: the list still means run again, blaming nothing
    found = inspect_previous(prior, runlog, scratch)
    assert found.rerun == ["fake/y/forward/float32/0"] and found.crashed == []


def test_a_stuck_attempt_adopts_only_its_latest_start(tmp_path: Path) -> None:
    """An earlier session's worker start without a record keeps its own finding."""
    older = "torchcts::fake/x/forward/float32/0"
    runlog, _ = _attempt(tmp_path, (older, "gw0"), (Y, "main"))
    prior = JournalContents()
    assert adopt_stuck_attempt(prior, runlog) == {Y: "main"}
    assert prior.diagnostics[INTERRUPTED] == [Y]
