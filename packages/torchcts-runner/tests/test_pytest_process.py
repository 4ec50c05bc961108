"""The pytest process torchcts-run starts ends without the interpreter's teardown, but
with everything a normal exit does that anyone can see."""

from __future__ import annotations

import sys

import pytest


def test_pytest_process_exits_as_pytest_would(pytester: pytest.Pytester) -> None:
    """pytest's exit code, its whole output, atexit handlers and a non-daemon thread
    that is still writing when the session ends."""
    pytester.makeconftest(
        """
        import atexit, pathlib, threading, time

        atexit.register(pathlib.Path("atexit.txt").write_text, "ran")

        def pytest_unconfigure(config):
            def late():
                time.sleep(0.3)
                pathlib.Path("thread.txt").write_text("joined")
            threading.Thread(target=late, daemon=False).start()
        """
    )
    pytester.makepyfile(
        test_two="""
        def test_passes():
            pass

        def test_fails():
            assert False
        """
    )
    result = pytester.run(
        sys.executable, "-m", "torchcts_runner.pytest_process", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 failed, 1 passed*"])  # the last line, flushed
    assert "Warning" not in result.stderr.str()  # nothing deprecated, no path printed
    assert (pytester.path / "atexit.txt").read_text() == "ran"
    assert (pytester.path / "thread.txt").read_text() == "joined"


def test_the_exit_status_is_what_sys_exit_gives() -> None:
    from torchcts_runner.pytest_process import exit_status

    assert [exit_status(c) for c in (None, 0, 3, pytest.ExitCode.INTERRUPTED)] == [
        0, 0, 3, 2,
    ]  # fmt: skip
    assert exit_status("a message") == 1
