"""Marks a conftest adds to case items (how backend engineers skip ops they know are
broken) run as pytest runs them, and never make a case look better than it was: a
skipped case did not execute and says the user's reason, an xfail does not turn a
wrong value into a pass or a skip, with and without xdist."""

from __future__ import annotations

import pytest
from runner_helpers import artifact_records, run_args, use_fake_source, write_manifest
from torchcts_schema import Status

MARKS = """
import pytest

MARKS = {
    "ok": pytest.mark.skip(reason="BUG-1 broken on our backend"),
    "chatty": pytest.mark.skipif(True, reason="BUG-2 not ported yet"),
    "wrong": pytest.mark.xfail(reason="BUG-3 known wrong"),
    "boom": pytest.mark.xfail(run=False, reason="BUG-4 hangs the driver"),
}

def pytest_collection_modifyitems(items):
    for item in items:
        op = item.nodeid.split("/")[1]
        if op in MARKS:
            item.add_marker(MARKS[op])
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_marks_added_by_a_conftest_keep_results_honest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A skip or skipif mark: skipped with the user's reason (no host path), never
    passed; a failing case under xfail: failed in the results and for pytest; an
    xfail that does not run the case: skipped with its reason."""
    use_fake_source(pytester, monkeypatch)
    write_manifest(pytester, ["ok", "chatty", "wrong", "boom"])
    pytester.makeconftest(MARKS)
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out
    assert result.ret == 1, out  # a wrong value fails the session, xfail or not
    result.stdout.fnmatch_lines(["*= 1 failed, 2 skipped, 1 xfailed in *"])
    records = {r.op: r for r in artifact_records(pytester.path / "results").values()}
    assert {op: r.status for op, r in records.items()} == {
        "ok": Status.SKIPPED,
        "chatty": Status.SKIPPED,
        "wrong": Status.FAILED,
        "boom": Status.SKIPPED,
    }
    reasons = {op: records[op].detail or "" for op in ("ok", "chatty", "boom")}
    assert reasons == {
        "ok": "skipped before the case ran: BUG-1 broken on our backend",
        "chatty": "skipped before the case ran: BUG-2 not ported yet",
        "boom": "skipped before the case ran: [NOTRUN] BUG-4 hangs the driver",
    }
    assert records["wrong"].mismatch  # the wrong value itself, as without the mark
    report = next((pytester.path / "results").glob("*.md")).read_text()
    assert "BUG-1 broken on our backend" in report
