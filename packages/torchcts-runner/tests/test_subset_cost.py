"""A subset run costs what it selects: outside cases are counted, not recorded; node
ids narrow selection; the probes of an earlier run are reused (fake case source)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from runner_helpers import run_args, subset_results, use_fake_source, write_manifest
from torchcts_cases import not_run
from torchcts_runner.casesource import DEFAULT_CASE_SOURCE, load_case_source
from torchcts_runner.selection import plan_cases
from torchcts_schema import (
    OUTSIDE_REASONS,
    OutsideCounts,
    count_outside,
    in_shard,
    load_manifest,
    load_result,
)


@pytest.fixture(autouse=True)
def _fake(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_source(pytester, monkeypatch)


def _rerun_files(pytester: pytest.Pytester, ops: list[str]) -> tuple[int, int, dict]:
    shutil.rmtree(pytester.path / "results", ignore_errors=True)
    write_manifest(pytester, ops, DTYPES={"float32": True, "float64": True})
    result = pytester.runpytest_subprocess(
        *run_args(), "torchcts::fake/ok/forward/float32/0"
    )
    assert result.ret == 0, result.stdout.str()
    folder = subset_results(pytester.path / "results")
    (journal,) = folder.glob("*_journal.jsonl")
    (history,) = folder.glob("*_history/*.json")
    artifact = load_result(folder)
    assert [r.case_id for r in artifact.records] == ["fake/ok/forward/float32/0"]
    lines = len(journal.read_text().splitlines())
    return lines, history.stat().st_size, artifact.metadata.outside


def test_a_rerun_journal_and_history_do_not_grow_with_the_universe(
    pytester: pytest.Pytester,
) -> None:
    """The same one-case rerun writes the same journal lines and about the same
    history whether the manifest has 3 ops or 60; the rest is a count by reason."""
    small = _rerun_files(pytester, ["ok", "wrong", "slow"])
    big = _rerun_files(pytester, ["ok", *(f"ok{i}" for i in range(59))])
    assert small[0] == big[0]
    assert abs(small[1] - big[1]) < 200  # only the counts' digits differ
    assert small[2] == {"filtered_by_selection": 3 * 2 - 1}
    assert big[2] == {"filtered_by_selection": 60 * 2 - 1}


def test_node_ids_narrow_selection_to_their_own_ops(
    pytester: pytest.Pytester,
) -> None:
    """plan_cases of a subset run asks the source for the node ids' ops only, and
    the counts still add up to every case of the manifest."""
    manifest_path = write_manifest(
        pytester, ["ok", "wrong", "slow"], DTYPES={"float32": True}
    )
    source = load_case_source("fakecases")
    manifest = load_manifest(manifest_path)
    common = dict(level=None, dtypes=(), suites=(), op_globs=(), shard=None)
    plan = plan_cases(
        source,
        manifest,
        **common,  # type: ignore[arg-type]
        node_ids=["torchcts::fake/wrong/forward/float32/0"],
        record_outside=False,
    )
    assert [s.case_id for s in plan.to_run] == ["fake/wrong/forward/float32/0"]
    assert [s.op for s in plan.planned] == ["wrong"]
    assert plan.not_run == []
    assert plan.outside_by_reason() == {"filtered_by_selection": 2}
    full = plan_cases(source, manifest, **common)  # type: ignore[arg-type]
    assert len(full.planned) == 3 and full.outside == {}


def test_node_ids_plan_exactly_their_cases_and_count_the_neighbours(
    pytester: pytest.Pytester,
) -> None:
    """Two ids of different ops and dtypes narrow selection to both ops and both
    dtypes; the other two cases that narrowing selects are counted outside, never
    planned (a planned case without a record would leave the run incomplete)."""
    manifest_path = write_manifest(
        pytester, ["ok", "wrong", "slow"], DTYPES={"float32": True, "float64": True}
    )
    ids = ["fake/ok/forward/float32/0", "fake/wrong/forward/float64/0"]
    plan = plan_cases(
        load_case_source("fakecases"),
        load_manifest(manifest_path),
        level=None,
        dtypes=(),
        suites=(),
        op_globs=(),
        shard=None,
        node_ids=[f"torchcts::{i}" for i in ids],
        record_outside=False,
    )
    assert sorted(s.case_id for s in plan.planned) == ids
    assert sorted(s.case_id for s in plan.to_run) == ids
    # 3 ops x 2 dtypes = 6 cases: 2 planned, 4 counted (2 narrowed away, 2 neighbours)
    assert plan.outside_by_reason() == {"filtered_by_selection": 4}


def test_a_rerun_reuses_the_probes_of_the_same_build(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a full run, a rerun prints the probe table as reused; another backend
    environment probes afresh."""
    write_manifest(pytester, ["ok", "wrong"], DTYPES={"float32": True})
    full = pytester.runpytest_subprocess(*run_args())
    assert full.ret == 1, full.stdout.str()
    assert "reused from an earlier run" not in full.stderr.str()
    rerun = pytester.runpytest_subprocess(
        *run_args(), "torchcts::fake/ok/forward/float32/0"
    )
    assert rerun.ret == 0, rerun.stdout.str()
    assert "reused from an earlier run" in rerun.stderr.str()
    monkeypatch.setenv("TORCHCTS_CPU_FLAVOUR", "other")
    other = pytester.runpytest_subprocess(
        *run_args(), "torchcts::fake/ok/forward/float32/0"
    )
    assert other.ret == 0, other.stdout.str()
    assert "reused from an earlier run" not in other.stderr.str()


def test_sharded_subset_counts_only_its_own_shard(tmp_path: Path) -> None:
    """On the real case source, the outside counts of a sharded subset run's shards
    add up to the unsharded count once, not once per shard (a source's group counts
    span every shard, so a sharded run counts its own records instead)."""
    path = tmp_path / "manifest.py"
    path.write_text(
        'DEVICE = "cpu"\nDTYPES = {"float32": True}\nCAPABILITIES = ["forward"]\n'
    )
    source = load_case_source(DEFAULT_CASE_SOURCE)
    manifest = load_manifest(path)

    def outside(shard: tuple[int, int] | None) -> dict[str, int]:
        plan = plan_cases(
            source,
            manifest,
            level=None,
            dtypes=(),
            suites=(),
            op_globs=("abs",),
            shard=shard,
            record_outside=False,
        )
        return plan.outside_by_reason()

    whole = outside(None)
    parts = [outside((i, 3)) for i in (1, 2, 3)]
    assert whole["filtered_by_selection"] > 100
    for reason, count in whole.items():
        assert sum(p.get(reason, 0) for p in parts) == count, reason


@pytest.mark.parametrize("shard", [(1, 3), (3, 3), (1, 10**6)])
def test_a_shard_counts_what_recording_every_case_would(
    tmp_path: Path, shard: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source counts a sharded subset run's outside cases itself (no record per
    case of every shard): per group and reason the counts, and the shard's planned
    cases and records, are those of recording every case and keeping the shard's.
    A shard holding none of a filter's cases (1 of 10**6) still matches the filter."""
    path = tmp_path / "manifest.py"
    path.write_text(
        'DEVICE = "cpu"\nDTYPES = {"float32": True, "float64": True, "int64": True}\n'
        'CAPABILITIES = ["forward", "backward"]\nMAX_SAMPLES_PER_OP = 6\n'
    )
    source = load_case_source(DEFAULT_CASE_SOURCE)
    manifest = load_manifest(path)
    ops = ("abs", "add", "sum")
    made: list[str] = []
    real = not_run.GroupRecords.record

    def counted(self: object, case_id: str, *args: object) -> object:
        made.append(case_id)
        return real(self, case_id, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(not_run.GroupRecords, "record", counted)
    plan = plan_cases(
        source,
        manifest,
        level=2,
        dtypes=("float32", "int64"),
        suites=(),
        op_globs=ops,
        shard=shard,
        record_outside=False,
    )
    made_for_plan = set(made)
    every = source.select_cases(
        manifest, source.selection(level=2, dtypes=("float32", "int64"), op_globs=ops)
    )
    expected: OutsideCounts = {}
    kept = []
    for record in every.not_run:
        if not in_shard(record.case_id, shard):
            continue
        if record.not_run_reason in OUTSIDE_REASONS:
            count_outside(
                expected, record.suite, record.op, record.dtype, record.not_run_reason
            )
        else:
            kept.append(record.case_id)
    assert plan.outside == expected
    assert [r.case_id for r in plan.not_run] == kept
    # records only for the reasons a subset run records, none per counted case
    assert made_for_plan == {
        r.case_id
        for r in every.not_run
        if r.not_run_reason not in OUTSIDE_REASONS and r.suite == "opinfo"
    }
    assert plan.planned_ids == [
        s.case_id for s in every.runnable if in_shard(s.case_id, shard)
    ]
    if shard[1] == 3:
        assert len(expected) > 20 and plan.planned_ids
