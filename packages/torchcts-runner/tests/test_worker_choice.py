"""Workers chosen by the work (worker_choice) and the continuation of an in-process
run that died (continuation): pure rules, no pytest run."""

from __future__ import annotations

import signal

from torchcts_runner.continuation import continuation
from torchcts_runner.worker_choice import (
    IN_PROCESS_UP_TO,
    choose_workers,
    default_workers,
    given_workers,
    in_process_limit,
)


def test_default_workers_one_per_core_one_per_accelerator() -> None:
    """One worker on an accelerator, one per core (at most 8) on host devices."""
    assert default_workers("cuda", 16) == 1
    assert default_workers("simdev", 2) == 2
    assert default_workers("cpu", 64) == 8


def test_small_selection_runs_in_process_large_on_workers() -> None:
    """Up to the measured boundary in process, one more case gets the workers."""
    small = choose_workers(IN_PROCESS_UP_TO, device="cpu", cores=2)
    large = choose_workers(IN_PROCESS_UP_TO + 1, device="cpu", cores=2)
    assert (small.count, large.count) == (0, 2)
    assert small.by_work and large.by_work
    assert small.planned == IN_PROCESS_UP_TO
    assert "in process (-n 0)" in small.why and f"{IN_PROCESS_UP_TO}" in small.why
    assert "2 xdist workers (-n 2)" in large.why and "2 cores" in large.why


def test_the_boundary_shrinks_with_more_workers_and_the_manifest_caps() -> None:
    """More workers pay sooner (the share 1 - 1/W they save grows); the manifest's
    RESOURCE_LIMITS.workers caps the count; an accelerator gets one worker."""
    assert in_process_limit(1) == in_process_limit(2) == IN_PROCESS_UP_TO
    assert in_process_limit(4) == round(IN_PROCESS_UP_TO * 0.5 / 0.75)
    assert in_process_limit(8) < in_process_limit(4) < IN_PROCESS_UP_TO
    many = IN_PROCESS_UP_TO * 10
    assert choose_workers(many, device="cpu", cores=16).count == 8
    assert choose_workers(many, device="cpu", cores=16, cap=2).count == 2
    assert choose_workers(many, device="cuda", cores=16).count == 1
    assert choose_workers(3, device="cuda", cores=16).count == 0


def test_an_explicit_n_is_recorded_as_given() -> None:
    """-n N is the user's choice: recorded as given, never by the work."""
    assert given_workers(3).to_dict() == {
        "count": 3,
        "chosen": "given",
        "planned": None,
        "why": "3 xdist worker(s) (-n 3 given)",
    }
    assert given_workers(None).count == 0 and not given_workers(None).by_work


def _started(
    count: int, planned: int, chosen: str = "by the work"
) -> dict[str, object]:
    return {
        "ended": False,
        "workers": {"count": count, "chosen": chosen, "planned": planned, "why": ""},
    }


def test_a_crashed_in_process_run_continues_on_workers() -> None:
    """A segfault, abort or hang exit of a run the work put in process continues,
    on the workers the run would have had."""
    segv = -int(signal.SIGSEGV)
    why = continuation(segv, _started(0, 40), 2)
    assert why is not None and "SIGSEGV" in why and "of 40 planned" in why
    assert "on 2 xdist worker(s) (-n 2)" in why
    assert continuation(1, _started(0, 39), 2) is not None  # a hang's _exit(1)


def test_no_continuation_on_purpose_with_workers_or_given_n() -> None:
    """Never after SIGKILL, SIGTERM or SIGINT; never for workers or an explicit -n
    (so a continued run, whose -n is given, is never continued again); never when
    the session ended or never reached its first case; never onto no worker."""
    for stop in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
        assert continuation(-int(stop), _started(0, 40), 2) is None
    assert continuation(-11, _started(2, 4000), 2) is None
    assert continuation(-11, _started(0, 40, chosen="given"), 2) is None
    assert continuation(-11, None, 2) is None
    assert continuation(-11, {**_started(0, 40), "ended": True}, 2) is None
    assert continuation(-11, _started(0, 0), 2) is None
    assert continuation(-11, _started(0, 40), 0) is None
