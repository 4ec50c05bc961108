"""How torchcts-run judges a pytest child that ended without its session end: a
clean-looking code says "abnormal"; death by a signal (an in-process crash with -n 0)
names the signal and the resume command, never ends silently."""

from __future__ import annotations

import signal

import pytest
from torchcts_runner import run_judgement
from torchcts_runner.run_folder import USER_COMMAND_ENV


def test_death_by_signal_names_it_and_how_to_continue(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest's child killed by SIGSEGV: exit 3 (internal), one line with SIGSEGV,
    the journal, and the user's command with --resume."""
    monkeypatch.setenv(USER_COMMAND_ENV, "torchcts-run --manifest m.py -n 0")
    code = run_judgement.judge(-signal.SIGSEGV, None, set())
    out = capsys.readouterr().out.strip().splitlines()
    assert code == run_judgement.INTERNAL
    assert len(out) == 1 and "SIGSEGV" in out[0] and "journal" in out[0]
    assert out[0].endswith("torchcts-run --manifest m.py -n 0 --resume")


def test_an_unknown_signal_number_is_still_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A number outside the Signals enum prints as "signal N"."""
    assert run_judgement.judge(-200, None, set()) == run_judgement.INTERNAL
    assert "signal 200" in capsys.readouterr().out


def test_no_session_end_with_a_clean_code_is_abnormal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Exit 0 without the status file (faulthandler's _exit after a hang) is not a
    pass."""
    assert run_judgement.judge(0, None, set()) == run_judgement.INTERNAL
    assert "ended abnormally" in capsys.readouterr().out


def test_a_signal_before_the_session_began_is_its_exit_status(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_child hands over 128 + the signal when a SIGINT or SIGTERM reached the
    run before pytest's session began (no status file): that is the exit status,
    with how to continue, never "ended abnormally" (exit 3)."""
    monkeypatch.setenv(USER_COMMAND_ENV, "torchcts-run --manifest m.py")
    assert run_judgement.judge(128 + signal.SIGINT, None, set()) == 130
    out = capsys.readouterr().out
    assert "interrupted by SIGINT before the session began" in out
    assert out.strip().endswith("torchcts-run --manifest m.py --resume")
