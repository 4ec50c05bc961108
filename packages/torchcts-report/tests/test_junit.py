"""JUnit XML: one test case per case, statuses mapped so CI systems show them natively."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from torchcts_report import load_input, render_junit
from torchcts_report.junit import COUNTED_REASONS
from torchcts_schema import NotRunReason, Status


def _root(tmp_path, syn, artifact=None, *, list_all=False):  # type: ignore[no-untyped-def]
    syn.write(tmp_path, artifact or syn.artifact())
    xml = render_junit(load_input(tmp_path), list_all=list_all)
    return ET.fromstring(xml.encode("utf-8"))


def _case(root, case_id):  # type: ignore[no-untyped-def]
    found = root.find(f".//testcase[@name='{case_id}']")
    assert found is not None, case_id
    return found


def test_one_testcase_per_listed_case_and_totals(tmp_path, syn):
    """Each executed case is one testcase; totals count failures, errors and skips."""
    root = _root(tmp_path, syn)
    # the mixed run's two not_run cases (dtype, capability) are counted, not listed
    assert len(root.findall(".//testcase")) == 13
    assert root.get("tests") == "13"
    assert root.get("failures") == "3"
    assert root.get("errors") == "4"  # error + unsupported + 2 crashed
    assert root.get("skipped") == "1"  # the skipped case
    suites = [s.get("name") for s in root.findall("testsuite")]
    assert suites == sorted(suites) == ["opinfo", "rng", "views"]


def test_list_all_makes_every_record_a_testcase(tmp_path, syn):
    """With list_all every record is one testcase, not_run ones as skips."""
    root = _root(tmp_path, syn, list_all=True)
    assert len(root.findall(".//testcase")) == 15
    assert root.get("tests") == "15"
    assert root.get("skipped") == "3"  # 2 not_run + 1 skipped
    assert not [p for p in root.iter("property") if "unlisted" in str(p.get("name"))]
    assert root.find(".//system-out") is None


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
    """not_run and skipped carry a <skipped> with the reason and its detail."""
    excluded = syn.record(
        "div",
        status=Status.NOT_RUN,
        source=None,
        not_run_reason=NotRunReason.REFERENCE_UNAVAILABLE,  # a listed reason
        detail="no kernel yet",
    )
    root = _root(tmp_path, syn, syn.artifact([*syn.mixed(), excluded]))
    not_run = _case(root, excluded.case_id).find("skipped")
    assert not_run is not None
    message = not_run.get("message") or ""
    assert message.startswith("not_run: reference_unavailable: ")
    assert message.endswith("(no kernel yet)")
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
    undeclared = syn.record(
        "div",
        status=Status.NOT_RUN,
        source=None,
        not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
    )
    return syn.artifact([syn.record("add"), undeclared, deep, *left_out])


def test_configuration_not_run_cases_are_counted_not_listed(tmp_path, syn):
    """Filtered, level and dtype not_run cases are counted per reason, not listed."""
    root = _root(tmp_path, syn, _filtered_artifact(syn))
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == ["opinfo/add/forward/float32/0"]
    assert root.get("tests") == "1" and root.get("skipped") == "0"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["unlisted_not_run.filtered_by_selection"] == "2"
    assert props["unlisted_not_run.level_filtered"] == "1"
    assert props["unlisted_not_run.dtype_not_supported"] == "1"


def test_counted_cases_have_a_summary_line(tmp_path, syn):
    """A suite with counted cases says how many, per reason, in its <system-out>."""
    views = syn.record("views", None, suite="views", variant="view_of", sample=None)
    art = syn.artifact([*_filtered_artifact(syn).records, views])
    suites = {s.get("name"): s for s in _root(tmp_path, syn, art).iter("testsuite")}
    line = suites["opinfo"].findtext("system-out") or ""
    assert line.startswith("4 not_run case(s) counted, not listed (")
    assert "dtype_not_supported 1, filtered_by_selection 2, level_filtered 1" in line
    assert "--junit-all" in line
    assert suites["views"].find("system-out") is None


# the decision per reason, one line of rationale each in the junit module docstring
EXPECTED_COUNTED = {
    NotRunReason.DTYPE_NOT_SUPPORTED,
    NotRunReason.CAPABILITY_NOT_DECLARED,
    NotRunReason.LEVEL_FILTERED,
    NotRunReason.FILTERED_BY_SELECTION,
    NotRunReason.SAMPLE_LIMIT,
    NotRunReason.OP_EXCLUDED,
    NotRunReason.DEVICE_COUNT,
    NotRunReason.COMPARISON_NOT_VALID,
}


@pytest.mark.parametrize("reason", list(NotRunReason))
def test_each_reason_is_listed_or_counted(tmp_path, syn, reason):
    """Configuration reasons are counted; reasons that call for work on a case list it."""
    rec = syn.record("div", status=Status.NOT_RUN, source=None, not_run_reason=reason)
    root = _root(tmp_path, syn, syn.artifact([rec]))
    listed = [c.get("name") for c in root.iter("testcase")]
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    if reason in EXPECTED_COUNTED:
        assert listed == [] and props[f"unlisted_not_run.{reason.value}"] == "1"
    else:
        assert listed == [rec.case_id]
        assert not any(str(k).startswith("unlisted_not_run.") for k in props)
    assert {r.value for r in COUNTED_REASONS} == {r.value for r in EXPECTED_COUNTED}
    assert reason.value in _junit_docstring()


def _junit_docstring() -> str:
    import torchcts_report.junit

    return torchcts_report.junit.__doc__ or ""


def test_not_run_without_a_reason_is_listed(tmp_path, syn):
    """A not_run record that names no reason is listed, never silently counted."""
    rec = syn.record("div", status=Status.NOT_RUN, source=None, detail="why not")
    skipped = _case(_root(tmp_path, syn, syn.artifact([rec])), rec.case_id)
    assert skipped.find("skipped") is not None


def test_list_all_lists_every_case(tmp_path, syn):
    """With list_all, every not_run case is a skipped testcase and none is counted."""
    syn.write(tmp_path, _filtered_artifact(syn))
    xml = render_junit(load_input(tmp_path), list_all=True)
    root = ET.fromstring(xml.encode("utf-8"))
    assert len(root.findall(".//testcase")) == 5
    assert root.get("skipped") == "4"
    assert "unlisted_not_run" not in xml


def test_cli_junit_all_flag(tmp_path, syn):
    """render --junit-all lists the counted cases in the written JUnit file."""
    from torchcts_report.cli import main

    syn.write(tmp_path, _filtered_artifact(syn))
    assert main(["render", str(tmp_path), "--junit-all"]) == 0
    xml = (tmp_path / "simdev_x86-64-2cpu.junit.xml").read_text()
    assert xml.count("<testcase ") == 5
    assert main(["render", str(tmp_path)]) == 0
    xml = (tmp_path / "simdev_x86-64-2cpu.junit.xml").read_text()
    assert xml.count("<testcase ") == 1


def test_no_empty_suite_is_written(tmp_path, syn):
    """A suite appears only with a listed or a counted case; counted ones add no skip."""
    excluded = {"status": Status.NOT_RUN, "source": None}
    recs = [
        syn.record("add"),
        syn.record(
            "save_load",
            None,
            suite="serialization",
            variant="check",
            sample=None,
            not_run_reason=NotRunReason.COMPARISON_NOT_VALID,
            **excluded,
        ),
    ]
    root = _root(tmp_path, syn, syn.artifact(recs))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert sorted(suites) == ["opinfo", "serialization"]
    assert suites["serialization"].get("tests") == "0"
    assert root.find(".//skipped") is None
    assert root.get("skipped") == "0"


def test_list_all_gives_each_case_its_own_skip(tmp_path, syn):
    """Listed not_run cases each carry one <skipped> with their own reason and detail."""
    recs = [
        syn.record(
            f"op{i}",
            status=Status.NOT_RUN,
            source=None,
            not_run_reason=reason,
            detail=detail,
        )
        for i, (reason, detail) in enumerate(
            [
                (NotRunReason.OP_EXCLUDED, "no kernel"),
                (NotRunReason.OP_EXCLUDED, "no kernel"),
                (NotRunReason.OP_EXCLUDED, "sparse\x00\x1b[31m"),
                (NotRunReason.DEVICE_COUNT, None),
            ]
        )
    ]
    root = _root(tmp_path, syn, syn.artifact(recs), list_all=True)
    messages = {
        c.get("name"): [s.get("message") for s in c.findall("skipped")]
        for c in root.iter("testcase")
    }
    assert [len(m) for m in messages.values()] == [1, 1, 1, 1]
    assert messages[recs[0].case_id] == messages[recs[1].case_id]
    assert str(messages[recs[0].case_id][0]).endswith("(no kernel)")
    hostile = str(messages[recs[2].case_id][0])
    assert "\x00" not in hostile and "\x1b" not in hostile and "sparse" in hostile
    assert str(messages[recs[3].case_id][0]).startswith("not_run: device_count: ")


def _hostile_artifact(syn):  # type: ignore[no-untyped-def]
    """The mixed run plus records whose every string is markup, quotes, tabs,
    newlines, control characters, a lone surrogate or bidi controls."""
    odd = "a<b>&c \"q\" 's'\tt\nn \x00\x1b \ud800 \u202e"
    records = [
        *syn.mixed(),
        syn.record(
            odd,
            status=Status.ERROR,
            case_id=f"opinfo/{odd}/forward/float32/0",
            exception_type=odd,
            exception_message=odd,
        ),
        syn.record(
            "lt<",
            suite=odd,
            status=Status.FAILED,
            case_id="opinfo/lt</forward/float32/0",
            mismatch=odd,
            detail=odd,
        ),
        syn.record(
            "skip",
            status=Status.NOT_RUN,
            source=None,
            not_run_reason=NotRunReason.KNOWN_CRASH_NOT_EXECUTED,
            detail=odd,
        ),
    ]
    return syn.artifact(records)


@pytest.mark.parametrize("list_all", [False, True])
def test_the_text_is_what_element_tree_writes(tmp_path, syn, list_all):
    """Parsed and written again by ElementTree, the document is the same text: the
    writer spells elements, attributes, escapes and indents as ElementTree does."""
    syn.write(tmp_path, _hostile_artifact(syn))
    xml = render_junit(load_input(tmp_path), list_all=list_all)
    head, body = xml.split("\n", 1)
    assert head == '<?xml version="1.0" encoding="UTF-8"?>'
    again = ET.tostring(ET.fromstring(body.encode("utf-8")), encoding="unicode")
    assert f"{again}\n" == body
    fresh = ET.fromstring(body.encode("utf-8"))  # and indent leaves it as it is
    ET.indent(fresh, space="  ")
    assert f"{ET.tostring(fresh, encoding='unicode')}\n" == body


def test_a_small_run_reads_as_written_by_hand(tmp_path, syn):
    """One passed and one failed case: the whole document, spelt out."""
    passed = syn.record("add", duration_s=0.0125)
    failed = syn.record("mul", status=Status.FAILED, mismatch='max diff "2" > 1')
    syn.write(tmp_path, syn.artifact([passed, failed]))
    xml = render_junit(load_input(tmp_path))
    lines = xml.splitlines()
    assert lines[1].startswith('<testsuites name="torchcts ') and lines[1].endswith(
        'tests="2" failures="1" errors="0" skipped="0" time="0.013">'
    )
    assert lines[2] == (
        '  <testsuite name="opinfo" tests="2" failures="1" errors="0" skipped="0" '
        'time="0.013">'
    )
    assert lines[3] == "    <properties>"
    assert lines[4].startswith('      <property name="backend" value="')
    assert lines[11] == "    </properties>"
    assert lines[12] == (
        f'    <testcase classname="torchcts.opinfo.add" name="{passed.case_id}" '
        'time="0.013" />'
    )
    assert lines[13] == (
        f'    <testcase classname="torchcts.opinfo.mul" name="{failed.case_id}" '
        'time="0.000">'
    )
    assert lines[14] == (
        '      <failure type="mismatch" message="max diff &quot;2&quot; &gt; 1">'
        "status: failed"
    )
    assert lines[-3:] == ["    </testcase>", "  </testsuite>", "</testsuites>"]
