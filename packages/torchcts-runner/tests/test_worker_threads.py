"""xdist workers get their share of the cores as intra-op threads (worker_threads):
the rule, and what a worker's process really starts with in a run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from runner_helpers import run_args, use_fake_source, write_manifest
from torchcts_runner.worker_threads import share_cores, threads_per_worker
from torchcts_schema import load_result

VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # what OpenMP and MKL read


def test_each_worker_gets_its_share_of_the_cores() -> None:
    """cores // workers, never fewer than one thread."""
    assert threads_per_worker(2, 2) == 1
    assert threads_per_worker(8, 64) == 8
    assert threads_per_worker(3, 8) == 2
    assert threads_per_worker(4, 2) == 1
    assert threads_per_worker(0, 4) == 4


def test_a_variable_the_user_set_is_kept() -> None:
    """Set in the spec or in the controller's environment: left as it is."""
    spec: dict[str, str] = {"MKL_NUM_THREADS": "5"}
    added = share_cores(spec, {"OMP_NUM_THREADS": "3"}, 2)
    assert added == {} and spec == {"MKL_NUM_THREADS": "5"}
    spec = {}
    assert share_cores(spec, {}, 2) == {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    assert spec == {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}


def _cores() -> int:
    return len(os.sched_getaffinity(0))


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("workers", "user_omp"),
    [(2, None), (2, "3"), (0, None)],
    ids=["xdist", "user", "here"],
)
def test_the_cases_see_the_threads_their_process_started_with(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    workers: int,
    user_omp: str | None,
) -> None:
    """Two workers start with cores // 2 threads in both variables (one the user set
    keeps its value); a run in process starts with torch's default (nothing set).
    Recorded with the worker choice and on the header line."""
    use_fake_source(pytester, monkeypatch)
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    share = str(max(1, _cores() // 2))
    expected = ["unset", "unset"] if workers == 0 else [user_omp or share, share]
    if user_omp is not None:
        monkeypatch.setenv("OMP_NUM_THREADS", user_omp)
    monkeypatch.setenv("FAKE_EXPECT_THREADS", ",".join(expected))
    write_manifest(pytester, ["threads"], MAX_SAMPLES_PER_OP=4)
    args = run_args(workers=workers) if workers else run_args("-n", "0")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0, result.stdout.str()
    artifact = load_result(Path(pytester.path / "results"))
    records = artifact.results
    assert len(records) == 4 and {r.status for r in records} == {"passed"}
    if workers:
        assert {r.worker for r in records} <= {"gw0", "gw1"}
    chosen = artifact.metadata.options["workers"]
    assert chosen["threads"] == (int(share) if workers else None)
    lines = result.outlines + result.errlines
    header = [line for line in lines if line.startswith("TorchCTS: ")]
    said = f"; {share} intra-op thread"
    assert any(said in line for line in header) == bool(workers), header


class _Role:
    """The controller state the xdist hook reads and writes."""

    def __init__(self) -> None:
        from torchcts_runner.worker_choice import given_workers

        self.workers = given_workers(3)
        self.noted: list[object] = []

    def note_workers(self, choice: object) -> None:
        self.noted.append(choice)


def test_only_workers_started_here_share_this_machines_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two popen workers split this machine's cores; an ssh worker runs elsewhere
    and is neither given threads nor counted; a popen spec's own env: is kept."""
    import execnet
    from torchcts_runner import xdist_hooks

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(xdist_hooks, "available_cores", lambda: 8)
    specs = [
        execnet.XSpec("popen"),
        execnet.XSpec("popen//env:OMP_NUM_THREADS=7"),
        execnet.XSpec("ssh=elsewhere//python=python3"),
    ]
    role = _Role()
    hooks = xdist_hooks.XdistControllerHooks(role)  # type: ignore[arg-type]
    hooks.pytest_xdist_setupnodes(None, specs)  # type: ignore[arg-type]
    assert specs[0].env == {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4"}
    assert specs[1].env == {"OMP_NUM_THREADS": "7", "MKL_NUM_THREADS": "4"}
    assert specs[2].env == {}
    (noted,) = role.noted
    assert noted.threads == 4 and noted.count == 3  # type: ignore[attr-defined]
