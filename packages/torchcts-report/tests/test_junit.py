"""JUnit XML: one test case per case, statuses mapped so CI systems show them natively."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from torchcts_report import load_input, render_junit


def _root(tmp_path, syn, artifact=None):  # type: ignore[no-untyped-def]
    syn.write(tmp_path, artifact or syn.artifact())
    return ET.fromstring(render_junit(load_input(tmp_path)).encode("utf-8"))


def _case(root, case_id):  # type: ignore[no-untyped-def]
    found = root.find(f".//testcase[@name='{case_id}']")
    assert found is not None, case_id
    return found


def test_one_testcase_per_case_and_totals(tmp_path, syn):
    """Every record is one testcase; totals count failures, errors and skips."""
    root = _root(tmp_path, syn)
    assert len(root.findall(".//testcase")) == 15
    assert root.get("tests") == "15"
    assert root.get("failures") == "3"
    assert root.get("errors") == "4"  # error + unsupported + 2 crashed
    assert root.get("skipped") == "3"  # 2 not_run + 1 skipped
    suites = [s.get("name") for s in root.findall("testsuite")]
    assert suites == sorted(suites) == ["opinfo", "rng", "views"]


def test_failed_maps_to_failure(tmp_path, syn):
    """A failed case carries a <failure> with the mismatch and its rerun command."""
    node = _case(_root(tmp_path, syn), "opinfo/mul/forward/float64/0")
    failure = node.find("failure")
    assert failure is not None
    assert failure.get("message") == "dtype float32 != float64"
    assert "rerun: torchcts-run --manifest 'manifests/simdev.py'" in (
        failure.text or ""
    )


def test_error_unsupported_crashed_map_to_error(tmp_path, syn):
    """error, unsupported and crashed carry an <error> with their details."""
    root = _root(tmp_path, syn)
    error = _case(root, "opinfo/sin/forward/float32/0").find("error")
    assert error is not None and error.get("type") == "RuntimeError"
    assert "bad pointer 0x7ffd1234" in (error.get("message") or "")
    unsupported = _case(root, "opinfo/nn.functional.conv2d/forward/float32/0").find(
        "error"
    )
    assert unsupported is not None
    assert unsupported.get("type") == "unsupported.NotImplementedError"
    assert (unsupported.get("message") or "").startswith(
        "unsupported: NotImplementedError"
    )
    crashed = _case(root, "opinfo/sum/forward/float32/0").find("error")
    assert crashed is not None and crashed.get("type") == "crashed.signal"
    assert crashed.get("message") == "crashed: signal SIGSEGV: segfault"
    assert "crash evidence: simdev_x86-64-2cpu_crashes/sum.json" in (crashed.text or "")


def test_not_run_and_skipped_map_to_skipped(tmp_path, syn):
    """not_run and skipped carry a <skipped> with the reason."""
    root = _root(tmp_path, syn)
    not_run = _case(root, "opinfo/div/forward/bfloat16/0").find("skipped")
    assert not_run is not None
    assert (not_run.get("message") or "").startswith("not_run: dtype_not_supported: ")
    skipped = _case(root, "rng/rng/stream/-/-").find("skipped")
    assert (
        skipped is not None and skipped.get("message") == "skipped: needs two devices"
    )


def test_passed_has_no_child(tmp_path, syn):
    """A passed case is an empty testcase with its duration."""
    rec = syn.record(duration_s=0.0125)
    node = _case(_root(tmp_path, syn, syn.artifact([rec])), rec.case_id)
    assert list(node) == []
    assert node.get("time") == "0.013" or node.get("time") == "0.012"
    assert node.get("classname") == "torchcts.opinfo.add"


def test_properties_carry_run_identity(tmp_path, syn):
    """Each suite's properties name backend, hardware key, versions and completion."""
    root = _root(tmp_path, syn, syn.artifact(completed_normally=False))
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["hardware_key"] == "x86-64-2cpu"
    assert props["torch_version"] == "2.13.0"
    assert props["completed_normally"] == "false"


def test_empty_run_is_valid_junit(tmp_path, syn):
    """A run without records is still a valid, empty testsuites document."""
    root = _root(tmp_path, syn, syn.artifact([]))
    assert root.tag == "testsuites" and root.get("tests") == "0"


def test_newlines_in_attributes_survive(tmp_path, syn):
    """A multi-line message stays one attribute (newlines encoded, not lost)."""
    from torchcts_schema import Status

    rec = syn.record(status=Status.ERROR, exception_type="E", exception_message="a\nb")
    node = _case(_root(tmp_path, syn, syn.artifact([rec])), rec.case_id)
    error = node.find("error")
    assert error is not None and error.get("message") == "E: a b"
    assert "a\nb" in (error.text or "")


def _filtered_artifact(syn):  # type: ignore[no-untyped-def]
    from torchcts_schema import NotRunReason, Status

    left_out = [
        syn.record(
            f"other{i}",
            status=Status.NOT_RUN,
            source=None,
            not_run_reason=NotRunReason.FILTERED_BY_SELECTION,
        )
        for i in range(2)
    ]
    deep = syn.record(
        "deep",
        status=Status.NOT_RUN,
        source=None,
        level=5,
        not_run_reason=NotRunReason.LEVEL_FILTERED,
    )
    excluded = syn.record(
        "div",
        status=Status.NOT_RUN,
        source=None,
        not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
    )
    return syn.artifact([syn.record("add"), excluded, deep, *left_out])


def test_cases_the_run_filtered_out_are_counted_not_listed(tmp_path, syn):
    """Cases outside the run's selection are counted per reason, not listed."""
    root = _root(tmp_path, syn, _filtered_artifact(syn))
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == ["opinfo/add/forward/float32/0", "opinfo/div/forward/float32/0"]
    assert root.get("tests") == "2" and root.get("skipped") == "1"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["unlisted_not_run.filtered_by_selection"] == "2"
    assert props["unlisted_not_run.level_filtered"] == "1"


def test_include_filtered_lists_every_case(tmp_path, syn):
    """With include_filtered, every not_run case is a skipped testcase."""
    syn.write(tmp_path, _filtered_artifact(syn))
    xml = render_junit(load_input(tmp_path), include_filtered=True)
    root = ET.fromstring(xml.encode("utf-8"))
    assert len(root.findall(".//testcase")) == 5
    assert root.get("skipped") == "4"


def test_cli_junit_all_flag(tmp_path, syn):
    """render --junit-all lists the filtered cases in the written JUnit file."""
    from torchcts_report.cli import main

    syn.write(tmp_path, _filtered_artifact(syn))
    assert main(["render", str(tmp_path), "--junit-all"]) == 0
    xml = (tmp_path / "simdev_x86-64-2cpu.junit.xml").read_text()
    assert xml.count("<testcase ") == 5
