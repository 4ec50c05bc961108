"""explain on crafted records: a repro path outside the results directory is refused
in one line naming the file and the problem, never followed; facts a record carries
(the NaN and Inf of a nonfinite case) are shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_factories import Synthetic
from torchcts_report.cli import main
from torchcts_report.explain import explain_case, render_explanation
from torchcts_schema import (
    ArtifactError,
    NotRunReason,
    Status,
    write_history,
    write_reference,
)
from torchcts_schema.layout import ResultsLayout


def _results(tmp_path: Path, repro: str | None) -> Path:
    record = Synthetic.record(
        "mul", "float32", Status.FAILED, mismatch="m", repro=repro
    )
    artifact = Synthetic.artifact([record])
    results = tmp_path / "results"
    results.mkdir()
    key = artifact.metadata.run_key
    history = write_history(results, key, artifact)
    write_reference(ResultsLayout(results, key).latest, history)
    return results


@pytest.mark.parametrize(
    "repro", ["/etc/passwd", "../../outside.py", "a/../../b.py", "C:\\x.py", "x\\y.py"]
)
def test_a_repro_outside_the_results_dir_is_refused(
    tmp_path: Path, repro: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An absolute, escaping or Windows-style repro path is an error, exit 2, one line."""
    results = _results(tmp_path, repro)
    with pytest.raises(ArtifactError, match="outside its results directory"):
        explain_case(results, "opinfo/mul/forward/float32/0")
    assert (
        main(["explain", "--results", str(results), "opinfo/mul/forward/float32/0"])
        == 2
    )
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_repro_inside_the_results_dir_is_printed_as_a_command(tmp_path: Path) -> None:
    """A record's own repro file is printed as `python <path>` a shell can run."""
    results = _results(tmp_path, "k_repros/case.py")
    (results / "k_repros").mkdir()
    (results / "k_repros" / "case.py").write_text("print(1)\n")
    text = render_explanation(explain_case(results, "opinfo/mul/forward/float32/0"))
    assert f"repro: python {results / 'k_repros' / 'case.py'}" in text


def test_the_nonfinite_inputs_of_a_case_are_listed(tmp_path: Path) -> None:
    """A nonfinite case's record names where NaN and Inf were placed; explain shows
    them on one line after the inputs."""
    record = Synthetic.record(
        "maximum",
        "float32",
        Status.FAILED,
        variant="nonfinite",
        mismatch="m",
        facts={"nonfinite": ["input[0, 0] = nan", "args[0][0, 0] = inf"]},
    )
    artifact = Synthetic.artifact([record])
    results = tmp_path / "results"
    results.mkdir()
    key = artifact.metadata.run_key
    write_reference(
        ResultsLayout(results, key).latest, write_history(results, key, artifact)
    )
    text = render_explanation(explain_case(results, record.case_id))
    assert "non-finite inputs: input[0, 0] = nan, args[0][0, 0] = inf\n" in text


def test_two_runs_of_the_case_are_named_and_one_is_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CPU validation run and a device run in one results directory share case
    ids: explain shows the latest and names the other run key, --run-key chooses
    (it showed the CPU run's 'passed' for a case that failed on the device, with no
    way to ask for the other)."""
    results = tmp_path / "results"
    results.mkdir()
    case = "opinfo/mul/forward/float32/0"
    for key, status, started in (
        ("simdev_x86-64-2cpu", Status.FAILED, "2026-11-30T01:00:00+00:00"),
        ("cpu_x86-64-2cpu", Status.PASSED, "2026-11-30T02:00:00+00:00"),
    ):
        record = Synthetic.record("mul", "float32", status, mismatch="m")
        artifact = Synthetic.artifact([record], run_key=key, started_at=started)
        history = write_history(results, key, artifact)
        write_reference(ResultsLayout(results, key).latest, history)
    latest = explain_case(results, case)
    assert (latest.run_key, latest.record.status) == ("cpu_x86-64-2cpu", Status.PASSED)
    assert "also recorded by run key(s) simdev_x86-64-2cpu: choose with --run-key" in (
        render_explanation(latest)
    )
    chosen = explain_case(results, case, run_key="simdev_x86-64-2cpu")
    assert chosen.record.status is Status.FAILED and chosen.other_runs == ()
    args = ["explain", "--results", str(results), "--run-key", "nope", case]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no run of run key 'nope' here has a record of case" in err


def test_a_case_the_run_recorded_as_not_run_is_explained(tmp_path: Path) -> None:
    """A not_run record is a record: explain shows its status and why (it said 'no
    run here has a record of case', although the scorecard uses such cases as its
    examples)."""
    results = tmp_path / "results"
    results.mkdir()
    record = Synthetic.record(
        "div",
        "bfloat16",
        Status.NOT_RUN,
        source=None,
        not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
        detail="op not matched by DTYPES['bfloat16']",
    )
    artifact = Synthetic.artifact([record])
    key = artifact.metadata.run_key
    history = write_history(results, key, artifact)
    write_reference(ResultsLayout(results, key).latest, history)
    text = render_explanation(explain_case(results, "opinfo/div/forward/bfloat16/0"))
    assert "status: not_run" in text
    assert "detail: op not matched by DTYPES['bfloat16']" in text
