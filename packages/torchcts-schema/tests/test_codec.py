"""Round trips of the plain and compact artifact encodings."""

from __future__ import annotations

import ast
import json
import math
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
    JournalWriter,
    NextFix,
    NotRunReason,
    RunArtifact,
    SharedTexts,
    Status,
    ToleranceSource,
    ToleranceUsed,
    codec,
    decode_artifact,
    encode_artifact,
    make_case_id,
    node_id_for_case,
    read_journal,
)
from torchcts_schema.journal import line_record

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
    # one record per case id, as every writer keeps them (the decoder refuses more)
    st.lists(case_records(), max_size=25, unique_by=lambda r: r.case_id),
    st.sampled_from(["plain", "compact", "auto"]),
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


HOSTILE = [
    "\ud800 lone surrogate",
    'quote " backslash \\ slash /',
    "nul \x00 bell \x07 newline \n tab \t",
    "\u2028\u2029 separators, \ufeff bom, \uffff",
    "é, 漢字, 🙂",
    "x" * 1_000_000,  # a megabyte message
]


def test_shared_columns_restore_hostile_values_exactly(tmp_path: Path) -> None:
    """Surrogates, escapes, controls and a megabyte string in shared tolerance,
    extra, facts and crash tables come back equal through a written file."""
    crash = CrashInfo(CrashKind.SIGNAL, "SIGSEGV", -11, HOSTILE[0], HOSTILE[2])
    tolerances = [
        ToleranceUsed(HOSTILE[1], 0.0, 1e-5, ToleranceSource.DEFAULT_TABLE),
        ToleranceUsed("float32", -0.0, 1e-5, ToleranceSource.DEFAULT_TABLE),
        ToleranceUsed("float32", 0, 1e-5, ToleranceSource.DEFAULT_TABLE),
    ]
    records = [
        record(
            sample=i,
            status=Status.CRASHED if i % 7 == 0 else Status.PASSED,
            crash=crash if i % 7 == 0 else None,
            exception_message=HOSTILE[5] if i == 3 else None,
            extra={"surfaces": [HOSTILE[i % len(HOSTILE)], "aten::add.out"]},
            tolerance=tolerances[i % 3],
            facts={"inputs": [HOSTILE[i % 2]], "nan": float("nan")} if i % 2 else None,
        )
        for i in range(40)
    ]
    artifact = RunArtifact.from_records(metadata(), records)
    data = json.loads(encode_artifact(artifact))
    columns = data["results"]["columns"]
    for name in ("crash", "extra", "tolerance", "facts"):
        assert columns[name]["codec"] == "shared", name
    assert len(columns["tolerance"]["table"]) == 3  # 0.0, -0.0 and 0 stay apart
    path = tmp_path / "a.json"
    path.write_text(encode_artifact(artifact), encoding="utf-8")
    back = decode_artifact(json.loads(path.read_text(encoding="utf-8")), "a.json")
    assert repr(back.results) == repr(artifact.results)  # NaN-safe, types included
    signs = [math.copysign(1, r.tolerance.atol) for r in back.results[:3]]
    assert signs == [1, -1, 1]
    assert [type(r.tolerance.atol) for r in back.results[:3]] == [float, float, int]


def test_a_realistic_run_stores_each_surface_list_once() -> None:
    """2,000 records over 40 surface lists and 3 tolerances: the tables hold 40 and
    3 values, the artifact is a fraction of the raw form, and every record gets
    its own extra dict back."""
    tolerances = [
        ToleranceUsed(d, 1e-5, 1.3e-6, ToleranceSource.DEFAULT_TABLE)
        for d in ("float32", "float64", "bfloat16")
    ]
    lists = [[f"aten::op{k}.out", "aten::_to_copy", "aten::detach"] for k in range(40)]
    records = [
        record(
            op=f"op{i % 40}",
            sample=i,
            extra={"surfaces": list(lists[i % 40])},
            tolerance=tolerances[i % 3],
        )
        for i in range(2000)
    ]
    data = json.loads(encode_artifact(RunArtifact.from_records(metadata(), records)))
    columns = data["results"]["columns"]
    assert len(columns["extra"]["table"]) == 40
    assert len(columns["tolerance"]["table"]) == 3
    raw_size = len(json.dumps([r.to_dict()["extra"] for r in records]))
    assert len(json.dumps(columns["extra"])) * 5 < raw_size
    back = codec.decode_records(data["results"])
    assert back == records
    back[0].extra["mine"] = True
    assert "mine" not in back[40].extra  # same table entry, its own dict


@settings(max_examples=150, deadline=None)
@given(st.lists(case_records(), max_size=8))
def test_journal_lines_restore_records_exactly(records: list[CaseRecord]) -> None:
    """A case line without its nulls and defaults reads back as the record does
    from its full dict, value and type."""
    for each in records:
        line = json.loads(json.dumps(line_record(each)))
        full = json.loads(json.dumps(each.to_dict()))
        assert repr(CaseRecord.from_dict(line)) == repr(CaseRecord.from_dict(full))
        assert repr(CaseRecord.from_dict(line)) == repr(each)


def test_journal_lines_keep_values_that_only_equal_a_default(tmp_path: Path) -> None:
    """A True level, a 1.0 level and a None node id are written (left out, they
    would read back as 1 and ""); plain defaults are not; the journal gives every
    record back as its full dict would."""
    odd = [
        record(sample=1, level=True),
        record(sample=2, level=1.0),
        record(sample=3, node_id=None, isolation="none"),
    ]
    plain = record(sample=5, extra={}, worker=None, suite="opinfo")
    assert line_record(odd[0])["level"] is True
    assert type(line_record(odd[1])["level"]) is float
    assert line_record(odd[2])["node_id"] is None
    assert "isolation" not in line_record(odd[2])
    assert not {"extra", "worker", "suite", "crash", "level"} & set(line_record(plain))
    path = tmp_path / "k_journal.jsonl"
    with JournalWriter(path) as journal:
        journal.run_start(metadata())
        for each in [*odd, plain]:
            journal.case(each)
    back = list(read_journal(path).records.values())
    full = [json.loads(json.dumps(r.to_dict())) for r in [*odd, plain]]
    assert repr(back) == repr([CaseRecord.from_dict(f) for f in full])
    assert len(path.read_text().splitlines()[-1]) < 330  # ~550 with every key


def test_a_value_changed_after_it_was_noted_keeps_its_noted_text() -> None:
    """The history holds what the journal holds: the text noted as the record was
    journaled, for every row that shares it."""
    records = [
        record(sample=i, extra={"surfaces": ["aten::add.out"]}) for i in range(4)
    ]
    known = SharedTexts()
    for each in records:
        known.note(each)
    records[0].extra["surfaces"].append("aten::late")  # changed after journaling
    back = codec.decode_records(
        json.loads(json.dumps(codec.encode_records(records, known)))
    )
    assert [r.extra for r in back] == [{"surfaces": ["aten::add.out"]}] * 4
