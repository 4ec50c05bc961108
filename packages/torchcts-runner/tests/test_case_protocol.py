"""A case item's one-pass protocol shows plugins what pytest's own protocol shows.

Each run below records what every plugin is shown (logstart, the three reports with
their outcome, text, captured output, keywords and properties, logfinish) and
compares it with the same run under pytest's own protocol, which a conftest that
takes part in the setup phase forces (`case_protocol` steps aside for any plugin it
does not know).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from runner_helpers import run_args, use_fake_source, write_manifest

OPS = ["ok", "wrong", "skip", "oracle", "boom", "chatty", "chattywrong", "threadraise"]

SPY = """
import json

EVENTS = []
STACKED = []  # in the executing process: was the case on pytest's setup stack?
SESSION = []

def pytest_sessionstart(session):
    SESSION.append(session)

def pytest_runtest_logstart(nodeid, location):
    EVENTS.append(["start", nodeid, list(location)])

def pytest_runtest_logreport(report):
    if report.when == "call":
        STACKED.append(report.nodeid in [n.nodeid for n in SESSION[0]._setupstate.stack])
    EVENTS.append([
        "report", report.nodeid, report.when, report.outcome,
        None if report.longrepr is None else str(report.longrepr),
        [list(s) for s in report.sections], sorted(report.keywords),
        [p[0] for p in report.user_properties], list(report.location),
    ])

WARNINGS = []

def pytest_warning_recorded(warning_message, when, nodeid, location):
    WARNINGS.append([nodeid, when, warning_message.category.__name__])

def pytest_runtest_logfinish(nodeid, location):
    EVENTS.append(["finish", nodeid])

def pytest_sessionfinish(session):
    from torchcts_runner.case_protocol import lean_protocol_applies
    who = getattr(session.config, "workerinput", {}).get("workerid", "main")
    with open(f"spy-{who}.json", "w") as fh:
        json.dump({"lean": lean_protocol_applies(session.config), "events": EVENTS,
                   "stacked": STACKED, "warnings": WARNINGS}, fh)
"""

FOREIGN_SETUP = """
def pytest_runtest_setup(item):
    pass
"""


def _run(pytester: pytest.Pytester, *, foreign: bool, workers: int) -> dict[str, Any]:
    pytester.makeconftest(SPY + (FOREIGN_SETUP if foreign else ""))
    for old in pytester.path.glob("spy-*.json"):
        old.unlink()
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    assert result.ret == 1, result.stdout.str()  # some cases fail
    return {
        p.stem.removeprefix("spy-"): json.loads(p.read_text())
        for p in pytester.path.glob("spy-*.json")
    }


def _by_case(events: list[list[Any]]) -> dict[str, list[list[Any]]]:
    """Each case's events in order (workers interleave cases differently)."""
    out: dict[str, list[list[Any]]] = {}
    for event in events:
        out.setdefault(event[1], []).append(event)
    return out


@pytest.mark.parametrize("workers", [0, 2])
def test_plugins_see_what_pytests_own_protocol_shows(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    use_fake_source(pytester, monkeypatch)
    write_manifest(pytester, OPS)
    lean = _run(pytester, foreign=False, workers=workers)
    full = _run(pytester, foreign=True, workers=workers)
    executing = ["gw0", "gw1"] if workers else ["main"]
    assert all(lean[w]["lean"] for w in executing)
    assert not any(full[w]["lean"] for w in executing)
    # one pass: never on pytest's setup stack; pytest's protocol: always
    assert sum(len(lean[w]["stacked"]) for w in executing) == len(OPS)
    assert not any(any(lean[w]["stacked"]) for w in executing)
    assert all(all(full[w]["stacked"]) for w in executing)
    events = lean["main"]["events"]
    cases = _by_case(events)
    assert cases == _by_case(full["main"]["events"])
    assert len(cases) == len(OPS)
    for case in cases.values():
        kinds = [e[0] if e[0] != "report" else e[2] for e in case]
        assert kinds == ["start", "setup", "call", "teardown", "finish"]
    reports = [e for e in events if e[0] == "report"]
    calls = {r[1].split("/")[1]: r for r in reports if r[2] == "call"}
    assert {op: calls[op][3] for op in OPS} == {
        "ok": "passed",
        "wrong": "failed",
        "skip": "skipped",
        "oracle": "skipped",  # not_run: no reference
        "boom": "failed",
        "chatty": "passed",
        "chattywrong": "failed",
        "threadraise": "passed",
    }
    assert "values differ" in calls["wrong"][4]
    for op in ("chatty", "chattywrong"):  # its output is the call's, wherever it ran
        sections = dict(map(tuple, calls[op][5]))
        assert "chatty stdout" in sections["Captured stdout call"]
        assert "chatty fd2" in sections["Captured stderr call"]
    assert all(r[7] == [] for r in reports if r[2] == "teardown")  # no second copy
    # a thread's exception during a case is that case's warning, in both protocols
    thread_warnings = [w for w in lean["main"]["warnings"] if "ThreadException" in w[2]]
    assert thread_warnings == [
        w for w in full["main"]["warnings"] if "ThreadException" in w[2]
    ]
    assert [w[:2] for w in thread_warnings] == [[calls["threadraise"][1], "runtest"]]


def test_a_case_with_a_mark_gets_pytests_protocol(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mark added to a case item (a conftest's) may mean something to pytest's
    phases: that item runs as pytest runs it (set up on pytest's setup stack while
    its call is reported), the unmarked ones in one pass (never on it)."""
    use_fake_source(pytester, monkeypatch)
    write_manifest(pytester, ["ok", "wrong"])
    pytester.makeconftest(
        """
import pytest

SESSION = []

def pytest_sessionstart(session):
    SESSION.append(session)

def pytest_collection_modifyitems(items):
    for item in items:
        if "/ok/" in item.nodeid:
            item.add_marker(pytest.mark.anything)

def pytest_runtest_logreport(report):
    if report.when == "call":
        stack = [n.nodeid for n in SESSION[0]._setupstate.stack]
        with open("seen.txt", "a") as fh:
            fh.write(f"{report.nodeid.split('/')[1]} {report.nodeid in stack}\\n")
"""
    )
    result = pytester.runpytest_subprocess(*run_args())
    seen_file = pytester.path / "seen.txt"
    assert seen_file.exists(), result.stdout.str() + result.stderr.str()
    assert seen_file.read_text().splitlines() == ["ok True", "wrong False"]
