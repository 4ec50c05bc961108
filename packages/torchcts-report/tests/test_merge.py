"""Shard merge: one manifest and PyTorch version into one result; each error named."""

from __future__ import annotations

import json

import pytest
from torchcts_report import MergeError, Shard, merge_artifacts, merge_paths
from torchcts_report.cli import main
from torchcts_schema import NotRunReason, Status, load_result

LATER = "2026-11-30T02:00:00+00:00"  # another run's start: shards of different runs


def _shards(syn):  # type: ignore[no-untyped-def]
    r = syn.record
    one = syn.artifact(
        [r("a"), r("b", status=Status.FAILED, mismatch="x")],
        started_at="2026-11-30T01:00:00+00:00",
    )
    two = syn.artifact(
        [r("c"), r("d", status=Status.CRASHED)],
        started_at="2026-11-30T00:59:00+00:00",
        ended_at="2026-11-30T01:05:00+00:00",
    )
    return [Shard("shard 1", one), Shard("shard 2", two)]


def test_merge_combines_records_sorted(syn):
    """Merged records are every shard's records, sorted by case id, counts recomputed."""
    merged = merge_artifacts(_shards(syn))
    ids = [r.case_id.split("/")[1] for r in merged.records]
    assert ids == ["a", "b", "c", "d"]
    meta = merged.metadata
    assert meta.counts["passed"] == 2 and meta.counts["crashed"] == 1
    assert meta.started_at == "2026-11-30T00:59:00+00:00"
    assert meta.ended_at == "2026-11-30T01:05:00+00:00"
    assert meta.completed_normally is True
    assert [s["shard"] for s in meta.options["merged_from"]] == ["shard 1", "shard 2"]
    assert meta.probes == {"passed": 20, "failed": 2, "total": 22}


def test_merge_rejects_different_manifests(syn):
    """Shards of different manifests are an error naming the shard and both digests."""
    shards = _shards(syn)
    other = syn.artifact([syn.record("z")], manifest_digest="sha256:other")
    with pytest.raises(
        MergeError, match=r"shard 3: manifest digest 'sha256:other' differs"
    ):
        merge_artifacts([*shards, Shard("shard 3", other)])


def test_merge_rejects_different_torch(syn):
    """Shards of different PyTorch versions are an error naming both versions."""
    other = syn.artifact([syn.record("z")], torch_version="2.12.1")
    with pytest.raises(
        MergeError, match=r"PyTorch version '2.12.1' differs from '2.13.0'"
    ):
        merge_artifacts([_shards(syn)[0], Shard("late", other)])


def test_merge_rejects_different_devices(syn):
    """Shards of different devices cannot be one result."""
    other = syn.artifact([syn.record("z")], device="cuda")
    with pytest.raises(MergeError, match="device 'cuda' differs"):
        merge_artifacts([_shards(syn)[0], Shard("gpu", other)])


def test_merge_rejects_conflicting_overlap(syn):
    """One case with different results in two shards is an error naming the case."""
    one = syn.artifact([syn.record("a")])
    two = syn.artifact(
        [syn.record("a", status=Status.FAILED, mismatch="x")], started_at=LATER
    )
    with pytest.raises(MergeError) as info:
        merge_artifacts([Shard("s1", one), Shard("s2", two)])
    assert "case 'opinfo/a/forward/float32/0' is failed here but passed in s1" in str(
        info.value
    )


def test_merge_rejects_same_status_different_details(syn):
    """Two different failures of one case are also a conflict, not a silent pick."""
    one = syn.artifact([syn.record("a", status=Status.FAILED, mismatch="x")])
    two = syn.artifact(
        [syn.record("a", status=Status.FAILED, mismatch="y")], started_at=LATER
    )
    with pytest.raises(MergeError, match="different results"):
        merge_artifacts([Shard("s1", one), Shard("s2", two)])


def test_merge_accepts_identical_overlap(syn):
    """The same result for one case in two shards (timing aside) merges into one."""
    one = syn.artifact([syn.record("a", duration_s=0.1, worker="gw0")])
    two = syn.artifact(
        [syn.record("a", duration_s=0.3, worker="gw1")],
        started_at=LATER,  # another run, not the same one twice
    )
    merged = merge_artifacts([Shard("s1", one), Shard("s2", two)])
    assert len(merged.records) == 1


def test_filtered_by_selection_gives_way(syn):
    """A case another shard's selection left out gives way to the shard that ran it."""
    left_out = syn.record(
        "a",
        status=Status.NOT_RUN,
        source=None,
        not_run_reason=NotRunReason.FILTERED_BY_SELECTION,
    )
    ran = syn.record("a", status=Status.FAILED, mismatch="x")
    for order in ([left_out, ran], [ran, left_out]):
        shards = [Shard(f"s{i}", syn.artifact([rec])) for i, rec in enumerate(order)]
        merged = merge_artifacts(shards)
        assert [r.status for r in merged.records] == [Status.FAILED]


def test_other_not_run_reasons_conflict(syn):
    """A not_run for a real reason against an executed result is still a conflict."""
    excluded = syn.record(
        "a",
        status=Status.NOT_RUN,
        source=None,
        not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
    )
    with pytest.raises(MergeError, match="different results"):
        merge_artifacts(
            [
                Shard("s1", syn.artifact([excluded])),
                Shard("s2", syn.artifact([syn.record("a")], started_at=LATER)),
            ]
        )


def test_merge_needs_one_run_key_or_an_explicit_one(syn):
    """Shards with different run keys need --run-key; with it they merge."""
    one = syn.artifact([syn.record("a")])
    two = syn.artifact([syn.record("b")], run_key="simdev_other")
    shards = [Shard("s1", one), Shard("s2", two)]
    with pytest.raises(MergeError, match="different run keys"):
        merge_artifacts(shards)
    merged = merge_artifacts(shards, run_key="simdev_merged")
    assert merged.metadata.run_key == "simdev_merged"


def test_merge_of_nothing_is_an_error():
    """Merging no shards is an error, not an empty result."""
    with pytest.raises(MergeError, match="no shards"):
        merge_artifacts([])


def test_partial_shard_makes_partial_result(syn):
    """One interrupted shard makes the merged result say it did not complete."""
    shards = _shards(syn)
    partial = syn.artifact([syn.record("x")], completed_normally=False, ended_at=None)
    merged = merge_artifacts([*shards, Shard("s3", partial)])
    assert merged.metadata.completed_normally is False
    assert merged.metadata.ended_at is None


def test_merge_paths_writes_history_and_copies_evidence(tmp_path, syn):
    """merge_paths writes one canonical history and brings crash and probe files along."""
    dirs = []
    for index, shard in enumerate(_shards(syn), start=1):
        d = tmp_path / f"m{index}" / "results"
        d.mkdir(parents=True)
        syn.write(d, shard.artifact)
        dirs.append(d)
    crashes = dirs[1] / "simdev_x86-64-2cpu_crashes"
    crashes.mkdir()
    (crashes / "d.json").write_text(
        json.dumps({"case_id": "opinfo/d/forward/float32/0"})
    )
    (dirs[0] / "simdev_x86-64-2cpu_harness_probe_failures_7.jsonl").write_text("{}\n")
    out = tmp_path / "merged"
    target = merge_paths(dirs, out)
    assert target.parent.name == "simdev_x86-64-2cpu_history"
    loaded = load_result(out)
    assert len(loaded.records) == 4
    assert (out / "simdev_x86-64-2cpu_crashes" / "d.json").exists()
    assert (out / "simdev_x86-64-2cpu_harness_probe_failures_shard1-7.jsonl").exists()
    assert "m1" not in target.read_text()  # shard names carry no directory paths


def test_cli_merge_and_errors(tmp_path, syn, capsys):
    """The CLI merges shards (exit 0) and reports a mismatch as one line (exit 2)."""
    dirs = []
    for index, shard in enumerate(_shards(syn), start=1):
        d = tmp_path / f"s{index}"
        d.mkdir()
        syn.write(d, shard.artifact)
        dirs.append(str(d))
    assert main(["merge", *dirs, "--out", str(tmp_path / "out")]) == 0
    assert "simdev_x86-64-2cpu_history" in capsys.readouterr().out
    bad = tmp_path / "bad"
    bad.mkdir()
    syn.write(bad, syn.artifact([syn.record("q")], torch_version="2.12.0"))
    assert main(["merge", *dirs, str(bad), "--out", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PyTorch version '2.12.0'" in err
    assert not (tmp_path / "out2").exists()


def test_cli_merge_rejects_unsafe_run_key(tmp_path, syn, capsys):
    """A --run-key that is not a plain token is refused before writing anything."""
    d = tmp_path / "s"
    d.mkdir()
    syn.write(d, syn.artifact([syn.record()]))
    out = tmp_path / "out"
    assert main(["merge", str(d), "--out", str(out), "--run-key", "../x"]) == 2
    assert "not a plain token" in capsys.readouterr().err
    assert not out.exists()


def _sharded(syn, spec, name):  # type: ignore[no-untyped-def]
    art = syn.artifact([syn.record(name)], options={"shard": spec})
    return Shard(spec, art)


def test_missing_shards_make_an_incomplete_result(syn):
    """Merging 2 of 3 shards says which shard is missing and is not complete."""
    merged = merge_artifacts([_sharded(syn, "1/3", "a"), _sharded(syn, "3/3", "b")])
    assert merged.metadata.completed_normally is False
    assert merged.diagnostics["missing_shards"] == ["2/3"]


def test_all_shards_present_is_complete(syn):
    """Every shard of the partition present: the merge is complete."""
    merged = merge_artifacts([_sharded(syn, "2/2", "a"), _sharded(syn, "1/2", "b")])
    assert merged.metadata.completed_normally is True
    assert "missing_shards" not in merged.diagnostics


def test_mixed_partitions_are_an_error(syn):
    """Shards of a /2 and a /3 partition cannot be merged."""
    with pytest.raises(MergeError, match=r"different partitions \(/2, /3\)"):
        merge_artifacts([_sharded(syn, "1/2", "a"), _sharded(syn, "2/3", "b")])


def test_bad_shard_option_is_named(syn):
    """A shard option that is not I/N is an error naming the shard."""
    with pytest.raises(MergeError, match="shard option 'x' is not I/N"):
        merge_artifacts([_sharded(syn, "x", "a")])


def test_merge_of_a_shard_with_itself_is_an_error(tmp_path, syn):
    """The same results directory twice, or two spellings of it, is refused by name."""
    shard = tmp_path / "shard1"
    shard.mkdir()
    syn.write(shard, syn.artifact([syn.record("a"), syn.record("b")]))
    for second in (shard, tmp_path / "." / "shard1"):
        with pytest.raises(MergeError, match=r"same artifact as .*shard1"):
            merge_paths([shard, second], tmp_path / "out")


def test_overlapping_cases_of_one_run_are_an_error(syn):
    """Two copies of one run (same key, start and command) sharing cases are refused."""
    one = syn.artifact([syn.record("a"), syn.record("b")])
    copy = syn.artifact([syn.record("b"), syn.record("c")])
    with pytest.raises(MergeError, match=r"copy.*same run as orig.*'opinfo/b/"):
        merge_artifacts([Shard("orig", one), Shard("copy", copy)])


def _subset_shard(syn, spec, name, outside, **options):  # type: ignore[no-untyped-def]
    opts = {"shard": spec, "op_globs": ["add", "mul"], **options}
    art = syn.artifact([syn.record(name)], options=opts, outside=outside)
    return Shard(spec, art)


def test_outside_counts_of_one_partition_are_summed(syn):
    """Sharded subset runs count disjoint left-out cases: the merge adds them up."""
    merged = merge_artifacts(
        [
            _subset_shard(syn, "1/2", "a", {"filtered_by_selection": 3}),
            _subset_shard(
                syn, "2/2", "b", {"filtered_by_selection": 4, "level_filtered": 1}
            ),
        ]
    )
    assert merged.metadata.outside == {"filtered_by_selection": 7, "level_filtered": 1}
    assert "outside_not_merged" not in merged.diagnostics


def test_outside_counts_survive_the_written_history(tmp_path, syn):
    """The summed counts are in the canonical file merge writes, not only in memory."""
    dirs = []
    for spec, name, count in (("1/2", "a", 5), ("2/2", "b", 6)):
        shard = _subset_shard(syn, spec, name, {"filtered_by_selection": count})
        folder = tmp_path / name
        folder.mkdir()
        syn.write(folder, shard.artifact)
        dirs.append(folder)
    merge_paths(dirs, tmp_path / "out")
    loaded = load_result(tmp_path / "out")
    assert loaded.metadata.outside == {"filtered_by_selection": 11}


def test_outside_counts_of_different_selections_are_not_summed(syn):
    """Shards that selected differently may count the same cases: none, and why."""
    merged = merge_artifacts(
        [
            _subset_shard(syn, "1/2", "a", {"filtered_by_selection": 3}),
            _subset_shard(syn, "2/2", "b", {"filtered_by_selection": 4}, level=2),
        ]
    )
    assert merged.metadata.outside == {}
    assert "selected differently" in merged.diagnostics["outside_not_merged"]
    assert "(level)" in merged.diagnostics["outside_not_merged"]


def test_outside_counts_of_unsharded_or_repeated_shards_are_not_summed(syn):
    """Two unsharded runs, or one shard index twice, would count cases twice."""
    one = syn.artifact([syn.record("a")], outside={"filtered_by_selection": 3})
    two = syn.artifact(
        [syn.record("b")], outside={"filtered_by_selection": 3}, started_at=LATER
    )
    twice = [
        _subset_shard(syn, "1/2", "a", {"filtered_by_selection": 3}),
        _subset_shard(syn, "1/2", "b", {"filtered_by_selection": 3}),
    ]
    for shards in ([Shard("one", one), Shard("two", two)], twice):
        merged = merge_artifacts(shards)
        assert merged.metadata.outside == {}
        assert "not distinct parts" in merged.diagnostics["outside_not_merged"]


def test_full_runs_have_no_outside_diagnostic(syn):
    """Shards that recorded every case have nothing to count: no diagnostic."""
    merged = merge_artifacts(_shards(syn))
    assert merged.metadata.outside == {}
    assert "outside_not_merged" not in merged.diagnostics
