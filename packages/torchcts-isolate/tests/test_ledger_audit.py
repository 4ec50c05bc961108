"""The ledger (packaged + project rules) and ``torchcts-isolate audit``."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from torchcts_isolate import load_case_list, load_ledger, packaged_ledger_path
from torchcts_isolate.cli import main
from torchcts_schema import ArtifactError, KnownCrashError, load_known_crash_rules


def rule(rule_id: str, match: dict[str, str], **extra: Any) -> dict[str, Any]:
    """A valid rule with the given id and match."""
    return {
        "id": rule_id,
        "backend": extra.pop("backend", "simdev"),
        "match": match,
        "expected_signal": "SIGSEGV",
        "reason": "simdev segfault profile",
        "owner": "isolate tests",
        "repro": "torchcts-run --case " + match.get("case_glob", "x"),
        "review_after": extra.pop("review_after", "2099-01-01"),
        **extra,
    }


def write_ledger(path: Path, rules: list[Any]) -> Path:
    """Write a project ledger."""
    path.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return path


CASES = "opinfo/add/forward/float32/0\nopinfo/add/forward/float16/0\n"
CASES += "torchcts::opinfo/mul/forward/float32/0\n"


def test_packaged_ledger_is_valid() -> None:
    """The ledger shipped in the package loads and passes validation."""
    assert packaged_ledger_path().is_file()
    load_known_crash_rules(packaged_ledger_path())


def test_project_rules_merge_and_match(tmp_path: Path) -> None:
    """Project rules join the packaged ones and rules_matching applies every filter."""
    ledger = load_ledger(
        write_ledger(
            tmp_path / "l.json",
            [
                rule("add16", {"case_glob": "opinfo/add/*"},
                     constraints={"dtype": "float16", "torch": ">=2.13"}),
                rule("mulsurf", {"surface": "aten::mul.*"}),
            ],
        )
    )  # fmt: skip
    ids = [r.rule.id for r in ledger.rules]
    assert ids[-2:] == ["add16", "mulsurf"]
    hits = ledger.rules_matching(
        "opinfo/add/forward/float16/0",
        dtype="float16",
        torch_version="2.13.0",
        backend=["privateuseone", "simdev"],
    )
    assert [r.id for r in hits] == ["add16"]
    assert not ledger.rules_matching("opinfo/add/forward/float16/0", backend="cuda")
    assert not ledger.rules_matching(
        "opinfo/add/forward/float16/0", torch_version="2.12.1", backend="simdev"
    )
    surf = ledger.rules_matching("x/y/z/w/0", surfaces=["aten::mul.out"])
    assert [r.id for r in surf] == ["mulsurf"]


def test_default_project_ledger_is_picked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """known_segfaults.json in the working directory is read without --ledger."""
    write_ledger(tmp_path / "known_segfaults.json", [rule("r", {"case_glob": "*"})])
    monkeypatch.chdir(tmp_path)
    assert [r.rule.id for r in load_ledger().rules][-1] == "r"


def test_duplicate_across_files_names_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An id in the project ledger that repeats a packaged id is an error."""
    packaged = write_ledger(
        tmp_path / "packaged.json", [rule("same", {"case_glob": "*"})]
    )
    monkeypatch.setattr(
        "torchcts_isolate.ledger.packaged_ledger_path", lambda: packaged
    )
    project = write_ledger(tmp_path / "p.json", [rule("same", {"case_glob": "a"})])
    with pytest.raises(KnownCrashError) as info:
        load_ledger(project)
    assert "rule 0 (id 'same'): key 'id': duplicate id" in str(info.value)
    assert "already rule 0 of packaged" in str(info.value)
    assert str(project) in str(info.value)


def test_audit_prints_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """audit lists the cases each rule matches and exits 0 when all is well."""
    ledger = write_ledger(
        tmp_path / "l.json", [rule("add", {"case_glob": "opinfo/add/*"})]
    )
    cases = tmp_path / "cases.txt"
    cases.write_text("# generated\n" + CASES, encoding="utf-8")
    args = ["audit", "--ledger", str(ledger), "--cases", str(cases)]
    # the packaged rules are for MPS: --backend leaves them unchecked here
    assert main([*args, "--backend", "simdev"]) == 0
    out = capsys.readouterr().out
    assert "rule 0 (id 'add'): matches 2 case(s)" in out
    assert "  opinfo/add/forward/float16/0" in out


def test_audit_rule_matching_nothing_is_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rule that matches no listed case fails the audit, naming file, index and id."""
    ledger = write_ledger(
        tmp_path / "l.json",
        [rule("ok", {"case_glob": "opinfo/add/*"}), rule("dead", {"node_id": "x"})],
    )
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"cases": CASES.split()}), encoding="utf-8")
    assert main(["audit", "--ledger", str(ledger), "--cases", str(cases)]) == 1
    err = capsys.readouterr().err
    assert f"{ledger}: rule 1 (id 'dead'): matches no listed case" in err


@pytest.mark.parametrize(
    ("rules", "needle"),
    [
        (
            [rule("a", {"case_glob": "*"}), rule("a", {"case_glob": "*"})],
            "duplicate id",
        ),
        ([rule("a", {})], "rule 0 (id 'a'): key 'match'"),
        (
            [{**rule("a", {"case_glob": "*"}), "review_after": "someday"}],
            "review_after",
        ),
        ([{**rule("a", {"case_glob": "*"}), "expected_signal": 11}], "expected_signal"),
    ],
)
def test_audit_malformed_ledger_is_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rules: list[Any], needle: str
) -> None:
    """Malformed rules and duplicate ids fail the audit with their location."""
    ledger = write_ledger(tmp_path / "l.json", rules)
    assert main(["audit", "--ledger", str(ledger)]) == 1
    err = capsys.readouterr().err
    assert str(ledger) in err and needle in err


def test_audit_skips_rules_for_other_backends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --backend, a rule for another backend is valid but not matched."""
    ledger = write_ledger(
        tmp_path / "l.json", [rule("c", {"case_glob": "zzz"}, backend="cuda")]
    )
    cases = tmp_path / "cases.txt"
    cases.write_text(CASES, encoding="utf-8")
    args = ["audit", "--ledger", str(ledger), "--cases", str(cases)]
    assert main([*args, "--backend", "simdev"]) == 0
    assert "for backend 'cuda', not 'simdev'" in capsys.readouterr().out
    assert main(args) == 1


def test_audit_missing_inputs_exit_2(tmp_path: Path) -> None:
    """A missing ledger or case list is a usage error (exit 2)."""
    assert main(["audit", "--ledger", str(tmp_path / "none.json")]) == 2
    ledger = write_ledger(tmp_path / "l.json", [])
    assert main(["audit", "--ledger", str(ledger), "--cases", str(tmp_path / "x")]) == 2


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"[" * 100_000, "not valid JSON (nested too deeply)"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON (nested too deeply)"),
        (b"{bad", "line 1 column 2: not valid JSON"),
        (b"\xff\xfe[]", "ledger is not UTF-8 text"),
    ],
)
def test_unreadable_ledger_or_case_list_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, words: str
) -> None:
    """A ledger or case list that cannot be read as JSON is unreadable input (2, as
    the README says), in one line: not a RecursionError traceback, not exit 1."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(data)
    assert main(["audit", "--no-packaged", "--ledger", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {bad}: {words}" + err.split(words, 1)[1]
    assert len(err.strip().splitlines()) == 1
    if data.startswith(b"["):
        ledger = write_ledger(tmp_path / "l.json", [])
        assert main(["audit", "--ledger", str(ledger), "--cases", str(bad)]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1


def test_case_list_forms(tmp_path: Path) -> None:
    """Case lists may be text, JSON ids, CaseSpec dicts or JSON lines."""
    spec = {"case_id": "opinfo/mul/forward/float32/0", "dtype": "float32",
            "surfaces": ["aten::mul.Tensor"]}  # fmt: skip
    forms = {
        "a.txt": "opinfo/mul/forward/float32/0\n",
        "b.json": json.dumps(["torchcts::opinfo/mul/forward/float32/0"]),
        "c.json": json.dumps([spec]),
        "d.jsonl": json.dumps(spec) + "\n" + json.dumps(spec) + "\n",
    }
    for name, text in forms.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        cases = load_case_list(tmp_path / name)
        assert cases[0].case_id == "opinfo/mul/forward/float32/0"
        assert cases[0].dtype == "float32"
    assert load_case_list(tmp_path / "c.json")[0].surfaces == ("aten::mul.Tensor",)
    (tmp_path / "bad.json").write_text('[{"id": 1}]', encoding="utf-8")
    with pytest.raises(ArtifactError, match="case 0"):
        load_case_list(tmp_path / "bad.json")


def test_readme_example_rule_is_valid_and_its_repro_names_real_things(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's example rule validates, audit matches it to exp's float32 cases,
    and its repro is a runnable command: a profile simdev ships with a segfault in
    exp, the simdev manifest, and a node id the rule matches."""
    repo = Path(__file__).resolve().parents[3]
    readme = (repo / "packages" / "torchcts-isolate" / "README.md").read_text()
    block = re.search(r"```json\n(.*?)```", readme, re.S)
    assert block is not None
    ledger = write_ledger(tmp_path / "ledger.json", json.loads(block.group(1))["rules"])
    (example,) = load_known_crash_rules(ledger)
    cases = tmp_path / "cases.txt"
    cases.write_text("opinfo/exp/forward/float32/0\nopinfo/exp/forward/float64/0\n")
    args = ["audit", "--ledger", str(ledger), "--cases", str(cases)]
    assert main([*args, "--backend", "simdev", "--torch-version", "2.13.0"]) == 0
    out = capsys.readouterr().out
    assert "matches 1 case(s)\n  opinfo/exp/forward/float32/0\n" in out
    setting, tool, *words = shlex.split(example.repro)
    name, profile = setting.split("=")
    assert (name, tool) == ("TORCHCTS_SIMDEV_PROFILE", "torchcts-run")
    simdev = repo / "packages" / "torchcts-simdev" / "src" / "torchcts_simdev"
    rules = json.loads((simdev / "profiles" / f"{profile}.json").read_text())["rules"]
    assert any(
        r["op"] == "aten::exp.out" and r["fault"] == "segfault" for r in rules
    ), rules
    assert words[:2] == ["--manifest", "manifests/simdev.py"]
    assert (repo / words[1]).is_file()
    (node_id,) = words[2:]
    assert example.matches(case_id=node_id.removeprefix("torchcts::"))
