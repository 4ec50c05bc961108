"""The render command line, `python -m torchcts_report`, and the import boundary."""

from __future__ import annotations

import subprocess
import sys

from torchcts_report.cli import main


def test_render_writes_three_files_beside_the_artifact(tmp_path, syn, capsys):
    """render DIR writes <key>.md, .html and .junit.xml into the results dir."""
    syn.write(tmp_path, syn.artifact())
    assert main(["render", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.split()
    names = sorted(p.rsplit("/", 1)[-1] for p in printed)
    assert names == [
        "simdev_x86-64-2cpu.html",
        "simdev_x86-64-2cpu.junit.xml",
        "simdev_x86-64-2cpu.md",
    ]
    assert all((tmp_path / n).exists() for n in names)


def test_render_an_artifact_file_and_out_dir(tmp_path, syn):
    """render ARTIFACT --out DIR writes there instead of beside the artifact."""
    history = syn.write(tmp_path, syn.artifact())
    out = tmp_path / "reports"
    assert main(["render", str(history), "--out", str(out)]) == 0
    assert (out / "simdev_x86-64-2cpu.md").exists()
    assert not (tmp_path / "simdev_x86-64-2cpu.md").exists()


def test_render_out_that_is_a_file_says_so(tmp_path, syn, capsys):
    """--out naming an existing file: one line saying it is a file, not a directory
    (was 'cannot write (file exists)'), exit 2, the file untouched."""
    history = syn.write(tmp_path, syn.artifact())
    taken = tmp_path / "taken"
    taken.write_text("mine\n")
    for out in (taken, taken / "sub"):
        assert main(["render", str(history), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"cannot write ({taken} is a file, not a directory)" in err
        assert "file exists" not in err and len(err.strip().splitlines()) == 1
    assert taken.read_text() == "mine\n"


def test_render_reference_file_writes_into_results_dir(tmp_path, syn):
    """render of <key>_latest.json (a reference) writes the reports beside it."""
    syn.write(tmp_path, syn.artifact())
    assert main(["render", str(tmp_path / "simdev_x86-64-2cpu_latest.json")]) == 0
    assert (tmp_path / "simdev_x86-64-2cpu.html").exists()


def test_render_needs_a_run_key_when_several(tmp_path, syn, capsys):
    """Several runs in one dir: an error naming them, then --run-key picks one."""
    syn.write(tmp_path, syn.artifact())
    syn.write(tmp_path, syn.artifact(run_key="cpu_other"))
    assert main(["render", str(tmp_path)]) == 2
    assert "several run keys (cpu_other, simdev_x86-64-2cpu)" in capsys.readouterr().err
    assert main(["render", str(tmp_path), "--run-key", "cpu_other"]) == 0
    assert (tmp_path / "cpu_other.md").exists()
    assert not (tmp_path / "simdev_x86-64-2cpu.md").exists()


def test_render_bad_input_is_one_line(tmp_path, capsys):
    """A corrupt artifact is exit 2 with one line naming the file, no traceback."""
    bad = tmp_path / "k_latest.json"
    bad.write_text('{"format": "torchcts-result", "format_vers')
    assert main(["render", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "k_latest.json" in err and "Traceback" not in err


def test_render_journal_of_an_interrupted_run(tmp_path, syn):
    """A run killed mid-way (journal only) renders as a partial run."""
    from torchcts_schema import JournalWriter, journal_path

    meta = syn.metadata(completed_normally=False, ended_at=None)
    with JournalWriter(journal_path(tmp_path, meta.run_key)) as journal:
        journal.run_start(meta)
        journal.case(syn.record("add"))
    assert main(["render", str(tmp_path)]) == 0
    text = (tmp_path / f"{meta.run_key}.md").read_text()
    assert "Partial run" in text and "1 case record(s)" in text


HOLD = """
import sys, time
from pathlib import Path
from torchcts_schema import RunLock
RunLock(Path(sys.argv[1])).acquire("torchcts-run --manifest manifests/simdev.py")
print("held", flush=True)
time.sleep(60)
"""


def test_render_of_a_directory_a_live_run_holds_says_so(tmp_path, syn, capsys):
    """While a run holds the directory's lock, render still writes the reports (a
    partial report is legitimate) and says in one stderr line that the run is still
    going, naming the holder's pid and command; with no run, it says nothing."""
    artifact = syn.artifact()
    syn.write(tmp_path, artifact)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        assert main(["render", "--results", str(tmp_path)]) == 0
    finally:
        proc.kill()
        proc.wait()
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "still writing" in err and str(tmp_path) in err
    assert f"pid {proc.pid}" in err
    assert "torchcts-run --manifest manifests/simdev.py" in err
    assert (tmp_path / f"{artifact.metadata.run_key}.md").exists()
    assert main(["render", "--results", str(tmp_path)]) == 0
    assert capsys.readouterr().err == ""


def test_python_dash_m_render(tmp_path, syn):
    """`python -m torchcts_report render DIR --run-key KEY` works as the runner calls it."""
    syn.write(tmp_path, syn.artifact())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchcts_report",
            "render",
            str(tmp_path),
            "--run-key",
            "simdev_x86-64-2cpu",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "simdev_x86-64-2cpu.junit.xml").exists()


def test_no_torch_or_pytest_imported():
    """The report package imports neither torch nor pytest (reviewers lack them)."""
    code = (
        "import sys, torchcts_report, torchcts_report.cli;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pytest'));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_reports_are_readable_by_others(tmp_path, syn):
    """Reports get the permissions of an ordinary file, not the temp file's 0600."""
    import os

    syn.write(tmp_path, syn.artifact())
    assert main(["render", str(tmp_path)]) == 0
    umask = os.umask(0)
    os.umask(umask)
    for suffix in (".md", ".html", ".junit.xml"):
        mode = (tmp_path / f"simdev_x86-64-2cpu{suffix}").stat().st_mode & 0o777
        assert mode == 0o666 & ~umask


def test_results_option_and_old_positional_spelling_agree(tmp_path, syn, capsys):
    """render --results DIR and the older positional DIR write the same reports."""
    syn.write(tmp_path, syn.artifact())
    assert main(["render", "--results", str(tmp_path)]) == 0
    first = (tmp_path / "simdev_x86-64-2cpu.md").read_bytes()
    assert main(["render", str(tmp_path)]) == 0
    assert (tmp_path / "simdev_x86-64-2cpu.md").read_bytes() == first
    assert main(["render", "--results", str(tmp_path), str(tmp_path / "x")]) == 2


def test_version_and_help_list_exit_codes(capsys):
    """--version names the tool; every help lists the exit codes, without RST."""
    import pytest

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == "torchcts-report 0.1.0"
    for argv in (["--help"], ["render", "--help"], ["diff", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert "exit codes:" in text and "2  bad input or usage" in text
        assert "``" not in text
    with pytest.raises(SystemExit):
        main(["diff", "--help"])
    assert "executed cases (not not_run)" in capsys.readouterr().out
