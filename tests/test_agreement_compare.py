"""The long runs' verdict (bench/agreement_compare.py): CPU validation and clean simdev,
case for case."""

from __future__ import annotations

from typing import Any

from script_module import load_script

ac = load_script("bench/agreement_compare.py")
NAMES = ("cpu", "simdev")


def _o(status: str, reason: str | None = None, why: str | None = None) -> Any:
    return ac.Outcome(status, reason, why)


def test_all_passed_on_both_agree() -> None:
    """Identical passes and identical not_run accounting agree."""
    both = {"a": _o("passed"), "b": _o("not_run", "level_filtered")}
    result = ac.compare(NAMES, both, dict(both))
    assert result.clean
    assert result.both_executed == 1
    assert not result.one_sided
    assert ac.render(NAMES, result).endswith("agree: yes")


def test_a_status_difference_is_listed_with_the_message() -> None:
    """A case both executed with another status on simdev breaks agreement."""
    cpu = {"a": _o("passed"), "b": _o("passed")}
    sim = {"a": _o("passed"), "b": _o("error", why="Expected all tensors")}
    result = ac.compare(NAMES, cpu, sim)
    assert not result.clean
    assert list(result.differ) == ["b"]
    assert result.not_passed["simdev"] == {"b": sim["b"]}
    text = ac.render(NAMES, result)
    assert "b: cpu passed, simdev error: Expected all tensors" in text
    assert text.endswith("agree: no")


def test_a_failure_on_both_sides_is_not_agreement() -> None:
    """Equal statuses are not enough: CPU validation must pass every executed case."""
    same = {"a": _o("failed", why="values")}
    result = ac.compare(NAMES, same, dict(same))
    assert not result.differ
    assert not result.clean
    assert result.not_passed == {"cpu": {"a": same["a"]}, "simdev": {"a": same["a"]}}


def test_one_sided_cases_are_counted_by_the_other_sides_reason() -> None:
    """What one manifest declines is counted, never dropped, and does not differ."""
    cpu = {"a": _o("passed"), "b": _o("passed"), "c": _o("passed")}
    sim = {"a": _o("not_run", "capability_not_declared"), "b": _o("passed")}
    sim["d"] = _o("passed")
    result = ac.compare(NAMES, cpu, sim)
    assert result.clean
    assert result.one_sided == {
        ("cpu", "not_run: capability_not_declared"): 1,
        ("cpu", "no record"): 1,
        ("simdev", "no record"): 1,
    }
    assert "executed on cpu only: 1 (the other: no record)" in ac.render(NAMES, result)
