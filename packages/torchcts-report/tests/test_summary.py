"""The one-pass summary gives the same numbers as counting record by record."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_factories import Synthetic
from torchcts_report.checks import check_artifact
from torchcts_report.findings import category_of
from torchcts_report.summary import (
    Cell,
    capability_label,
    dtype_of,
    group_tally,
    level_of,
    not_run_reasons,
    source_of,
    status_totals,
    summarise,
)
from torchcts_report.tallies import (
    NONE_LABEL,
    SELECTION_REASONS,
    capability_of,
)
from torchcts_report.triage import _key_of, triage_of
from torchcts_schema import (
    ArtifactError,
    CaseRecord,
    CrashInfo,
    CrashKind,
    ExpectedSource,
    NextFix,
    NotRunReason,
    RunArtifact,
    RunMetadata,
    Status,
)


def _record(i, status, reason, fix, op, dtype, variant, suite, level, extra, detail):  # type: ignore[no-untyped-def]
    return Synthetic.record(
        op,
        dtype,
        status,
        variant=variant,
        sample=i,
        suite=suite,
        level=level,
        source=ExpectedSource.CPU_REFERENCE if i % 3 else None,
        not_run_reason=reason,
        next_fix=fix,
        extra=extra,
        detail=detail,
        mismatch="values differ at 3 of 12" if status is Status.FAILED else None,
    )


_records = st.builds(
    _record,
    st.integers(0, 5),  # a small sample range repeats case ids now and then
    st.sampled_from(list(Status)),
    st.sampled_from([None, *NotRunReason]),
    st.sampled_from([None, *NextFix]),
    st.sampled_from(["add", "mul", "views"]),
    st.sampled_from([None, "float32", "int64"]),
    st.sampled_from(["forward", "backward", "view_of"]),
    st.sampled_from(["opinfo", "views"]),
    st.integers(1, 3),
    st.sampled_from([{}, {"capability": "rng"}, {"note": 1}]),
    # a detail that normalises to a reason's name shares the reason's triage pool
    st.sampled_from([None, "dtype_not_supported", "left out 1", "left out 2"]),
)


def _naive_tally(records: list[CaseRecord], label_of) -> dict[tuple[str, Status], int]:  # type: ignore[no-untyped-def]
    return dict(Counter((label_of(r), r.status) for r in records))


def _rows(rows) -> dict[tuple[str, Status], int]:  # type: ignore[no-untyped-def]
    return {
        (row.label, status): n
        for row in rows
        for status, n in zip(Status, row.counts, strict=True)
        if n
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(_records, max_size=40))
def test_summary_counts_match_record_by_record_counts(records):
    """Status, source, capability, dtype, level, reason and grid counts are exact."""
    summary = summarise(records)
    assert status_totals(summary) == {
        s: sum(r.status is s for r in records) for s in Status
    }
    for label_of_group, label_of_record in (
        (
            source_of,
            lambda r: r.expected_source.value if r.expected_source else NONE_LABEL,
        ),
        (capability_label, capability_of),
        (dtype_of, lambda r: r.dtype or NONE_LABEL),
        (level_of, lambda r: str(r.level)),
    ):
        rows = group_tally(summary, label_of_group)
        assert _rows(rows) == _naive_tally(records, label_of_record)
        assert [r.label for r in rows] == sorted(
            {r.label for r in rows}, key=lambda x: (x == NONE_LABEL, x)
        )
    assert not_run_reasons(summary) == dict(
        Counter(
            r.not_run_reason.value if r.not_run_reason else NONE_LABEL
            for r in records
            if r.status is Status.NOT_RUN
        )
    )
    cells = Counter(
        Cell(
            r.op,
            r.dtype,
            r.status,
            r.status is Status.NOT_RUN and r.not_run_reason in SELECTION_REASONS,
        )
        for r in records
    )
    assert summary.cells == dict(cells)
    assert summary.executed == [r for r in records if r.status is not Status.NOT_RUN]


def _naive_triage(records: list[CaseRecord]) -> list[tuple[NextFix, int, list]]:  # type: ignore[type-arg]
    # the record-by-record triage the summary replaced: every record keyed one by one
    out = []
    for category in NextFix:
        members = [r for r in records if category_of(r) is category]
        groups: dict[tuple[str, ...], list[str]] = {}
        for record in members:
            groups.setdefault(_key_of(category, record), []).append(record.case_id)
        selection = {r.value for r in SELECTION_REASONS}
        ranked = sorted(
            groups.items(), key=lambda kv: (kv[0][0] in selection, -len(kv[1]), kv[0])
        )
        actions = [(len(ids), min(ids)) for _, ids in ranked]
        out.append((category, len(members), actions))
    return out


_META = RunMetadata(
    run_key="k",
    device="simdev",
    hardware_key="h",
    backend="b",
    os="o",
    python="p",
    torch_version="t",
    torchcts_version="v",
    manifest_digest="d",
    command="torchcts-run --manifest m.py",
    started_at="2026-11-30T01:00:00+00:00",
    ended_at=None,
    completed_normally=True,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_records, max_size=40))
def test_triage_from_summary_matches_record_by_record_triage(records):
    """Next-fix counts, action sizes and examples equal the record-by-record ones."""
    triage = triage_of(summarise(records), _META, [])
    got = [
        (t.category, t.count, [(a.count, a.example) for a in t.actions]) for t in triage
    ]
    assert got == _naive_triage(records)


def test_counted_example_is_the_smallest_case_id(syn):
    """The example of a counted reason is its smallest case id, wherever it sits."""
    records = [
        syn.record(
            op,
            status=Status.NOT_RUN,
            source=None,
            not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
        )
        for op in ("zeta", "abs", "mul")
    ]
    summary = summarise([syn.record("add"), *records])
    assert summary.first_case_id(NotRunReason.DTYPE_NOT_SUPPORTED) == (
        "opinfo/abs/forward/float32/0"
    )
    assert summary.singles == []  # passed needs no action; the rest only count


def test_reasonless_case_joins_the_pool_its_signature_names(syn):
    """A not_run case without a reason whose detail reads like one shares its action."""
    counted = syn.record(
        "zeta",
        status=Status.NOT_RUN,
        source=None,
        not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
    )
    reasonless = syn.record(
        "abs", status=Status.NOT_RUN, source=None, detail="dtype_not_supported"
    )
    triage = triage_of(summarise([counted, reasonless]), _META, [])
    support = next(t for t in triage if t.category is NextFix.SUPPORT_SURFACE)
    assert [(a.count, a.example) for a in support.actions] == [(2, reasonless.case_id)]


def test_declared_capability_is_counted_under_its_name(syn):
    """A capability recorded in extra wins over the one the variant implies."""
    records = [syn.record("add"), syn.record("mul", extra={"capability": "rng"})]
    rows = group_tally(summarise(records), capability_label)
    assert [(r.label, r.total) for r in rows] == [("forward", 1), ("rng", 1)]


def test_check_accepts_legal_types_off_the_fast_path(syn):
    """An int duration, a crash and a worker name are legal and pass the check."""
    mixed = syn.mixed()
    records = [replace(mixed[0], duration_s=2, worker="gw0"), *mixed]
    check_artifact(RunArtifact.from_records(syn.metadata(), records), "a.json")


def test_check_names_the_first_wrong_record_among_many(syn):
    """A wrong type deep in the not_run records is found and named."""
    good = [
        syn.record(
            f"op{i}",
            status=Status.NOT_RUN,
            source=None,
            not_run_reason=NotRunReason.LEVEL_FILTERED,
        )
        for i in range(500)
    ]
    bad = replace(good[321], detail=7)  # type: ignore[arg-type]
    art = RunArtifact.from_records(syn.metadata(), [*good[:321], bad, *good[322:]])
    with pytest.raises(ArtifactError, match=r"op321/.*detail has the wrong type"):
        check_artifact(art, "a.json")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"crash": CrashInfo(CrashKind.SIGNAL, exit_code="x")}, "crash.exit_code"),  # type: ignore[arg-type]
        ({"level": True}, "level has the wrong type"),
        ({"worker": 3}, "worker has the wrong type"),
    ],
)
def test_check_names_a_wrong_field_among_plainly_typed_records(syn, change, message):
    """Records with workers and tolerances pass field by field; a bad crash field,
    a bool level or an int worker among them is still found and named."""
    good = [syn.record(f"op{i}", worker=f"gw{i % 2}") for i in range(300)]
    check_artifact(RunArtifact.from_records(syn.metadata(), good), "a.json")
    bad = replace(good[123], **change)
    art = RunArtifact.from_records(syn.metadata(), [*good[:123], bad, *good[124:]])
    with pytest.raises(ArtifactError, match=rf"op123/.*{message}"):
        check_artifact(art, "a.json")
