"""`Selection.declined_only` runs exactly what the manifest declines, naming why."""

from __future__ import annotations

from collections.abc import Callable

from torchcts_cases import Selection, select_cases
from torchcts_schema import (
    CAPABILITY_NAMES,
    Decline,
    Manifest,
    NotRunReason,
)

MakeManifest = Callable[..., Manifest]
OPS = ("abs", "mul", "neg", "add", "where")
DECLINED = {
    NotRunReason.OP_EXCLUDED,
    NotRunReason.DTYPE_NOT_SUPPORTED,
    NotRunReason.CAPABILITY_NOT_DECLARED,
}
KEYS = {
    "DTYPES": {"float32": True, "int64": False, "float16": "^(add|neg)$"},
    "CAPABILITIES": ["forward", "views"],
    "OPS": {"exclude": {"abs": "thought broken"}},
    "LEVEL": 2,
}


def _ids(specs: object) -> set[str]:
    return {s.case_id for s in specs}  # type: ignore[attr-defined]


def test_declined_only_is_the_complement_within_the_open_manifest(
    make_manifest: MakeManifest,
) -> None:
    """Declined cases run, the manifest's own do not; together they are what a
    manifest declining nothing runs, and nothing else."""
    manifest = make_manifest(**KEYS)
    normal = select_cases(manifest, Selection(op_globs=OPS))
    declined = select_cases(manifest, Selection(op_globs=OPS, declined_only=True))
    open_manifest = make_manifest(
        DTYPES=dict.fromkeys(KEYS["DTYPES"], True),
        CAPABILITIES=list(CAPABILITY_NAMES),
        LEVEL=2,
    )
    everything = _ids(select_cases(open_manifest, Selection(op_globs=OPS)).runnable)
    declined_ids = _ids(declined.runnable)
    normal_declined = {
        r.case_id for r in normal.not_run if r.not_run_reason in DECLINED
    }
    assert declined_ids == normal_declined & everything
    assert declined_ids.isdisjoint(_ids(normal.runnable))
    assert declined_ids | _ids(normal.runnable) == everything
    run_by_manifest = {
        r.case_id
        for r in declined.not_run
        if r.not_run_reason is NotRunReason.FILTERED_BY_SELECTION
    }
    assert _ids(normal.runnable) <= run_by_manifest
    assert set(declined.declined) == declined_ids


def test_every_declining_entry_is_named(make_manifest: MakeManifest) -> None:
    """A case two entries decline carries both; an unmatched regex names its op."""
    manifest = make_manifest(**KEYS)
    declined = select_cases(
        manifest, Selection(op_globs=OPS, declined_only=True)
    ).declined
    assert declined["opinfo/abs/forward/int64/0"] == (
        Decline("ops_exclude", "abs"),
        Decline("dtype", "int64"),
    )
    assert declined["opinfo/abs/forward/float32/0"] == (Decline("ops_exclude", "abs"),)
    assert declined["opinfo/mul/forward/float16/0"] == (
        Decline("dtype_regex", "float16", "mul"),
    )
    method = [k for k in declined if "/method/float32/" in k]
    assert method and all(
        Decline("capability", "method") in declined[k] for k in method
    )


def test_filters_count_what_they_leave_out_per_entry(
    make_manifest: MakeManifest,
) -> None:
    """An op filter leaves int64 cases of other ops out (counted for DTYPES int64)
    but no case of the excluded op, which the filter selects whole."""
    manifest = make_manifest(**KEYS)
    selected = select_cases(
        manifest,
        Selection(op_globs=("abs",), declined_only=True, record_outside=False),
    )
    outside = selected.declined_outside
    assert outside[(Decline("dtype", "int64"), "op")] > 0
    assert not [k for k in outside if k[0] == Decline("ops_exclude", "abs")]
    assert all(n > 0 for n in outside.values())
    # the filter matches the generated abs_ in-place case by its functional packet
    assert {s.op for s in selected.runnable} == {"abs", "abs_"}
