"""Next-fix triage: real messages, every action reachable, findings in the right place."""

from __future__ import annotations

from pathlib import Path

from torchcts_report import build_triage, load_input, render_markdown, rerun_command
from torchcts_schema import CrashInfo, CrashKind, NextFix, NotRunReason, Status


def _by_category(triage):  # type: ignore[no-untyped-def]
    return {t.category: t for t in triage}


def _next_fix(tmp_path: Path, syn, records) -> str:  # type: ignore[no-untyped-def]
    syn.write(tmp_path, syn.artifact(records))
    text = render_markdown(load_input(tmp_path))
    return text[text.index("## Next fix") : text.index("\n## ", text.index("## Next"))]


def test_actions_read_with_the_example_case_real_message(syn):
    """Cases group by the normalised message but the action quotes the real one."""
    records = [
        syn.record(
            "bmm",
            status=Status.ERROR,
            sample=i,
            exception_type="RuntimeError",
            exception_message=f"device fault 0x7f{i}a at row {i + 3}",
        )
        for i in range(2)
    ]
    (action,) = _by_category(build_triage(records, syn.metadata(), []))[
        NextFix.CORRECTNESS
    ].actions
    assert action.count == 2
    assert "RuntimeError: device fault 0x7f0a at row 3" in action.summary
    assert "0x?" not in action.summary and " N" not in action.summary


def test_every_action_is_reachable_beyond_the_first_three(tmp_path, syn):
    """Five clusters in one category: three shown in full, two in the table after."""
    records = [
        syn.record(op, status=Status.FAILED, mismatch=f"{op} values differ")
        for op in ("abs", "cos", "exp", "log", "sin")
    ]
    text = _next_fix(tmp_path, syn, records)
    section = text[text.index("### 2.") : text.index("### 3.")]
    assert sum(line.startswith("- Inspect") for line in section.splitlines()) == 3
    assert "2 more action(s) in this category:" in section
    assert "| cases | action | example | rerun |" in section
    for op in ("abs", "cos", "exp", "log", "sin"):
        assert f"`opinfo/{op}/forward/float32/0`" in section


def test_device_probe_failures_are_backend_findings(syn):
    """A failing capability probe is correctness, a missing one implement; setup stays."""
    probes = [
        {"kind": "capability", "probe": "inplace", "status": "fail", "note": "values"},
        {
            "kind": "dtype",
            "probe": "bfloat16 create/copy/add",
            "status": "fail",
            "note": "NotImplementedError: no bfloat16 kernel",
        },
        {"kind": "import", "probe": "backend x", "status": "fail", "note": "no module"},
        {"kind": "harness", "probe": "probe process", "status": "fail", "note": "died"},
    ]
    triage = _by_category(build_triage([], syn.metadata(), probes))
    assert [a.summary for a in triage[NextFix.CORRECTNESS].actions] == [
        "The backend fails the capability probe inplace: values. A backend finding "
        "(the probe checks what the device does), likely behind failures of cases "
        "that use inplace"
    ]
    assert triage[NextFix.IMPLEMENT_OR_DECLARE].probe_failures == 1
    configuration = [a.summary for a in triage[NextFix.CONFIGURATION].actions]
    assert configuration == [
        "Fix the setup: the import probe backend x fails: no module",
        "Fix the failing harness probe probe process: died",
    ]


def test_unusable_device_is_configuration_not_correctness(syn):
    """Errors from a failed backend import or an absent device triage as configuration."""
    records = [
        syn.record(
            "add",
            status=Status.ERROR,
            detail="configuration: backend import 'torch_x' failed: ImportError: x",
        ),
        syn.record(
            "mul",
            status=Status.ERROR,
            exception_type="RuntimeError",
            exception_message="No CUDA GPUs are available",
        ),
        syn.record(
            "sub", status=Status.ERROR, exception_type="E", exception_message="wrong"
        ),
    ]
    triage = _by_category(build_triage(records, syn.metadata(), []))
    assert triage[NextFix.CONFIGURATION].count == 2
    assert triage[NextFix.CORRECTNESS].count == 1


def test_comparison_not_valid_is_missing_evidence(tmp_path, syn):
    """Cases PyTorch cannot compare across devices need a strategy, not a manifest edit."""
    records = [
        syn.record(
            "nonzero",
            status=Status.NOT_RUN,
            source=None,
            sample=i,
            not_run_reason=NotRunReason.COMPARISON_NOT_VALID,
        )
        for i in range(4)
    ]
    triage = _by_category(build_triage(records, syn.metadata(), []))
    assert triage[NextFix.MISSING_EVIDENCE].count == 4
    assert triage[NextFix.SUPPORT_SURFACE].count == 0
    (action,) = triage[NextFix.MISSING_EVIDENCE].actions
    assert action.command is None  # not_run: a rerun would only skip it again
    assert "another test strategy" in action.summary


def test_crash_rerun_carries_the_isolation_flag(syn):
    """The "rerun in isolation" action's command asks for isolation."""
    crash = CrashInfo(CrashKind.SIGNAL, signal="SIGSEGV", detail="Segmentation fault")
    record = syn.record("exp", status=Status.CRASHED, crash=crash)
    (action,) = _by_category(build_triage([record], syn.metadata(), []))[
        NextFix.CRASH_EVIDENCE
    ].actions
    assert "in isolation" in action.summary
    assert action.command == (
        "torchcts-run --manifest 'manifests/simdev.py' --isolate all "
        "'torchcts::opinfo/exp/forward/float32/0'"
    )


def test_manifest_outside_the_repo_stays_a_usable_path(syn, tmp_path):
    """An absolute manifest becomes relative to the base, or ~/, never a bare name."""
    case = "opinfo/add/forward/float32/0"
    below = syn.metadata(command=f"torchcts-run --manifest {tmp_path}/m/cuda.py")
    assert rerun_command(below, case, base=tmp_path).startswith(
        "torchcts-run --manifest 'm/cuda.py' "
    )
    home = syn.metadata(command="torchcts-run --manifest /home/alice/x/cuda.py")
    assert rerun_command(home, case, base=tmp_path).startswith(
        "torchcts-run --manifest ~/'x/cuda.py' "
    )
    elsewhere = syn.metadata(options={"manifest": "/opt/ci/manifests/cuda.py"})
    command = rerun_command(elsewhere, case, base=Path("/opt/ci/run/results"))
    assert command.startswith("torchcts-run --manifest '../../manifests/cuda.py' ")


def test_a_probe_action_in_the_table_counts_no_case(tmp_path, syn):
    """Probe failures past the first three are table rows whose cases cell says
    "probe": the heading counts them apart (0 cases and 4 probe failures), and a
    row saying 1 case contradicted it."""
    from torchcts_schema import RunArtifact

    rows = [
        {"kind": "dtype", "probe": f"{d} create/copy/add", "status": "fail",
         "note": f"NotImplementedError: no {d} kernel"}
        for d in ("uint16", "uint32", "uint64", "float8_e5m2")
    ]  # fmt: skip
    artifact = RunArtifact.from_records(syn.metadata(), [], {"probes": {"rows": rows}})
    syn.write(tmp_path, artifact)
    text = render_markdown(load_input(tmp_path))
    section = text[text.index("### 3.") : text.index("### 4.")]
    assert section.startswith("### 3. implement or declare: 0 case(s) and 4 probe")
    (row,) = [line for line in section.splitlines() if "probe float8" in line]
    assert row.startswith("| probe | Implement what the dtype probe float8"), row
