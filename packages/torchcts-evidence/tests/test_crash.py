"""Known-segfault candidates: packets, standalone repro scripts, and acceptance."""

from __future__ import annotations

import ast
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from evidence_builders import CRASH_CASE, make_project, write_crash_record
from torchcts_evidence import (
    EvidenceError,
    accept_packet,
    build_packet,
    write_packet,
)
from torchcts_schema import HostIdentity, load_known_crash_rules, load_result

IDENT = HostIdentity(host_names=("planted-host-q7x",), user_names=("planted-user-q7x",))
REVIEW = {"reason": "segfault in mul kernel", "owner": "simdev team",
          "review_after": "2027-03-01"}  # fmt: skip


def _packet(tmp_path: Path, **kw: object) -> tuple[Path, Path | None]:
    project = make_project(tmp_path / "p", **kw)  # type: ignore[arg-type]
    written = write_packet(build_packet(project.results, CRASH_CASE, IDENT), tmp_path)
    repro = [p for p in written if p.suffix == ".py"]
    return written[0], repro[0] if repro else None


def test_packet_holds_what_the_results_page_asks_for(tmp_path: Path) -> None:
    """Backend, hardware, OS, versions, command, node id, signal, runlog, artifact."""
    path, _ = _packet(tmp_path)
    packet = json.loads(path.read_text())
    assert packet["backend"] == "simdev"
    assert packet["hardware_key"] == "x86-64-2cpu-24gb"
    assert packet["os"] == "Linux-6.1-x86_64"
    assert packet["torch_version"] == "2.13.0+cpu"
    assert packet["torchcts_version"] == "0.1.0"
    assert packet["command"] == "torchcts-run --manifest manifests/simdev.py"
    assert packet["node_id"] == "torchcts::" + CRASH_CASE
    assert packet["crash"]["signal"] == "SIGSEGV"
    assert packet["runlog_tail"][0] == f"start {CRASH_CASE}"
    artifact = load_result(path.with_name(packet["latest_artifact"]))
    assert artifact.metadata.run_key == packet["run_key"]
    assert packet["run_metadata"]["backend"] == "simdev"
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert packet["case_record"]["status"] == "crashed"
    rule = packet["proposed_rule"]
    assert rule["match"] == {"node_id": "torchcts::" + CRASH_CASE}
    assert rule["constraints"]["torch"] == ">=2.13,<2.14"
    assert rule["expected_signal"] == "SIGSEGV"


def test_node_id_finds_the_same_record(tmp_path: Path) -> None:
    """The case may be named by its pytest node id."""
    project = make_project(tmp_path / "p")
    candidate = build_packet(project.results, "torchcts::" + CRASH_CASE, IDENT)
    assert candidate.packet["case_id"] == CRASH_CASE


def test_case_without_crash_record_is_refused(tmp_path: Path) -> None:
    """A case that did not crash has no record, and the error says so."""
    project = make_project(tmp_path / "p")
    with pytest.raises(EvidenceError, match="no crash record"):
        build_packet(project.results, "opinfo/add/forward/float32/0", IDENT)


def test_repro_script_crashes_when_run_alone(tmp_path: Path) -> None:
    """The wrapped repro runs in a bare interpreter and dies with the recorded signal."""
    _, repro = _packet(tmp_path)
    assert repro is not None
    source = repro.read_text()
    assert not re.search(r"^\s*(import|from)\s+torchcts", source, re.MULTILINE)
    done = subprocess.run(
        [sys.executable, "-I", repro.name], cwd=repro.parent, capture_output=True
    )
    assert done.returncode == -signal.SIGSEGV


def test_future_imports_are_hoisted(tmp_path: Path) -> None:
    """A repro with a __future__ import still compiles after wrapping."""
    project = make_project(tmp_path / "p")
    write_crash_record(
        project.results, script="from __future__ import annotations\nx: int = 1\n"
    )
    written = write_packet(build_packet(project.results, CRASH_CASE, IDENT), tmp_path)
    (repro,) = [p for p in written if p.suffix == ".py"]
    done = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True)
    assert done.returncode == 0 and "without crashing" in done.stdout


def test_a_lone_surrogate_in_the_record_is_kept_as_an_escape(tmp_path: Path) -> None:
    """A crash record whose script and messages hold a lone surrogate (valid JSON,
    no UTF-8 form) still gives a packet; the repro holds it as a Python escape, so
    its literal is the same string (this was a UnicodeEncodeError traceback)."""
    project = make_project(tmp_path / "p")
    write_crash_record(project.results, message="boom \ud800", script="x = '\ud800'\n")
    written = write_packet(build_packet(project.results, CRASH_CASE, IDENT), tmp_path)
    (repro,) = [p for p in written if p.suffix == ".py"]
    source = repro.read_text(encoding="utf-8")
    assert "x = '\\ud800'" in source
    (assign,) = [n for n in ast.parse(source).body if isinstance(n, ast.Assign)]
    assert ast.literal_eval(assign.value) == "\ud800"
    packet = json.loads(written[0].read_text(encoding="utf-8"))
    assert packet["stderr_tail"].endswith("boom \ud800")


def test_packet_is_scrubbed(tmp_path: Path) -> None:
    """Planted identity in stderr and the runlog does not reach the packet."""
    path, _ = _packet(tmp_path, message="on planted-host-q7x as planted-user-q7x")
    for written in path.parent.glob("crash-candidate-*"):
        assert "planted" not in written.read_text()


def test_accept_adds_a_validated_rule(tmp_path: Path) -> None:
    """A reviewed packet becomes a rule the schema's loader reads back."""
    path, _ = _packet(tmp_path)
    ledger = tmp_path / "known_segfaults.json"
    rule = accept_packet(path, ledger, REVIEW, IDENT)
    rules = load_known_crash_rules(ledger)
    assert [r.id for r in rules] == [rule.id]
    assert rules[0].node_id == "torchcts::" + CRASH_CASE
    assert rules[0].repro.endswith(".py")
    assert rules[0].matches(case_id=CRASH_CASE, torch_version="2.13.1")


def test_accept_refuses_an_unreviewed_packet(tmp_path: Path) -> None:
    """Without reason, owner and review date the packet is not accepted."""
    path, _ = _packet(tmp_path)
    with pytest.raises(EvidenceError, match="not reviewed yet"):
        accept_packet(path, tmp_path / "ledger.json", {}, IDENT)


def test_accept_refuses_duplicate_ids(tmp_path: Path) -> None:
    """Accepting the same rule id twice is refused and the ledger is unchanged."""
    path, _ = _packet(tmp_path)
    ledger = tmp_path / "known_segfaults.json"
    accept_packet(path, ledger, REVIEW, IDENT)
    before = ledger.read_bytes()
    with pytest.raises(EvidenceError, match="already exists"):
        accept_packet(path, ledger, REVIEW, IDENT)
    assert ledger.read_bytes() == before
    accept_packet(path, ledger, {**REVIEW, "id": "second-id"}, IDENT)
    assert len(load_known_crash_rules(ledger)) == 2


def test_accept_refuses_an_invalid_rule(tmp_path: Path) -> None:
    """The schema validator's findings (a bad date) are reported; nothing is written."""
    path, _ = _packet(tmp_path)
    ledger = tmp_path / "known_segfaults.json"
    with pytest.raises(EvidenceError, match="review_after"):
        accept_packet(path, ledger, {**REVIEW, "review_after": "soon"}, IDENT)
    assert not ledger.exists()


def test_malformed_crash_record_is_one_clear_error(tmp_path: Path) -> None:
    """A crash record with a wrong-typed key is refused naming the file and key."""
    project = make_project(tmp_path / "p")
    path = write_crash_record(project.results)
    record = json.loads(path.read_text())
    record["crash"] = "SIGSEGV"
    path.write_text(json.dumps(record))
    with pytest.raises(EvidenceError, match="key 'crash' is not a dict"):
        build_packet(project.results, CRASH_CASE, IDENT)
