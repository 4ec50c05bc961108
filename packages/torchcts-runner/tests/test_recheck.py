"""--recheck-exclusions: entry verdicts, the proposed patch, the plan, the guards."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from runner_helpers import run_args, use_fake_source, write_manifest
from torchcts_cases import Selection, select_cases
from torchcts_isolate import Ledger, LedgerRule
from torchcts_runner.casesource import load_case_source
from torchcts_runner.known_crash_match import KnownCrashMatcher
from torchcts_runner.recheck_patch import build_patch
from torchcts_runner.recheck_plan import RecheckPlan, narrowed_by
from torchcts_runner.recheck_verdicts import EntryVerdict, judge_entries
from torchcts_runner.run_folder import subset_folder
from torchcts_runner.selection import CasePlan, SelectionError, plan_cases
from torchcts_schema import (
    CaseRecord,
    CaseSpec,
    Decline,
    ExpectedSource,
    SelectedCases,
    Status,
    load_known_crash_rules,
    load_manifest,
    make_case_id,
    node_id_for_case,
    rule_from_dict,
)

EXCLUDE = Decline("ops_exclude", "abs")
INT64 = Decline("dtype", "int64")
MANIFEST = '''"""A manifest the recheck tests edit."""
DEVICE = "simdev"
BACKEND_NAME = "simdev"
DTYPES = {"float32": True, "int64": False}
CAPABILITIES = ["forward"]
OPS = {
    "exclude": {
        "abs": "thought broken",  # a comment on its line
        "to_sparse": "dense only",
    }
}
'''


def _record(case_id: str, status: Status) -> CaseRecord:
    op = case_id.split("/")[1]
    return CaseRecord(
        case_id=case_id,
        node_id=node_id_for_case(case_id),
        op=op,
        variant="forward",
        dtype=case_id.split("/")[3],
        sample=0,
        level=1,
        status=status,
        expected_source=ExpectedSource.CPU_REFERENCE,
        mismatch="values differ" if status is Status.FAILED else None,
    )


def _spec(case_id: str) -> CaseSpec:
    suite, op, variant, dtype, sample = case_id.split("/")
    source = ExpectedSource.CPU_REFERENCE
    return CaseSpec(case_id, suite, op, variant, dtype, int(sample), 1, source, variant)


def _case(op: str, dtype: str) -> str:
    return make_case_id("opinfo", op, "forward", dtype, 0)


def _verdicts(
    declined: dict[str, tuple[Decline, ...]],
    statuses: dict[str, Status],
    outside: dict[tuple[Decline, str], int] | None = None,
) -> dict[Decline, EntryVerdict]:
    records = {c: _record(c, s) for c, s in statuses.items()}
    return {v.decline: v for v in judge_entries(declined, records, outside or {})}


def test_an_entry_is_judged_by_the_cases_its_removal_would_run() -> None:
    """abs int64 fails but stays declined by DTYPES int64 (which mul int64 fails
    too): OPS exclude abs is removable on abs float32 alone; int64 stays."""
    abs32, abs64, mul64 = (
        _case("abs", "float32"),
        _case("abs", "int64"),
        _case("mul", "int64"),
    )
    declined = {abs32: (EXCLUDE,), abs64: (EXCLUDE, INT64), mul64: (INT64,)}
    got = _verdicts(
        declined,
        {abs32: Status.PASSED, abs64: Status.FAILED, mul64: Status.FAILED},
    )
    exclude, int64 = got[EXCLUDE], got[INT64]
    assert (exclude.verdict, exclude.would_run) == ("remove", [abs32])
    assert exclude.not_passed == [abs64]
    assert (int64.verdict, int64.not_passed) == ("keep", [abs64, mul64])


def test_unproven_missing_narrow_and_confirm() -> None:
    """Cases only a kept entry also declines prove nothing; a case without a record
    never passes; the filters' leftovers make an entry narrow or confirm."""
    cap = Decline("capability", "method")
    f16 = Decline("dtype", "float16")
    a, b, c, d = (_case(op, "float16") for op in ("abs", "mul", "neg", "add"))
    declined = {a: (cap, f16), b: (f16,), c: (cap,), d: (EXCLUDE,)}
    outside = {(cap, "op"): 4, (EXCLUDE, "dtype"): 2}
    got = _verdicts(
        {**declined, _case("sub", "float16"): (f16,)},
        {a: Status.PASSED, b: Status.PASSED, c: Status.PASSED, d: Status.PASSED},
    )
    assert got[f16].verdict == "keep"  # sub has no record
    got = _verdicts(declined, dict.fromkeys(declined, Status.PASSED), outside)
    assert got[cap].verdict == "confirm"
    assert got[EXCLUDE].verdict == "confirm"
    narrow = _verdicts(
        declined, dict.fromkeys(declined, Status.PASSED), {(f16, "op"): 9}
    )[f16]
    assert (narrow.verdict, narrow.ops) == ("narrow", ("abs", "mul"))
    kept = _verdicts(
        {a: (cap, f16), b: (f16,)}, {a: Status.PASSED, b: Status.UNSUPPORTED}
    )
    assert kept[f16].verdict == "keep"
    assert kept[cap].verdict == "unproven"
    assert kept[cap].stays_with == (f16,)


def _rule(rule_id: str, glob: str) -> dict[str, object]:
    return {
        "id": rule_id,
        "backend": "simdev",
        "match": {"case_glob": glob},
        "expected_signal": "SIGSEGV",
        "reason": "crashed once",
        "owner": "tests",
        "repro": "torchcts-run ...",
        "review_after": "2030-01-01",
    }


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch tool")
def test_patch_applies_and_the_manifest_no_longer_declines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The diff applies with patch -p1, the manifest and ledger still load, the
    removed entry declines nothing any more and the kept one still does; the files
    themselves are untouched until a person applies it."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "manifest.py"
    path.write_text(MANIFEST, encoding="utf-8")
    ledger = tmp_path / "known_segfaults.json"
    rules = [_rule("mul-f32", "opinfo/mul/*/float32/*"), _rule("neg", "opinfo/neg/*")]
    ledger.write_text(json.dumps({"rules": rules}, indent=2), encoding="utf-8")
    before = path.read_bytes(), ledger.read_bytes()
    abs32, abs64 = _case("abs", "float32"), _case("abs", "int64")
    mul32 = _case("mul", "float32")
    crash = Decline("known_crash", "mul-f32")
    declined = {abs32: (EXCLUDE,), abs64: (EXCLUDE, INT64), mul32: (crash,)}
    records = {
        abs32: _record(abs32, Status.PASSED),
        abs64: _record(abs64, Status.FAILED),
        mul32: _record(mul32, Status.PASSED),
    }
    verdicts = judge_entries(declined, records, {})
    patch = build_patch(
        verdicts, path, "manifest.py", {"mul-f32": "known_segfaults.json"}
    )
    assert (path.read_bytes(), ledger.read_bytes()) == before
    assert patch.packaged_rules == []
    done = subprocess.run(
        ["patch", "-p1", "--batch"],
        input=patch.text,
        text=True,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r.id for r in load_known_crash_rules(ledger)] == ["neg"]
    patched = load_manifest(path)
    assert patched.ops_exclude == {"to_sparse": "dense only"}
    assert "a comment on its line" not in path.read_text(encoding="utf-8")
    after = select_cases(
        patched, Selection(op_globs=("abs",), declined_only=True)
    ).declined
    assert after and all(EXCLUDE not in d for d in after.values())
    assert after[abs64] == (INT64,)


def test_packaged_rules_are_listed_not_patched(tmp_path: Path) -> None:
    """A rule shipped with TorchCTS cannot be edited here: it is listed instead."""
    path = tmp_path / "manifest.py"
    path.write_text(MANIFEST, encoding="utf-8")
    case = _case("mul", "float32")
    crash = Decline("known_crash", "shipped")
    verdicts = judge_entries({case: (crash,)}, {case: _record(case, Status.PASSED)}, {})
    patch = build_patch(verdicts, path, "manifest.py", {"shipped": "packaged"})
    assert (patch.text, patch.packaged_rules) == ("", ["shipped"])


def test_narrowed_by_says_which_filters_may_leave_a_rules_cases_out() -> None:
    """A plain segment the filter admits narrows nothing; a glob or a surface does."""
    rule = rule_from_dict(_rule("r", "opinfo/abs/*/float16/*"))
    assert narrowed_by(rule, {"op_globs": ("ab*",), "dtypes": ("float16",)}) == []
    assert narrowed_by(rule, {"op_globs": ("mul",)}) == ["op"]
    assert narrowed_by(rule, {"dtypes": ("float32",), "suites": ("opinfo",)}) == [
        "dtype"
    ]
    wide = rule_from_dict(_rule("w", "opinfo/*/forward/*/*"))
    assert narrowed_by(wide, {"op_globs": ("abs",)}) == ["op"]
    assert narrowed_by(wide, {}) == []


def test_plan_adds_known_crash_cases_of_the_normal_selection(tmp_path: Path) -> None:
    """A rule covering cases the manifest runs adds them to the recheck (declined by
    the rule); they are no longer counted as outside the selection."""
    path = tmp_path / "manifest.py"
    path.write_text(MANIFEST, encoding="utf-8")
    manifest = load_manifest(path)
    rule = rule_from_dict(_rule("mul-f32", "opinfo/mul/forward/float32/*"))
    matcher = KnownCrashMatcher(
        Ledger((LedgerRule(rule, "known_segfaults.json", 0),)),
        manifest,
        torch_version="2.13.0",
        hardware_key=None,
    )
    source = load_case_source("torchcts_cases")

    def plan(recheck: RecheckPlan) -> CasePlan:
        return plan_cases(
            source,
            manifest,
            level=None,
            dtypes=(),
            suites=(),
            op_globs=("abs", "mul"),
            shard=None,
            record_outside=False,
            recheck=recheck,
        )

    plain, plan = plan(RecheckPlan(None)), plan(RecheckPlan(matcher))
    added = [s.case_id for s in plan.planned if s.case_id not in plain.planned_ids]
    assert added and all(c.startswith("opinfo/mul/forward/float32/") for c in added)
    assert added and all(
        plan.declined[c] == (Decline("known_crash", "mul-f32"),) for c in added
    )
    assert {s.case_id for s in plain.planned} == set(plan.planned_ids) - set(added)
    assert plan.rule_sources == {"mul-f32": "known_segfaults.json"}
    key = ("opinfo", "mul", "float32", "filtered_by_selection")
    assert plan.outside.get(key, 0) == plain.outside.get(key, 0) - len(added)


def test_a_source_that_cannot_invert_is_refused() -> None:
    """A case source that ignores declined_only would rerun the manifest's own
    cases as if declined: refused, naming the source."""

    spec = _spec("fake/ok/forward/float32/0")
    selected = SelectedCases(runnable=[spec])
    source = type("Source", (), {"name": "fakecases"})()
    with pytest.raises(SelectionError, match="'fakecases' cannot select"):
        RecheckPlan(None)(source, None, selected, {})  # type: ignore[arg-type]


def test_recheck_has_its_own_folder() -> None:
    """A recheck writes under selections/recheck-exclusions[_<filters>]."""

    def folder(*ops: str) -> str | None:
        return subset_folder(
            node_ids=(),
            op_globs=ops,
            dtypes=(),
            suites=(),
            keyword="",
            markexpr="",
            recheck=True,
        )

    assert folder() == "selections/recheck-exclusions"
    assert folder("abs", "mul") == "selections/recheck-exclusions_op-abs+mul"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--torchcts-isolate", "none"), "--isolate none would run them"),
        (("-k", "ok"), "not -k"),
    ],
)
def test_recheck_refuses_in_process_crashes_and_unaccountable_filters(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    extra: tuple[str, ...],
    message: str,
) -> None:
    """Known crashes never run in process; -k, -m, node ids and shards are refused."""
    use_fake_source(pytester, monkeypatch)
    write_manifest(pytester, ["ok"])
    result = pytester.runpytest_subprocess(
        *run_args("--torchcts-recheck-exclusions", *extra)
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
