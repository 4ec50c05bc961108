"""The known-crash rule schema: loading, validation errors, matching and round trips."""

from __future__ import annotations

import datetime as dt
import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import (
    ArtifactError,
    CrashEvidence,
    KnownCrashError,
    KnownCrashRule,
    load_known_crash_rules,
    rule_from_dict,
    rule_to_dict,
    rules_to_json,
    torch_minor_family,
    validate_rules,
)


def raw_rule(**overrides: Any) -> dict[str, Any]:
    """A valid rule's JSON form with optional overrides (None deletes a key)."""
    base: dict[str, Any] = {
        "id": "simdev-add-f16",
        "backend": "simdev",
        "match": {"case_glob": "opinfo/add/*/float16/*"},
        "constraints": {"dtype": "float16", "torch": ">=2.12,<2.14"},
        "expected_signal": "SIGSEGV",
        "reason": "simdev segfault profile kills add in float16",
        "owner": "simdev team",
        "repro": "torchcts-run --case opinfo/add/forward/float16/0",
        "review_after": "2027-01-31",
    }
    for key, value in overrides.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


EVIDENCE = {
    "url": "https://github.com/pytorch/pytorch/issues/142203",
    "summary": "bucketize with scalar input segfaults on mps",
}


def test_evidence_is_optional_and_round_trips(tmp_path: Path) -> None:
    """A rule may cite its public report; it loads into `CrashEvidence` and writes
    back unchanged, and a rule without one still loads."""
    with_evidence = raw_rule(evidence=EVIDENCE)
    (rule,) = load_known_crash_rules(write(tmp_path, [with_evidence]))
    assert rule.evidence == CrashEvidence(EVIDENCE["url"], EVIDENCE["summary"])
    assert rule_to_dict(rule) == with_evidence
    (bare,) = load_known_crash_rules(write(tmp_path, [raw_rule()]))
    assert bare.evidence is None and "evidence" not in rule_to_dict(bare)


def write(tmp_path: Path, body: Any) -> Path:
    """Write a ledger file and return its path."""
    path = tmp_path / "known_segfaults.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def problems_of(tmp_path: Path, body: Any) -> list[str]:
    """The problems a ledger body is rejected with."""
    with pytest.raises(KnownCrashError) as info:
        load_known_crash_rules(write(tmp_path, body))
    assert str(tmp_path / "known_segfaults.json") in str(info.value)
    return info.value.problems


def test_valid_ledger_loads_with_every_field(tmp_path: Path) -> None:
    """A full rule loads into a KnownCrashRule carrying each field."""
    (rule,) = load_known_crash_rules(write(tmp_path, {"rules": [raw_rule()]}))
    assert rule.id == "simdev-add-f16"
    assert rule.case_glob == "opinfo/add/*/float16/*"
    assert rule.match_kind == "case_glob"
    assert (rule.dtype, rule.torch, rule.hardware_key) == (
        "float16",
        ">=2.12,<2.14",
        None,
    )


def test_bare_list_is_accepted(tmp_path: Path) -> None:
    """A ledger may be a plain list of rules."""
    assert len(load_known_crash_rules(write(tmp_path, [raw_rule()]))) == 1


def test_round_trip_through_json(tmp_path: Path) -> None:
    """rules_to_json then load gives back equal rules."""
    rules = [
        rule_from_dict(raw_rule()),
        rule_from_dict(raw_rule(id="b", match={"surface": "aten::mul.*"})),
        rule_from_dict(
            raw_rule(id="c", match={"node_id": "torchcts::x"}, constraints={})
        ),
    ]
    path = tmp_path / "l.json"
    path.write_text(rules_to_json(rules), encoding="utf-8")
    assert load_known_crash_rules(path) == rules
    assert rule_to_dict(rules[0]) == raw_rule()


def test_duplicate_id_is_an_error_naming_both_rules(tmp_path: Path) -> None:
    """Two rules with one id are rejected, naming the later index and the first."""
    (problem,) = problems_of(tmp_path, [raw_rule(), raw_rule()])
    assert "rule 1 (id 'simdev-add-f16')" in problem
    assert "duplicate id" in problem and "rule 0" in problem


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"id": "has space"}, "'id'"),
        ({"backend": ""}, "'backend'"),
        ({"reason": None}, "'reason' is missing"),
        ({"owner": 3}, "'owner'"),
        ({"expected_signal": "segfault"}, "'expected_signal'"),
        ({"expected_signal": "SIGFOO"}, "'expected_signal': 'SIGFOO' is not a signal"),
        ({"expected_signal": "SIGSEV"}, "'expected_signal': 'SIGSEV' is not a signal"),
        ({"expected_signal": "SIG0"}, "'expected_signal': 'SIG0' is not a signal"),
        ({"review_after": "2027-02-30"}, "'review_after'"),
        ({"review_after": "31/01/2027"}, "'review_after'"),
        ({"match": {}}, "'match'"),
        ({"match": {"case_glob": "a", "surface": "b"}}, "'match'"),
        ({"match": {"regex": "a"}}, "'match.regex'"),
        ({"match": "opinfo/*"}, "'match'"),
        ({"constraints": {"torch": ">=2.12.1"}}, "'constraints.torch'"),
        ({"constraints": {"torch": "~2.13"}}, "'constraints.torch'"),
        ({"constraints": {"cpu": "x"}}, "'constraints.cpu'"),
        ({"constraints": {"dtype": 16}}, "'constraints.dtype'"),
        ({"extra": 1}, "unknown key 'extra'"),
        ({"evidence": "https://github.com/x/y/issues/1"}, "'evidence'"),
        ({"evidence": {"url": "https://github.com/x"}}, "'evidence.summary' is"),
        ({"evidence": {**EVIDENCE, "url": "http://a.org/1"}}, "'evidence.url'"),
        ({"evidence": {**EVIDENCE, "url": "https://a.org/ x"}}, "'evidence.url'"),
        ({"evidence": {**EVIDENCE, "url": "file:///etc/x"}}, "'evidence.url'"),
        ({"evidence": {**EVIDENCE, "summary": "a\nb"}}, "'evidence.summary'"),
        ({"evidence": {**EVIDENCE, "summary": " "}}, "'evidence.summary'"),
        ({"evidence": {**EVIDENCE, "date": "2026"}}, "'evidence.date'"),
    ],
)
def test_each_malformed_key_is_named(
    tmp_path: Path, overrides: dict[str, Any], key: str
) -> None:
    """A malformed rule is rejected with its index, id and the offending key."""
    problems = problems_of(
        tmp_path, {"rules": [raw_rule(id="ok"), raw_rule(**overrides)]}
    )
    assert len(problems) == 1, problems
    assert problems[0].startswith("rule 1")
    assert key in problems[0]


@pytest.mark.parametrize(
    "name",
    sorted(
        {s.name for s in signal.Signals}
        | {"SIGSEGV", "SIGBUS", "SIGINFO", "SIGEMT", "SIGPWR", "SIG99", "timeout"}
    ),
)
def test_every_signal_name_a_crash_can_carry_is_accepted(
    tmp_path: Path, name: str
) -> None:
    """This platform's signal names, the other platform's (SIGINFO, SIGEMT on macOS,
    SIGPWR on Linux), SIG<n> for a number with no name, and the non-signal kinds."""
    path = write(tmp_path, [raw_rule(expected_signal=name)])
    assert load_known_crash_rules(path)[0].expected_signal == name


def test_all_problems_are_collected(tmp_path: Path) -> None:
    """Every problem of every rule is reported at once, not just the first."""
    body = [raw_rule(owner=""), raw_rule(id="x", review_after="soon", match={})]
    assert len(problems_of(tmp_path, body)) == 3


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "line 1 column 2"),
        ('{"rules": {}}', "'rules'"),
        ('{"format": "other", "rules": []}', "'format'"),
        ('{"version": 9, "rules": []}', "'version'"),
        ('{"rules": [], "more": 1}', "'more'"),
        ('"text"', "top level"),
        ('{"rules": [7]}', "rule 0: must be an object"),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    """Unreadable or wrongly shaped files give one clear error naming the file."""
    path = tmp_path / "known_segfaults.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ArtifactError) as info:
        load_known_crash_rules(path)
    assert needle in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"{not json", "line 1 column 2: not valid JSON"),
        (b"\xff\xfe", "ledger is not UTF-8 text"),
        (b"[" * 100_000, "not valid JSON (nested too deeply)"),
    ],
)
def test_unreadable_files_are_not_rule_errors(
    tmp_path: Path, data: bytes, needle: str
) -> None:
    """A ledger that cannot be read as JSON is one ArtifactError, not a
    KnownCrashError (tools exit 2 for it, 1 for a malformed rule); deep nesting is
    no RecursionError."""
    path = tmp_path / "known_segfaults.json"
    path.write_bytes(data)
    with pytest.raises(ArtifactError, match=re.escape(needle)) as info:
        load_known_crash_rules(path)
    assert not isinstance(info.value, KnownCrashError)
    assert str(info.value).startswith(str(path))


def test_missing_file_names_it(tmp_path: Path) -> None:
    """A missing ledger is an ArtifactError naming the path."""
    with pytest.raises(ArtifactError, match="cannot read ledger"):
        load_known_crash_rules(tmp_path / "absent.json")


def test_validate_rules_accepts_objects_and_rejects_unset_match() -> None:
    """validate_rules checks rule objects too, e.g. one built without a match key."""
    good = rule_from_dict(raw_rule())
    assert validate_rules([good]) == [good]
    bare = KnownCrashRule(
        id="x", backend="b", expected_signal="SIGABRT", reason="r", owner="o",
        repro="p", review_after="2027-01-01",
    )  # fmt: skip
    with pytest.raises(KnownCrashError, match="exactly one"):
        validate_rules([bare])


def test_matching_uses_every_constraint() -> None:
    """A rule matches only when backend, glob, dtype, torch family and hardware fit."""
    rule = rule_from_dict(
        raw_rule(constraints={"dtype": "float16", "torch": ">=2.12,<2.14",
                              "hardware_key": "sim-*"})
    )  # fmt: skip
    case = "opinfo/add/forward/float16/0"
    ctx: dict[str, Any] = {
        "case_id": case, "dtype": "float16", "torch_version": "2.13.0+cpu",
        "hardware_key": "sim-1", "backend": "SimDev",
    }  # fmt: skip
    assert rule.matches(**ctx)
    assert not rule.matches(**{**ctx, "case_id": "opinfo/mul/forward/float16/0"})
    assert not rule.matches(**{**ctx, "dtype": "float32"})
    assert not rule.matches(**{**ctx, "torch_version": "2.14.0"})
    assert not rule.matches(**{**ctx, "torch_version": "2.11.1"})
    assert not rule.matches(**{**ctx, "hardware_key": "h200"})
    assert not rule.matches(**{**ctx, "backend": "cuda"})
    assert rule.matches(case_id=case)  # unknown context never excludes


def test_surface_and_node_matching() -> None:
    """Surface rules glob the case's aten overloads; node rules compare node ids."""
    surf = rule_from_dict(raw_rule(match={"surface": "aten::add.*"}, constraints={}))
    assert surf.matches(case_id="a/b/c/d/0", surfaces=["aten::add.Tensor"])
    assert not surf.matches(case_id="a/b/c/d/0", surfaces=["aten::mul.Tensor"])
    node = rule_from_dict(raw_rule(match={"node_id": "torchcts::a/b/c/d/0"}))
    assert node.matches(case_id="a/b/c/d/0", dtype="float16")
    assert not node.matches(case_id="a/b/c/d/1")


def test_minor_family_and_review_date() -> None:
    """Versions reduce to minor families; review_due compares the date."""
    assert torch_minor_family("2.13.0.dev20260101+cu128") == (2, 13)
    assert torch_minor_family("unknown") is None
    rule = rule_from_dict(raw_rule(review_after="2027-01-31"))
    assert rule.review_due(dt.date(2027, 2, 1))
    assert not rule.review_due(dt.date(2027, 1, 31))
