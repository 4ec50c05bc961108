"""A case that ran through a CPU fallback: labelled when the manifest allows it, failed
(implement_or_declare) when it forbids it; the run's summary line counts such passes.

The case source here is a stand-in module whose watch reports what a test says it
saw, so these pin the runner's decisions without torch.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
from torchcts_runner.case_execution import CaseContext, execute_case
from torchcts_runner.casesource import CaseSource
from torchcts_runner.classify import classify_verdict, forbidden_fallback_text
from torchcts_runner.run_end import summary_lines
from torchcts_runner.run_writer import FinishSummary
from torchcts_schema import (
    CaseSpec,
    ExpectedSource,
    Manifest,
    NextFix,
    Status,
    Verdict,
    make_case_id,
)

SIN = "aten::sin.out"


class _Watch:
    def __init__(self, seen: tuple[str, ...]) -> None:
        self.overloads: tuple[str, ...] = ()
        self._seen = seen

    def __enter__(self) -> _Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.overloads = self._seen


class _Prepared:
    def __init__(self, spec: CaseSpec) -> None:
        self.spec = spec

    def reference(self) -> object:
        return [1.0]

    def run_on(self, device: str) -> object:
        if self.spec.op == "boom":
            raise RuntimeError("device fault")
        return [2.0] if self.spec.op == "wrong" else [1.0]

    def judge(self, expected: object, observed: object, **_: Any) -> Verdict:
        return Verdict(expected == observed, None if expected == observed else "off")


def _source(seen: tuple[str, ...], *, hook: bool = True) -> CaseSource:
    module = types.SimpleNamespace(prepare=lambda spec, manifest: _Prepared(spec))
    if hook:
        module.watch_fallbacks = lambda device: _Watch(seen)
    return CaseSource("stand-in", module)


def _run(op: str, policy: str, seen: tuple[str, ...], tmp: Path, **kw: Any) -> Any:
    spec = CaseSpec(
        make_case_id("fake", op, "forward", "float32", 0), "fake", op, "forward",
        "float32", 0, 1, ExpectedSource.CPU_REFERENCE, "forward",
    )  # fmt: skip
    manifest = Manifest(
        path=tmp / "m.py",
        digest="",
        device="fake",
        backend_name="fake",
        cpu_fallback=policy,
    )
    ctx = CaseContext(manifest, _source(seen, **kw), "fake", tmp, "fake_key")
    return execute_case(spec, ctx)


def test_an_allowed_fallback_passes_with_its_overloads_named(tmp_path: Path) -> None:
    """allow: the pass stands, and the record names what fell back."""
    record = _run("ok", "allow", (SIN,), tmp_path)
    assert record.status is Status.PASSED and record.cpu_fallback == (SIN,)
    native = _run("ok", "allow", (), tmp_path)
    assert native.status is Status.PASSED and native.cpu_fallback is None


def test_a_forbidden_fallback_fails_as_implement_or_declare(tmp_path: Path) -> None:
    """forbid: a correct result through the fallback fails, naming the overloads."""
    record = _run("ok", "forbid", (SIN, "aten::cos.out"), tmp_path)
    assert record.status is Status.FAILED
    assert record.next_fix is NextFix.IMPLEMENT_OR_DECLARE
    assert record.mismatch is None
    assert record.detail is not None
    assert "CPU_FALLBACK = 'forbid'" in record.detail
    assert record.detail.endswith(f"{SIN}, aten::cos.out")
    assert record.cpu_fallback == (SIN, "aten::cos.out")
    assert _run("ok", "forbid", (), tmp_path).status is Status.PASSED


def test_other_endings_keep_their_status_and_carry_the_label(tmp_path: Path) -> None:
    """A wrong value stays a correctness failure and a device error an error, under
    forbid too; both still say what fell back."""
    wrong = _run("wrong", "forbid", (SIN,), tmp_path)
    assert (wrong.status, wrong.next_fix) == (Status.FAILED, NextFix.CORRECTNESS)
    assert wrong.mismatch == "off" and wrong.cpu_fallback == (SIN,)
    boom = _run("boom", "forbid", (SIN,), tmp_path)
    assert boom.status is Status.ERROR and boom.cpu_fallback == (SIN,)


def test_a_source_without_the_hook_observes_nothing(tmp_path: Path) -> None:
    """The hook is optional in the case-source contract."""
    record = _run("ok", "forbid", (SIN,), tmp_path, hook=False)
    assert record.status is Status.PASSED and record.cpu_fallback is None


def test_the_forbidden_message_names_the_first_overloads() -> None:
    """A long list is cut, saying how many more there are."""
    names = [f"aten::op{i}" for i in range(12)]
    text = forbidden_fallback_text(names)
    assert "aten::op9" in text and "aten::op10" not in text
    assert text.endswith("and 2 more")
    passed = classify_verdict(True, None, cpu_fallback=names, fallback_policy="allow")
    assert passed.status is Status.PASSED


@pytest.mark.parametrize(
    ("via", "words"), [(2, "passed 5 (2 via CPU fallback)"), (0, "passed 5,")]
)
def test_the_summary_line_counts_passes_through_the_fallback(
    via: int, words: str
) -> None:
    """The run's one line says how many passes were not native."""
    done = FinishSummary(
        True, 0, None, "no report", None, {"passed": 5, "failed": 1}, (), via
    )
    line = summary_lines("k", done, interrupted=False, signum=None, in_flight=0)[0]
    assert words in line and line.startswith("TorchCTS k: ")
