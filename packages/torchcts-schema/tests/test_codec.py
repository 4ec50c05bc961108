"""Round trips of the plain and compact artifact encodings."""

from __future__ import annotations

import ast
import json
import string
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from schema_factories import metadata, record
from torchcts_schema import (
    CaseRecord,
    CrashInfo,
    CrashKind,
    ExpectedSource,
    NextFix,
    NotRunReason,
    RunArtifact,
    Status,
    ToleranceSource,
    ToleranceUsed,
    codec,
    decode_artifact,
    encode_artifact,
    make_case_id,
    node_id_for_case,
)

TOKEN = st.text(string.ascii_letters + string.digits + "_.", min_size=1, max_size=12)
JSON_SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUE = st.recursive(
    JSON_SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def case_records(draw: st.DrawFn) -> CaseRecord:
    """Arbitrary records: canonical or arbitrary ids, any optional field set or not."""
    suite, op, variant = draw(TOKEN), draw(TOKEN), draw(TOKEN)
    dtype = draw(st.none() | st.sampled_from(["float32", "int64", "bool"]))
    sample = draw(st.none() | st.integers(0, 50))
    canonical = draw(st.booleans())
    case_id = (
        make_case_id(suite, op, variant, dtype, sample)
        if canonical
        else draw(st.text(min_size=1, max_size=30))
    )
    crash = draw(
        st.none()
        | st.builds(
            CrashInfo,
            kind=st.sampled_from(CrashKind),
            signal=st.none() | st.sampled_from(["SIGSEGV", "SIGABRT"]),
            exit_code=st.none() | st.integers(-64, 255),
            detail=st.text(max_size=30),
            evidence=st.none() | st.text(max_size=20),
        )
    )
    return CaseRecord(
        case_id=case_id,
        node_id=node_id_for_case(case_id)
        if draw(st.booleans())
        else draw(st.text(max_size=30)),
        op=op,
        variant=variant,
        dtype=dtype,
        sample=sample,
        level=draw(st.integers(1, 8)),
        status=draw(st.sampled_from(Status)),
        expected_source=draw(st.none() | st.sampled_from(ExpectedSource)),
        suite=suite,
        mismatch=draw(st.none() | st.text(max_size=40)),
        exception_type=draw(
            st.none() | st.sampled_from(["RuntimeError", "NotImplementedError"])
        ),
        exception_message=draw(st.none() | st.text(max_size=40)),
        crash=crash,
        duration_s=draw(st.none() | st.floats(0, 1e6, allow_nan=False)),
        isolation=draw(st.sampled_from(["none", "ledger", "adaptive", "all"])),
        next_fix=draw(st.none() | st.sampled_from(NextFix)),
        not_run_reason=draw(st.none() | st.sampled_from(NotRunReason)),
        detail=draw(st.none() | st.text(max_size=20)),
        worker=draw(st.none() | st.sampled_from(["gw0", "gw1", "master"])),
        extra=draw(st.dictionaries(st.text(max_size=8), JSON_VALUE, max_size=3)),
        tolerance=draw(
            st.none()
            | st.builds(
                ToleranceUsed,
                dtype=st.none() | st.sampled_from(["float32", "bfloat16"]),
                atol=st.floats(0, 1),
                rtol=st.floats(0, 1),
                source=st.sampled_from(ToleranceSource),
                override_needed=st.booleans(),
            )
        ),
        facts=draw(
            st.none() | st.dictionaries(st.text(max_size=8), JSON_VALUE, max_size=3)
        ),
        repro=draw(st.none() | st.text(max_size=20)),
        cpu_fallback=draw(
            st.none()
            | st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=3).map(
                tuple
            )
        ),
    )


def _roundtrip(artifact: RunArtifact, encoding: str) -> RunArtifact:
    text = encode_artifact(artifact, encoding=encoding)
    return decode_artifact(json.loads(text), "test")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(case_records(), max_size=25), st.sampled_from(["plain", "compact", "auto"])
)
def test_encodings_restore_records_exactly(
    records: list[CaseRecord], encoding: str
) -> None:
    """Every encoding gives back equal metadata, results, not_run and diagnostics."""
    artifact = RunArtifact.from_records(metadata(), records, {"probe": {"passed": 3}})
    back = _roundtrip(artifact, encoding)
    assert back.metadata == artifact.metadata
    assert back.results == artifact.results
    assert back.not_run == artifact.not_run
    assert back.diagnostics == artifact.diagnostics


def test_compact_is_chosen_when_smaller() -> None:
    """A realistic run encodes compactly and is much smaller than plain JSON."""
    records = [record(op=f"op{i % 40}", sample=i) for i in range(2000)]
    artifact = RunArtifact.from_records(metadata(), records)
    auto = encode_artifact(artifact)
    plain = encode_artifact(artifact, encoding="plain")
    assert json.loads(auto)["encoding"] == "compact"
    assert len(auto) * 3 < len(plain)
    assert _roundtrip(artifact, "auto").results == records


def test_tiny_artifact_keeps_plain_when_compact_is_not_smaller() -> None:
    """Auto never picks an encoding larger than plain."""
    artifact = RunArtifact.from_records(metadata(), [record()])
    auto = encode_artifact(artifact)
    assert len(auto) <= len(encode_artifact(artifact, encoding="plain"))


def test_codec_source_has_no_exec_and_no_class_switch() -> None:
    """The decoder builds records without exec/eval or a ``__class__`` assignment."""
    source = Path(codec.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    calls = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not calls & {"exec", "eval", "compile"}
    stores = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "__class__"
        and isinstance(node.ctx, ast.Store)
    ]
    assert stores == []
    assert '"__class__"' not in source  # nor through setattr(obj, "__class__", ...)
