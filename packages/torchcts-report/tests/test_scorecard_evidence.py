"""The scorecard's sections on what needs more than a rerun to read: the probe table,
every crash and its evidence, run diagnostics and reference (oracle) problems."""

from __future__ import annotations

import json
from dataclasses import replace

from report_factories import render_scorecard as _render
from report_factories import section as _section
from torchcts_report import load_input, render_markdown
from torchcts_schema import Status


def test_probe_table_from_metadata_and_failure_files(tmp_path, syn):
    """Probe counts come from metadata and every failing probe from the jsonl files."""
    rows = [
        {
            "kind": "dtype",
            "probe": "complex64 create",
            "status": "failed",
            "note": "RuntimeError: unsupported dtype",
        },
        {"kind": "capability", "probe": "backward", "status": "error", "note": "boom"},
    ]
    (tmp_path / "simdev_x86-64-2cpu_harness_probe_failures_123.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    text = _render(tmp_path, syn)
    probes = _section(text, "Diagnostic probes")
    assert "failed: 1, passed: 10, total: 11" in probes
    assert "| kind | probe | status | note |" in probes
    assert (
        "| dtype | complex64 create | failed | RuntimeError: unsupported dtype |"
        in probes
    )
    assert "| capability | backward | error | boom |" in probes
    fix = _section(text, "Next fix")
    # a dtype probe that says "unsupported" asks to implement or declare the dtype;
    # a capability probe that fails otherwise is a backend correctness finding
    assert "### 1. configuration: 0 case(s)\n" in fix
    assert "implement or declare: 1 case(s) and 1 probe failure(s)" in fix
    assert "correctness: 4 case(s) and 1 probe failure(s)" in fix
    assert "The backend fails the capability probe backward: boom." in fix
    assert "Fix the failing harness probe" not in fix


def test_probe_section_without_probes(tmp_path, syn):
    """A run without probe data says so rather than showing an empty table."""
    text = _render(tmp_path, syn, syn.artifact(probes={}))
    assert "The run recorded no probe counts." in text
    assert "No probe rows or probe failure records were found." in text


def test_probe_table_from_run_diagnostics(tmp_path, syn):
    """The runner's full probe table (diagnostics) is shown in its order, fails counted."""
    art = syn.artifact(probes={"pass": 2, "fail": 1, "total": 3})
    rows = [
        {"kind": "import", "probe": "backend simdev", "status": "pass", "note": ""},
        {
            "kind": "dtype",
            "probe": "float16 create/copy/add",
            "status": "fail",
            "note": "copy changed the values",
        },
        {"kind": "capability", "probe": "views", "status": "pass", "note": ""},
    ]
    art.diagnostics["probes"] = {"counts": {"pass": 2}, "rows": rows}
    syn.write(tmp_path, art)
    # the same failure also sits in a failure file: it must not be listed twice
    (tmp_path / "simdev_x86-64-2cpu_harness_probe_failures_5.jsonl").write_text(
        json.dumps({**rows[1], "type": "harness_probe"}) + "\n"
    )
    text = render_markdown(load_input(tmp_path))
    probes = _section(text, "Diagnostic probes")
    assert "fail: 1, pass: 2, total: 3" in probes
    lines = [line for line in probes.splitlines() if line.startswith("| ")]
    assert lines[1:] == [
        "| import | backend simdev | pass |  |",
        "| dtype | float16 create/copy/add | fail | copy changed the values |",
        "| capability | views | pass |  |",
    ]
    fix = _section(text, "Next fix")
    assert "correctness: 4 case(s) and 1 probe failure(s)" in fix
    assert "The backend fails the dtype probe float16 create/copy/add" in fix
    assert "`probes`" not in _section(text, "Diagnostics")


def test_probe_counts_from_diagnostics_when_metadata_lacks_them(tmp_path, syn):
    """A run rebuilt from its journal (no probe counts in metadata) uses diagnostics."""
    art = syn.artifact(probes={})
    art.diagnostics["probes"] = {
        "counts": {"pass": 3, "fail": 0, "total": 3},
        "rows": [],
    }
    text = _section(_render(tmp_path, syn, art), "Diagnostic probes")
    assert "fail: 0, pass: 3, total: 3" in text


def test_crash_records_list_every_crash_and_evidence(tmp_path, syn):
    """Every crashed case is listed, and each crash record file is shown in detail."""
    crashes = tmp_path / "simdev_x86-64-2cpu_crashes"
    crashes.mkdir()
    (crashes / "sum.json").write_text(
        json.dumps(
            {
                "case_id": "opinfo/sum/forward/float32/0",
                "node_id": "torchcts::opinfo/sum/forward/float32/0",
                "crash": {"kind": "signal", "signal": "SIGSEGV", "exit_code": -11},
                "runlog_tail": ["start opinfo/add/forward/float32/0", "start sum"],
                "stderr_tail": "Fatal Python error: Segmentation fault",
                "traceback": None,
                "environment": {"os": "Linux", "torch_version": "2.13.0"},
                "repro_command": [
                    "torchcts-run",
                    "--manifest",
                    "m.py",
                    "torchcts::opinfo/sum/forward/float32/0",
                ],
                "repro_script": "import torch\n",
            }
        )
    )
    (crashes / "old.json").write_text(json.dumps({"case_id": "opinfo/old/x/-/-"}))
    text = _section(_render(tmp_path, syn), "Crash records")
    assert "2 case(s) crashed." in text
    assert "| `opinfo/sum/forward/float32/0` | signal | SIGSEGV | segfault |" in text
    assert (
        "| `opinfo/cumsum/forward/float32/0` | timeout |  | over 30 s | none |" in text
    )
    assert "### Crash of `opinfo/sum/forward/float32/0`" in text
    assert "Fatal Python error: Segmentation fault" in text
    assert "start sum" in text
    assert "torchcts-run '--manifest' 'm.py'" in text
    assert "standalone repro script" in text
    assert "1 crash record file(s) name a case the artifact does not record" in text
    assert "`simdev_x86-64-2cpu_crashes/old.json`: case `opinfo/old/x/-/-`" in text


def test_unreadable_evidence_is_named_not_fatal(tmp_path, syn):
    """A damaged crash record or probe file is named in the report; the rest renders."""
    crashes = tmp_path / "simdev_x86-64-2cpu_crashes"
    crashes.mkdir()
    (crashes / "bad.json").write_text("{not json")
    (crashes / "list.json").write_text("[1]")
    (crashes / "nocase.json").write_text("{}")
    (crashes / "bytes.json").write_bytes(b"\xff\xfe")
    (tmp_path / "simdev_x86-64-2cpu_harness_probe_failures_1.jsonl").write_text(
        '{"kind": "dtype"}\n[1]\n{oops\n'
    )
    text = _section(_render(tmp_path, syn), "Diagnostics")
    assert "`simdev_x86-64-2cpu_crashes/bad.json`: invalid JSON at line 1" in text
    assert "`simdev_x86-64-2cpu_crashes/list.json`: not a JSON object" in text
    assert "`simdev_x86-64-2cpu_crashes/nocase.json`: crash record has no" in text
    assert "`simdev_x86-64-2cpu_crashes/bytes.json`: not UTF-8 text" in text
    assert "probe\\_failures\\_1.jsonl" not in text  # names are code spans, unescaped
    assert (
        "`simdev_x86-64-2cpu_harness_probe_failures_1.jsonl`: line 2 is not a JSON"
        in text
    )
    assert "line 3 is not valid JSON" in text


def test_diagnostics_listed_sorted(tmp_path, syn):
    """Run-level diagnostics appear as sorted key/value lines."""
    art = syn.artifact()
    art.diagnostics.update({"zeta": 1, "alpha": {"b": 2, "a": 1}})
    text = _section(_render(tmp_path, syn, art), "Diagnostics")
    assert text.index("`alpha`") < text.index("`zeta`")
    assert '`{"a": 1, "b": 2}`' in text


def test_empty_run_renders_every_section(tmp_path, syn):
    """A run with no records still renders every section with zero counts."""
    text = _render(tmp_path, syn, syn.artifact([], completed_normally=False))
    for title in (
        "Run",
        "Status counts",
        "Diagnostic probes",
        "Next fix",
        "Failure clusters",
        "Crash records",
        "Counts by dtype",
        "Not run, by reason",
        "Diagnostics",
    ):
        assert f"## {title}" in text
    assert "| **total** | 0 |" in text
    assert "0 case record(s)" in text


def test_other_run_key_evidence_is_ignored(tmp_path, syn):
    """Evidence files of another run key in the same directory are not mixed in."""
    other = syn.artifact([syn.record()], run_key="cpu_other")
    syn.write(tmp_path, other)
    (tmp_path / "cpu_other_harness_probe_failures_9.jsonl").write_text(
        '{"kind": "dtype", "probe": "x", "status": "failed", "note": "other"}\n'
    )
    syn.write(tmp_path, syn.artifact())
    report = load_input(tmp_path, run_key="simdev_x86-64-2cpu")
    assert report.probe_failures == []
    text = render_markdown(report)
    assert "other" not in _section(text, "Diagnostic probes")


def test_history_artifact_path_finds_evidence(tmp_path, syn):
    """Rendering a history file directly still finds the evidence in the results dir."""
    history = syn.write(tmp_path, syn.artifact())
    (tmp_path / "simdev_x86-64-2cpu_harness_probe_failures_1.jsonl").write_text(
        '{"kind": "dtype", "probe": "p", "status": "failed", "note": "n"}\n'
    )
    report = load_input(history)
    assert len(report.probe_failures) == 1


def test_crash_without_crash_info_is_still_listed(tmp_path, syn):
    """A crashed record lacking crash details is still listed, marked as such."""
    rec = replace(syn.record("abs", status=Status.CRASHED), detail="worker lost")
    text = _section(_render(tmp_path, syn, syn.artifact([rec])), "Crash records")
    assert (
        "| `opinfo/abs/forward/float32/0` | (not recorded) |  | worker lost |" in text
    )


def test_reference_diagnostics_from_oracle_files(tmp_path, syn):
    """Oracle failure records are listed by case, apart from backend results."""
    rows = [
        {
            "type": "opinfo_oracle_failure",
            "case_id": "opinfo/z/forward/float32/0",
            "exception_type": "RuntimeError",
            "message": "cpu kernel missing",
        },
        {
            "type": "opinfo_oracle_failure",
            "case_id": "opinfo/a/forward/float32/0",
            "exception_type": "ValueError",
            "message": "bad sample",
        },
    ]
    for pid, row in zip((200, 100), rows, strict=True):
        (
            tmp_path / f"simdev_x86-64-2cpu_opinfo_oracle_failures_{pid}.jsonl"
        ).write_text(json.dumps(row) + "\n")
    text = _section(_render(tmp_path, syn), "Reference diagnostics")
    assert "2 case(s) had no valid CPU reference" in text
    assert text.index("opinfo/a/forward") < text.index("opinfo/z/forward")
    assert (
        "| `opinfo/z/forward/float32/0` | RuntimeError | cpu kernel missing |" in text
    )


def test_no_reference_diagnostics_says_so(tmp_path, syn):
    """Without oracle failure files the section says there were none."""
    assert "No oracle failure records were found." in _render(tmp_path, syn)
