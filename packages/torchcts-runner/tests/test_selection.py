"""Selection: node ids without a test file, -k, --dtype and shards; what is left out
is accounted for as not_run, never silently dropped (fake case source)."""

from __future__ import annotations

import pytest
from runner_helpers import artifact_records, run_args, use_fake_source, write_manifest
from torchcts_runner.defaults import DEFAULT_CASE_TIMEOUT_S
from torchcts_schema import NotRunReason, Status, load_result


@pytest.fixture(autouse=True)
def _fake(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_source(pytester, monkeypatch)


@pytest.mark.parametrize("workers", [0, 2])
def test_node_ids_k_and_dtype_select_and_account(
    pytester: pytest.Pytester, workers: int
) -> None:
    """A node id argument and -k pick cases; --dtype filters; the rest is counted as
    outside the selection (a subset run records only what it selected)."""
    write_manifest(
        pytester, ["ok", "wrong", "slow"], DTYPES={"float32": True, "float64": True}
    )
    result = pytester.runpytest_subprocess(
        *run_args("--dtype", "float32", "-k", "ok or wrong", workers=workers),
        "torchcts::fake/ok/forward/float32/0", "torchcts::fake/wrong/forward/float32/0",
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()
    results = pytester.path / "results"
    # a subset run writes its own results folder, never the full run's files
    (folder,) = (results / "selections").iterdir()
    assert not list(results.glob("*_latest.json"))
    records = artifact_records(folder)
    assert records["fake/ok/forward/float32/0"].status is Status.PASSED
    assert records["fake/wrong/forward/float32/0"].status is Status.FAILED
    assert set(records) == {
        "fake/ok/forward/float32/0",
        "fake/wrong/forward/float32/0",
    }
    # slow (by -k) and the float64 cases (by --dtype): 4 of the 6, counted
    outside = load_result(folder).metadata.outside
    assert outside == {NotRunReason.FILTERED_BY_SELECTION.value: 4}


@pytest.mark.parametrize("workers", [0, 2])
def test_a_k_selection_completes(pytester: pytest.Pytester, workers: int) -> None:
    """The cases -k deselects are counted outside the run, so the run is complete
    without their records: nothing is left for --resume (it was "run incomplete: 2
    planned case(s) without a record", and torchcts-run exited 3)."""
    write_manifest(pytester, ["ok", "wrong", "slow"])
    result = pytester.runpytest_subprocess(*run_args("-k", "ok", workers=workers))
    assert result.ret == 0, result.stdout.str()
    (folder,) = (pytester.path / "results" / "selections").iterdir()
    assert set(artifact_records(folder)) == {"fake/ok/forward/float32/0"}
    metadata = load_result(folder).metadata
    assert metadata.outside == {NotRunReason.FILTERED_BY_SELECTION.value: 2}
    assert metadata.completed_normally
    result.stdout.no_fnmatch_line("*incomplete*")


@pytest.mark.parametrize("workers", [0, 2])
def test_a_selection_the_source_cannot_make_is_a_usage_line(
    pytester: pytest.Pytester, workers: int
) -> None:
    """The source's ValueError for an unknown suite (or dtype, level) is one usage
    line, exit 4, nothing written: it was a traceback and "the run ended
    abnormally ... continue with --resume"."""
    write_manifest(pytester, ["ok"])
    result = pytester.runpytest_subprocess(
        *run_args("--torchcts-suite", "bogus", workers=workers)
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown suite 'bogus' (known: fake)*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "results").exists()


@pytest.mark.parametrize("workers", [0, 2])
def test_unknown_node_id_is_a_usage_error(
    pytester: pytest.Pytester, workers: int
) -> None:
    """A node id that names no case of the manifest is an error, not silence."""
    write_manifest(pytester, ["ok"])
    result = pytester.runpytest_subprocess(
        *run_args(workers=workers), "torchcts::fake/nope/forward/float32/0"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*torchcts::fake/nope/forward/float32/0*not a case*"])


def test_workers_run_the_controllers_plan_without_selecting(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under xdist only the controller selects; every worker collects its plan."""
    log = pytester.path / "selects.txt"
    monkeypatch.setenv("FAKE_SELECT_LOG", str(log))
    write_manifest(pytester, ["ok", "wrong", "segv", "ok2"], DTYPES={"float32": True})
    result = pytester.runpytest_subprocess(*run_args(workers=2))
    assert result.ret == 1, result.stdout.str()
    assert len(log.read_text().split()) == 1  # not once more per (replaced) worker
    records = artifact_records(pytester.path / "results")
    assert records["fake/ok2/forward/float32/0"].status is Status.PASSED
    assert records["fake/segv/forward/float32/0"].status is Status.CRASHED
    assert not list((pytester.path / "results").glob(".*_scratch/plan-*.json"))


def test_case_source_plugs_in_through_its_entry_point(
    pytester: pytest.Pytester,
) -> None:
    """A case source named by a ``torchcts.case_sources`` entry point is loaded by
    that name, like a backend; an unknown name is a usage error naming it."""
    dist = pytester.path / "fake_source-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-source\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[torchcts.case_sources]\nfake = fakecases\n"
    )
    write_manifest(pytester, ["ok"])
    args = [a for a in run_args() if a != "fakecases"]
    at = args.index("--torchcts-case-source")
    args[at + 1 : at + 1] = ["fake"]
    pytester.syspathinsert(pytester.path)
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0, result.stdout.str()
    assert artifact_records(pytester.path / "results")["fake/ok/forward/float32/0"]
    args[at + 1] = "no_such_source"
    missing = pytester.runpytest_subprocess(*args)
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*no_such_source*"])


@pytest.mark.parametrize(
    ("flag", "value", "closest"),
    [
        ("--op", "wromg", "wrong"),
        ("--dtype", "float23", "float32"),
        ("--suite", "fak", "fake"),
    ],
)
def test_a_filter_that_matches_nothing_is_an_error_naming_the_closest(
    pytester: pytest.Pytester, flag: str, value: str, closest: str
) -> None:
    """--op/--dtype/--suite matching nothing: usage error before any case, with the
    closest names; results/ is not touched."""
    write_manifest(pytester, ["ok", "wrong"], DTYPES={"float32": True})
    result = pytester.runpytest_subprocess(*run_args(flag, value))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*{flag} {value!r} matches nothing*closest*{closest}*"]
    )
    assert not (pytester.path / "results").exists()


_COLLECTION_SPY = """
import _pytest.fixtures
import pytest
from pathlib import Path

LOG = Path(__file__).parent / "spy.txt"
_reorder = _pytest.fixtures.reorder_items


def _note(line):
    with LOG.open("a") as f:
        f.write(line + "\\n")


def _spy(items):
    _note("fixture reorder")
    return _reorder(items)


_pytest.fixtures.reorder_items = _spy


def pytest_collection_modifyitems(items):
    _note(f"modifyitems {len(items)}")
    for item in items:  # pytest-timeout's limit: the case timeout, on every item
        _note(f"timeout {item.get_closest_marker('timeout').args}")


def pytest_configure(config):
    global CONTROLLER
    CONTROLLER = not hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)  # before the runner journals and releases the record
def pytest_runtest_logreport(report):
    if CONTROLLER and report.nodeid.startswith("torchcts::"):
        carried = any(k == "torchcts_record" for k, _ in report.user_properties)
        _note(f"{report.when} {carried}")
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_collection_and_reports_carry_no_dead_weight(
    pytester: pytest.Pytester, workers: int
) -> None:
    """Other plugins still modify the collected items (-k, marks), but pytest's
    fixture reordering, a no-op for case items, is not run; a case's record travels
    in its call report only, never again in its teardown report."""
    write_manifest(pytester, ["ok", "wrong"], DTYPES={"float32": True})
    pytester.makeconftest(_COLLECTION_SPY)
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    assert result.ret == 1, result.stdout.str()
    lines = (pytester.path / "spy.txt").read_text().splitlines()
    assert "fixture reorder" not in lines
    assert lines.count("modifyitems 2") == max(workers, 1)  # in each collecting process
    marks = lines.count(f"timeout ({DEFAULT_CASE_TIMEOUT_S},)")
    assert marks == 2 * max(workers, 1)
    # the controller sees every report (from the workers too): the record in call only
    phases = ("setup", "call", "teardown")
    assert sorted(line for line in lines if line.split()[0] in phases) == [
        "call True", "call True", "setup False", "setup False",
        "teardown False", "teardown False",
    ]  # fmt: skip
