"""Run diff: regressions, fixes, status changes, new and vanished cases, and guards."""

from __future__ import annotations

import pytest
from torchcts_report import check_guards, diff_artifacts, render_diff
from torchcts_report.cli import main
from torchcts_schema import Status


def _pair(syn):  # type: ignore[no-untyped-def]
    r = syn.record
    old = syn.artifact(
        [
            r("a"),
            r("b"),
            r("c", status=Status.FAILED, mismatch="x"),
            r("d", status=Status.ERROR),
            r("e"),
            r("gone"),
            r("same"),
        ]
    )
    new = syn.artifact(
        [
            r("a", status=Status.FAILED, mismatch="x"),  # regression
            r("b", status=Status.CRASHED),  # regression
            r("c"),  # fix
            r("d", status=Status.CRASHED),  # other change
            r("e"),
            r("same"),
            r("fresh"),
        ]
    )
    return old, new


def test_coverage_changes_are_not_regressions(syn):
    """Executed -> not_run is 'stopped running', not_run -> passed is 'started'."""
    from torchcts_schema import NotRunReason

    skip = {
        "status": Status.NOT_RUN,
        "source": None,
        "not_run_reason": NotRunReason.FILTERED_BY_SELECTION,
    }
    old = syn.artifact(
        [
            syn.record("a"),
            syn.record("b", **skip),
            syn.record("c", status=Status.FAILED, mismatch="x"),
        ]
    )
    new = syn.artifact(
        [
            syn.record("a", **skip),
            syn.record("b"),
            syn.record("c", status=Status.SKIPPED),
        ]
    )
    diff = diff_artifacts(old, new)
    assert not diff.regressions and not diff.fixes
    assert [e[0].split("/")[1] for e in diff.stopped] == ["a", "c"]
    assert [e[0].split("/")[1] for e in diff.started] == ["b"]
    result = check_guards(diff, max_vanished_share=0.5, max_regressed_share=0.0)
    # a and c were the old run's only executed cases: both stopped, so 100%
    assert result.breaches == (
        "2 of the old run's 2 executed case(s) vanished or stopped running (100.00%), "
        "above the limit of 50.00% (not_run cases are not counted)",
    )


def test_categories(syn):
    """Each case lands in exactly the category its two statuses imply."""
    old, new = _pair(syn)
    diff = diff_artifacts(old, new)
    ids = lambda items: [i[0].split("/")[1] for i in items]  # noqa: E731
    assert ids(diff.regressions) == ["a", "b"]
    assert ids(diff.fixes) == ["c"]
    assert ids(diff.changes) == ["d"]
    assert ids(diff.new) == ["fresh"]
    assert ids(diff.vanished) == ["gone"]
    assert diff.changes[0][1:] == (Status.ERROR, Status.CRASHED)
    assert (diff.old_total, diff.new_total) == (7, 7)


def test_render_lists_every_category(syn):
    """The markdown diff has a summary and one section per category."""
    old, new = _pair(syn)
    text = render_diff(diff_artifacts(old, new), old, new)
    assert "| regressions (passed before, not now) | 2 |" in text
    assert "| vanished cases | 1 |" in text
    assert "| `opinfo/a/forward/float32/0` | `passed` | `failed` |" in text
    assert "| `opinfo/gone/forward/float32/0` | `passed` |" in text


def test_identical_runs_have_no_changes(syn):
    """Diffing a run with itself finds nothing and trips no guard."""
    art = syn.artifact()
    diff = diff_artifacts(art, art)
    assert not (
        diff.regressions or diff.fixes or diff.changes or diff.new or diff.vanished
    )
    assert check_guards(diff, max_vanished_share=0.0, max_regressed_share=0.0).ok


def test_guards_trip_above_their_share(syn):
    """A guard trips only when the share is strictly above its limit."""
    old, new = _pair(syn)
    diff = diff_artifacts(old, new)
    assert check_guards(diff, max_vanished_share=1 / 7, max_regressed_share=2 / 7).ok
    result = check_guards(diff, max_vanished_share=0.1, max_regressed_share=0.2)
    assert len(result.breaches) == 2
    assert (
        "1 of the old run's 7 executed case(s) vanished or stopped running (14.29%)"
        in result.breaches[0]
    )
    assert "2 of the old run's 7 executed case(s) regressed" in result.breaches[1]


def test_vanished_share_ignores_not_run_cases(syn):
    """18 of 20 executed cases stop running among 1,000 not_run: the 10% guard trips."""
    from torchcts_schema import NotRunReason

    level = {"status": Status.NOT_RUN, "source": None}
    level["not_run_reason"] = NotRunReason.LEVEL_FILTERED
    not_run = [syn.record(f"n{i}", **level) for i in range(1000)]
    ran = [syn.record(f"op{i}") for i in range(20)]
    stopped = [syn.record(f"op{i}", **level) for i in range(18)] + ran[18:]
    diff = diff_artifacts(syn.artifact(ran + not_run), syn.artifact(stopped + not_run))
    assert (diff.old_executed, diff.lost) == (20, 18)
    result = check_guards(diff, max_vanished_share=0.1, max_regressed_share=None)
    assert result.breaches == (
        "18 of the old run's 20 executed case(s) vanished or stopped running "
        "(90.00%), above the limit of 10.00% (not_run cases are not counted)",
    )


def test_cli_diff_json_is_machine_readable(tmp_path, syn, capsys):
    """diff --json prints one JSON object with counts, guards and case lists."""
    import json

    old, new = _write_pair(tmp_path, syn)
    assert main(["diff", old, new, "--json", "--max-regressed-share", "0.1"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["old_executed"] == 7 and data["guards"]["ok"] is False
    assert [e["case_id"].split("/")[1] for e in data["regressions"]] == ["a", "b"]


def test_empty_old_run_never_divides_by_zero(syn):
    """Against an empty old run, shares are zero and guards pass."""
    diff = diff_artifacts(syn.artifact([]), syn.artifact())
    assert check_guards(diff, max_vanished_share=0.0, max_regressed_share=0.0).ok


def _write_pair(tmp_path, syn):  # type: ignore[no-untyped-def]
    old, new = _pair(syn)
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    syn.write(tmp_path / "old", old)
    syn.write(tmp_path / "new", new)
    return str(tmp_path / "old"), str(tmp_path / "new")


def test_cli_guard_exit_codes(tmp_path, syn, capsys):
    """The CLI exits 1 when a guard trips and 0 when the shares are within limits."""
    old, new = _write_pair(tmp_path, syn)
    assert main(["diff", old, new, "--max-vanished-share", "20%"]) == 0
    assert "# TorchCTS run diff" in capsys.readouterr().out
    assert main(["diff", old, new, "--max-regressed-share", "0.1"]) == 1
    assert "guard: 2 of the old run's 7 executed case(s) regressed" in (
        capsys.readouterr().err
    )
    assert main(["diff", old, new, "--max-vanished-share", "0"]) == 1


def test_cli_writes_diff_file(tmp_path, syn):
    """--out writes the markdown diff to a file."""
    old, new = _write_pair(tmp_path, syn)
    out = tmp_path / "diff.md"
    assert main(["diff", old, new, "--out", str(out)]) == 0
    assert out.read_text().startswith("# TorchCTS run diff")


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "abc", "150%", "x%"])
def test_cli_rejects_bad_shares(tmp_path, syn, capsys, bad):
    """A share outside 0..1 or not a number is a usage error naming the value."""
    old, new = _write_pair(tmp_path, syn)
    with pytest.raises(SystemExit) as info:
        main(["diff", old, new, "--max-vanished-share", bad])
    assert info.value.code == 2
    assert repr(bad) in capsys.readouterr().err


def test_cli_missing_input_is_one_line(tmp_path, capsys):
    """A missing run is exit 2 and one error line naming the path."""
    assert main(["diff", str(tmp_path / "nope"), str(tmp_path / "nope2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err and "no such file" in err


def test_render_counts_per_status_and_warns_on_mismatch(syn):
    """The diff shows per-status counts and warns when versions or completeness differ."""
    old = syn.artifact([syn.record("a"), syn.record("b")])
    new = syn.artifact(
        [syn.record("a", status=Status.FAILED, mismatch="x")],
        torch_version="2.14.0",
        completed_normally=False,
    )
    text = render_diff(diff_artifacts(old, new), old, new)
    assert "| `passed` | 2 | 0 | -2 |" in text
    assert "| `failed` | 0 | 1 | +1 |" in text
    assert "> The runs differ in PyTorch version: compare with care." in text
    assert "> The new run did not complete normally" in text


def test_render_same_setup_has_no_warnings(syn):
    """Two complete runs of one setup get no warnings."""
    art = syn.artifact()
    assert "> " not in render_diff(diff_artifacts(art, art), art, art)
