"""Removing a known-crash rule cuts its object out and leaves a valid ledger."""

from __future__ import annotations

import json

import pytest
from torchcts_schema import KnownCrashError, parse_known_crash_rules, remove_rules


def _rule(rule_id: str) -> dict[str, object]:
    return {
        "id": rule_id,
        "backend": "simdev",
        "match": {"case_glob": f"opinfo/{rule_id}/*"},
        "expected_signal": "SIGSEGV",
        "reason": "a crash",
        "owner": "me",
        "repro": "torchcts-run ...",
        "review_after": "2030-01-01",
    }


def _ledger(*ids: str) -> str:
    data = {"format": "torchcts-known-crashes", "version": 1, "description": "x"}
    return json.dumps({**data, "rules": [_rule(i) for i in ids]}, indent=2) + "\n"


@pytest.mark.parametrize("gone", [["a"], ["b"], ["c"], ["a", "c"], ["a", "b", "c"]])
def test_removes_exactly_the_named_rules(gone: list[str]) -> None:
    """First, middle, last, several or all: the rest keep their text and order."""
    text = _ledger("a", "b", "c")
    new = remove_rules(text, gone, "known_segfaults.json")
    left = [r.id for r in parse_known_crash_rules(new, "known_segfaults.json")]
    assert left == [i for i in ("a", "b", "c") if i not in gone]
    if left:
        assert json.dumps(_rule(left[0]), indent=2).splitlines()[1] in new
    assert new.startswith('{\n  "format": "torchcts-known-crashes"')


def test_bare_list_ledger() -> None:
    """A ledger that is a bare list of rules works too."""
    text = json.dumps([_rule("a"), _rule("b")])
    new = remove_rules(text, ["a"], "l.json")
    assert [r.id for r in parse_known_crash_rules(new, "l.json")] == ["b"]


def test_unknown_id_names_the_file() -> None:
    """An id the ledger lacks is an error naming the file, not a silent no-op."""
    with pytest.raises(KnownCrashError, match=r"l\.json.*no rule with id 'zz'"):
        remove_rules(_ledger("a"), ["zz"], "l.json")
