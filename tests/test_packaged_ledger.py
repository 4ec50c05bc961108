"""The known-crash rules TorchCTS ships: evidence, reach, and what they never do.

The packaged ledger is isolation policy for MPS: each rule rests on a public crash
report and sends the MPS cases it names to a child interpreter. These tests pin that
it loads with the strict loader, that each rule carries its evidence, that each
matches cases of the MPS manifest's catalog (the audit's rule), and that no rule
reaches a run on another backend.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path

import pytest
from torchcts_cases.cli import main as cases_main
from torchcts_isolate import load_ledger, packaged_ledger_path
from torchcts_isolate.cli import main as isolate_main
from torchcts_schema import KnownCrashRule, load_known_crash_rules

REPO = Path(__file__).resolve().parents[1]
MPS = REPO / "manifests" / "mps.py"


def _case_list(*args: str) -> list[dict[str, object]]:
    """`torchcts-cases list --json` for the MPS manifest (no torch needed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cases_main(["list", "--manifest", str(MPS), "--json", *args]) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.fixture(scope="module")
def mps_cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The MPS manifest's catalog at its own level, as the audit reads it."""
    path = tmp_path_factory.mktemp("mps") / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in _case_list()))
    return path


def test_packaged_rules_load_and_each_names_its_public_report() -> None:
    """Every packaged rule is for MPS and cites an https report with a one-line
    summary; the id is unique and the review date is set."""
    rules = load_known_crash_rules(packaged_ledger_path())
    assert rules, "the packaged ledger ships rules"
    assert len({r.id for r in rules}) == len(rules)
    for rule in rules:
        assert rule.backend == "mps", rule.id
        assert rule.evidence is not None, rule.id
        assert rule.evidence.url.startswith("https://github.com/"), rule.id
        assert rule.evidence.summary.strip() and "\n" not in rule.evidence.summary


def test_every_packaged_rule_matches_an_mps_case(
    mps_cases: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`torchcts-isolate audit` of the packaged ledger against the MPS catalog passes:
    no rule matches nothing, and each lists at least one case."""
    args = ["audit", "--cases", str(mps_cases), "--backend", "mps", "--json"]
    assert isolate_main([*args, "--torch-version", "2.13.0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["errors"] == []
    rules = load_known_crash_rules(packaged_ledger_path())
    assert len(report["matches"]) == len(rules)
    assert all(report["matches"].values()), report["matches"]


def test_packaged_rules_never_match_another_backend(mps_cases: Path) -> None:
    """The very cases the rules isolate on MPS run in process on CPU, CUDA, XPU
    and simdev: a rule names the MPS backend, nothing else."""
    ledger = load_ledger(include_packaged=True, project=_empty_project(mps_cases))
    cases = [json.loads(line) for line in mps_cases.read_text().splitlines()]
    hit = [
        c
        for c in cases
        if ledger.rules_matching(
            c["case_id"], surfaces=c.get("surfaces", ()), backend="mps"
        )
    ]
    assert hit
    for backend in ("cpu", "cuda", "xpu", "simdev", "PyTorch CPU"):
        assert not any(
            ledger.rules_matching(
                c["case_id"], surfaces=c.get("surfaces", ()), backend=backend
            )
            for c in hit
        ), backend
        assert ledger.for_backends([backend, None]).rules == ()
    assert len(ledger.for_backends(["mps", "PyTorch MPS"]).rules) == len(ledger.rules)


def test_packaged_repros_name_manifest_and_a_matched_case() -> None:
    """Each rule's repro is a torchcts-run line on the MPS manifest selecting one
    case the rule matches (at the level the line asks for)."""
    wanted: dict[str | None, dict[str, KnownCrashRule]] = {}
    for rule in load_known_crash_rules(packaged_ledger_path()):
        tool, *words = shlex.split(rule.repro)
        assert tool == "torchcts-run"
        assert words[:2] == ["--manifest", "manifests/mps.py"]
        assert (REPO / words[1]).is_file()
        level = words[words.index("--level") + 1] if "--level" in words else None
        wanted.setdefault(level, {})[words[-1].removeprefix("torchcts::")] = rule
    for level, rules in wanted.items():
        ops = [a for case_id in rules for a in ("--op", case_id.split("/")[1])]
        levels = ["--level", level] if level else []
        listed = {c["case_id"]: c for c in _case_list(*ops, *levels)}
        for case_id, rule in rules.items():
            spec = listed[case_id]
            assert rule.matches(case_id=case_id, surfaces=spec.get("surfaces", ()))


def _empty_project(where: Path) -> Path:
    """A project ledger with no rules, so a known_segfaults.json in the working
    directory cannot leak into these checks."""
    path = where.parent / "empty_ledger.json"
    path.write_text('{"rules": []}')
    return path
