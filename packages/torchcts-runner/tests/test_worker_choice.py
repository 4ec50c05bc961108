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


def test_two_cores_run_in_process_at_any_size() -> None:
    """Workers cost a case about twice its CPU: two of them on two cores never run
    a selection sooner than one process does, nor one worker on one core."""
    for planned in (1, 5_000, 105_480, 1_000_000):
        choice = choose_workers(planned, device="cpu", cores=2)
        assert choice.count == 0 and choice.by_work and choice.planned == planned
        assert "in process (-n 0)" in choice.why and "2 cores" in choice.why
        assert "2 xdist workers would not run them sooner" in choice.why
    assert choose_workers(10**6, device="simdev", cores=1).count == 0
    assert in_process_limit(2) is None and in_process_limit(1) is None


def test_more_cores_pay_back_sooner() -> None:
    """W workers save 1 - 2/W of the case time against ~5 s of fixed cost at
    ~2 ms a case: 5 s / (0.5 * 2 ms) = 5,000 cases on 4 workers, 5 s / (0.75 *
    2 ms) = 3,333 on 8; one more case than the boundary gets the workers."""
    assert in_process_limit(4) == 5000
    assert in_process_limit(8) == 3333
    assert in_process_limit(3) == 7500
    small = choose_workers(5000, device="cpu", cores=4)
    large = choose_workers(5001, device="cpu", cores=4)
    assert (small.count, large.count) == (0, 4)
    assert "at most 5000 run sooner" in small.why and "4 cores" in small.why
    assert "4 xdist workers (-n 4)" in large.why and "over the 5000" in large.why


def test_the_manifest_caps_and_an_accelerator_gets_one_worker() -> None:
    """RESOURCE_LIMITS.workers caps the count (a cap of 2 keeps a run in process);
    an accelerator's one worker comes past IN_PROCESS_UP_TO cases, for what only a
    worker gives (a broken device costs a worker)."""
    many = 1_000_000
    assert choose_workers(many, device="cpu", cores=16).count == 8
    assert choose_workers(many, device="cpu", cores=16, cap=4).count == 4
    assert choose_workers(many, device="cpu", cores=16, cap=2).count == 0
    assert in_process_limit(1, accelerator=True) == IN_PROCESS_UP_TO
    assert choose_workers(IN_PROCESS_UP_TO, device="cuda", cores=16).count == 0
    assert choose_workers(IN_PROCESS_UP_TO + 1, device="cuda", cores=16).count == 1


def test_an_explicit_n_is_recorded_as_given() -> None:
    """-n N is the user's choice: recorded as given, never by the work."""
    assert given_workers(3).to_dict() == {
        "count": 3,
        "chosen": "given",
        "planned": None,
        "why": "3 xdist worker(s) (-n 3 given)",
        "threads": None,  # given when xdist starts the workers (worker_threads)
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
    hang = continuation(1, _started(0, 39), 2)  # the watchdog's _exit(1)
    assert hang is not None and "a case outlived its time limit" in hang


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
