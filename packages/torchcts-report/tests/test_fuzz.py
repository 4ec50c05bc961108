"""Arbitrary JSON in any field: the report either renders or raises one ArtifactError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torchcts_report import load_input, render_html, render_junit, render_markdown
from torchcts_schema import ArtifactError, encode_artifact

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)
RECORD_FIELDS = [
    "case_id",
    "op",
    "variant",
    "dtype",
    "sample",
    "level",
    "status",
    "expected_source",
    "suite",
    "mismatch",
    "exception_type",
    "exception_message",
    "crash",
    "duration_s",
    "isolation",
    "next_fix",
    "not_run_reason",
    "detail",
    "worker",
    "extra",
]
META_FIELDS = [
    "run_key",
    "device",
    "backend",
    "command",
    "started_at",
    "ended_at",
    "completed_normally",
    "counts",
    "level",
    "options",
    "probes",
]


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    where=st.sampled_from(["record", "metadata", "diagnostics", "crash", "extra"]),
    index=st.integers(min_value=0, max_value=14),
    record_field=st.sampled_from(RECORD_FIELDS),
    meta_field=st.sampled_from(META_FIELDS),
    value=JSON,
)
def test_any_value_renders_or_is_one_clear_error(
    syn, where, index, record_field, meta_field, value
):
    """No field value makes the report crash with anything but an ArtifactError."""
    data = json.loads(encode_artifact(syn.artifact(), encoding="plain"))
    if where == "record":
        records = data["results"] + data["not_run"]
        target = records[index % len(records)]
        target[record_field] = value
    elif where == "metadata":
        data["metadata"][meta_field] = value
    elif where == "crash":
        crashed = next(r for r in data["results"] if r["crash"])
        crashed["crash"][meta_field if meta_field in crashed["crash"] else "signal"] = (
            value
        )
        crashed["crash"]["detail" if index % 2 else "exit_code"] = value
    elif where == "extra":
        data["results"][index % len(data["results"])]["extra"] = {"capability": value}
    else:
        data["diagnostics"] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "simdev_x86-64-2cpu_latest.json"
        path.write_text(json.dumps(data))
        try:
            report = load_input(path)
        except ArtifactError:
            return
        for render in (render_markdown, render_html, render_junit):
            render(report)


EVIDENCE_KEYS = [
    "case_id",
    "crash",
    "runlog_tail",
    "stderr_tail",
    "traceback",
    "environment",
    "repro_command",
    "repro_script",
]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(key=st.sampled_from(EVIDENCE_KEYS), value=JSON, probe=JSON)
def test_any_evidence_file_content_renders(syn, key, value, probe):
    """Crash records and probe rows of any shape never stop the report."""
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp)
        syn.write(results, syn.artifact())
        crashes = results / "simdev_x86-64-2cpu_crashes"
        crashes.mkdir()
        record = {"case_id": "opinfo/sum/forward/float32/0", key: value}
        (crashes / "sum.json").write_text(json.dumps(record))
        (results / "simdev_x86-64-2cpu_harness_probe_failures_1.jsonl").write_text(
            json.dumps(probe) + "\n"
        )
        (results / "simdev_x86-64-2cpu_opinfo_oracle_failures_1.jsonl").write_text(
            json.dumps(probe) + "\n"
        )
        report = load_input(results)
        for render in (render_markdown, render_html, render_junit):
            render(report)
