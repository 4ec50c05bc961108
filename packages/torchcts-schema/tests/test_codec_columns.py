"""The columnar codec agrees with the record-at-a-time reference, block for block."""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
import string
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import codec_reference as reference
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from schema_factories import metadata, record
from torchcts_schema import (
    ArtifactError,
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
    decode_artifact,
    encode_artifact,
    make_case_id,
    node_id_for_case,
    read_journal,
)
from torchcts_schema.codec import (
    FIELD_NAMES,
    OMITTED_WHEN_NULL,
    decode_records,
    encode_records,
)

NAN = float("nan")
TOKEN = st.text(string.ascii_letters + string.digits + "_.+-", min_size=1, max_size=6)
# segments make_case_id refuses or that are not plain str take the reference path
SEGMENT = TOKEN | st.sampled_from(["a/b", "x\n", "", " ", Status.PASSED])
JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([1.5, "passed", "signal", "bogus", "", "opinfo"]),
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["kind", "x"]), inner, max_size=2)
    ),
    max_leaves=4,
)
# a block written by the record-at-a-time encoder, before the columnar rewrite
OLD_BLOCK = Path(__file__).with_name("old_compact_block.json")


@st.composite
def record_lists(draw: st.DrawFn) -> list[CaseRecord]:
    """Records whose columns are often constant, interned or derivable, with odd values.

    Each field is drawn from a small pool, so constant and interned columns are
    common; pools mix enum members with equal plain strings, True with 1, NaN,
    ids that `make_case_id` refuses and ids that merely look canonical.
    """

    def pool(strategy: st.SearchStrategy[Any]) -> Any:
        return st.sampled_from(draw(st.lists(strategy, min_size=1, max_size=3)))

    parts = {
        "suite": pool(SEGMENT),
        "op": pool(SEGMENT),
        "variant": pool(SEGMENT),
        "dtype": pool(st.none() | st.sampled_from(["float32", "", "a/b"])),
        "sample": pool(
            st.none() | st.integers(-2, 40) | st.sampled_from([1, True, 1.5])
        ),
    }
    optional = {
        "level": pool(st.integers(1, 3) | st.just(True)),
        "status": pool(st.sampled_from([*Status, "passed", "not_run"])),
        "expected_source": pool(st.none() | st.sampled_from(ExpectedSource)),
        "mismatch": pool(st.none() | st.text(max_size=5)),
        "exception_type": pool(st.none() | st.just("RuntimeError")),
        "duration_s": pool(st.none() | st.just(NAN) | st.floats(0, 9) | st.just(1)),
        "isolation": pool(st.sampled_from(["none", "adaptive"])),
        "next_fix": pool(st.none() | st.sampled_from(NextFix)),
        "not_run_reason": pool(st.none() | st.sampled_from(NotRunReason)),
        "detail": pool(st.none() | st.text(max_size=4)),
        "worker": pool(st.none() | st.sampled_from(["gw0", "gw1"])),
    }
    crash = st.builds(CrashInfo, st.sampled_from(CrashKind), st.none() | TOKEN)
    tolerance = st.builds(
        ToleranceUsed,
        st.none() | TOKEN,
        st.floats(0, 1) | st.just(0),
        st.floats(0, 1),
        st.sampled_from(ToleranceSource),
        st.booleans(),
    )
    extra = (
        st.builds(dict)
        | st.builds(OrderedDict)
        | st.dictionaries(st.sampled_from(["k", "atol"]), JUNK, max_size=2)
        | st.sampled_from([(), 0])  # to_dict copies the one, cannot copy the other
    )
    records = []
    for _ in range(draw(st.integers(0, 12))):
        row = {name: draw(s) for name, s in parts.items()}
        try:
            canonical = make_case_id(**row)
        except (ValueError, TypeError):
            canonical = "/".join(map(str, row.values()))  # looks canonical, is not
        case_id = draw(pool(st.just(canonical) | st.sampled_from(["x", "a/b/c/d/0"])))
        node_id = draw(st.sampled_from([node_id_for_case(str(case_id)), "n", ""]))
        picks = {name: draw(s) for name, s in optional.items()}
        records.append(
            CaseRecord(
                case_id=case_id,
                node_id=node_id,
                crash=draw(st.none() | crash),
                extra=draw(extra),
                tolerance=draw(st.none() | tolerance),
                facts=draw(st.none() | st.sampled_from([{}, {"inputs": []}])),
                repro=draw(st.none() | st.sampled_from(["a.py", 3])),
                cpu_fallback=draw(
                    st.none() | st.sampled_from([("aten::sin.out",), ("a", "b"), (3,)])
                ),
                **row,
                **picks,
            )
        )
    return records


def _outcome(convert: Callable[[Any], Any], data: Any) -> tuple[str, str]:
    """What converting gives: its repr (typed, NaN-safe) or the exact error."""
    try:
        return "ok", repr(convert(copy.deepcopy(data)))
    except Exception as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=200, deadline=None)
@given(record_lists())
def test_encoding_equals_the_reference(records: list[CaseRecord]) -> None:
    """Same records give the reference's block (codecs, values, types) or its error."""
    outcome = _outcome(encode_records, records)
    assert outcome == _outcome(reference.encode_records, records)
    if outcome[0] == "ok":
        assert json.dumps(encode_records(records)) == json.dumps(
            reference.encode_records(records)
        )


@settings(max_examples=150, deadline=None)
@given(record_lists(), st.data())
def test_noted_texts_give_the_block_encoding_alone_gives(
    records: list[CaseRecord], data: st.DataObject
) -> None:
    """Texts noted for some of the records (and for records with fresh values that
    replaced them) leave the block, or the error, as encoding alone gives it."""
    known = SharedTexts()
    for each in records:
        if data.draw(st.booleans()):
            known.note(each)
    for each in records:  # replaced: equal values, other objects
        if isinstance(each.extra, dict):
            known.note(dataclasses.replace(each, extra=dict(each.extra)))

    def text(*args: Any) -> tuple[str, str]:  # the very records: no copy
        try:
            return "ok", json.dumps(encode_records(records, *args))
        except Exception as exc:
            return type(exc).__name__, str(exc)

    assert text(known) == text()


def _twins(first: dict[str, Any], second: dict[str, Any]) -> list[CaseRecord]:
    """Two records alike but for the given fields; ids canonical where they can be."""
    out = []
    for fields in (first, second):
        parts = {"suite": "opinfo", "op": "add", "variant": "forward"}
        parts |= {"dtype": "float32", "sample": 1}
        parts |= {k: v for k, v in fields.items() if k in parts}
        try:
            case_id = make_case_id(**parts)
        except (ValueError, TypeError):
            case_id = "/".join(map(str, parts.values()))
        rest = {"level": 1, "status": Status.PASSED} | fields | parts
        out.append(
            CaseRecord(
                case_id=case_id,
                node_id=node_id_for_case(case_id),
                expected_source=None,
                **rest,
            )
        )
    return out


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"sample": 1}, {"sample": True}),  # equal, but spelt "1" and "True"
        ({"sample": 1}, {"sample": 1.0}),
        ({"dtype": None}, {"dtype": ""}),  # both spelt "-"
        ({"dtype": []}, {"dtype": "float32"}),  # spelt "-" too, and unhashable
        ({"op": 5}, {"op": "add"}),
        ({"op": "a/b"}, {"op": "a/b", "sample": 2}),  # joins to a canonical look
        ({"op": "add\n"}, {"op": "add"}),
        ({"op": Status.PASSED}, {"op": "passed"}),
        ({"level": 1}, {"level": True}),
        ({"status": Status.PASSED}, {"status": "passed"}),
        ({"duration_s": NAN}, {"duration_s": NAN}),
        ({"extra": OrderedDict()}, {"extra": {}}),
    ],
)
def test_tricky_columns_encode_and_decode_like_the_reference(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    """Values equal but spelt apart, ids that only look canonical, NaN: as before."""
    records = _twins(first, second)
    block = encode_records(records)
    assert repr(block) == repr(reference.encode_records(records))
    parsed = json.loads(json.dumps(block))
    assert _outcome(decode_records, parsed) == _outcome(
        reference.decode_records, parsed
    )


@settings(max_examples=120, deadline=None)
@given(record_lists())
def test_decoding_equals_the_reference(records: list[CaseRecord]) -> None:
    """A block decodes to the reference's records, parsed from JSON or not."""
    assume(not any(r.extra == 0 for r in records))
    block = reference.encode_records(records)
    parsed = json.loads(json.dumps(block))
    for data in (block, parsed):
        assert _outcome(decode_records, data) == _outcome(
            reference.decode_records, data
        )


@st.composite
def damaged_blocks(draw: st.DrawFn) -> Any:
    """A valid JSON block with one column dropped, replaced or given a bad value."""
    records = draw(record_lists())
    assume(not any(r.extra == 0 for r in records))
    block = json.loads(json.dumps(encode_records(records)))
    columns = block["columns"]
    name = draw(st.sampled_from([n for n in FIELD_NAMES if n in columns]))
    spec = columns[name]
    how = draw(st.sampled_from(["drop", "const", "derived", "codec", "value"]))
    if how == "drop":
        del columns[name]
    elif how == "const":
        columns[name] = {"codec": "const", "value": draw(JUNK)}
    elif how == "derived":
        columns[name] = {"codec": "derived"}
    elif how == "codec":
        columns[name] = {**spec, "codec": draw(st.sampled_from(["zip", None, 3]))}
    elif block["count"]:
        table = draw(st.sampled_from(["index", "table"]))
        key = {"raw": "values", "intern": table, "shared": table}
        key = key.get(spec["codec"], "")
        if spec["codec"] == "const":
            spec["value"] = draw(JUNK)
        elif spec.get(key):
            spec[key][draw(st.integers(0, len(spec[key]) - 1))] = draw(JUNK)
    return block


@settings(max_examples=250, deadline=None)
@given(damaged_blocks())
def test_damaged_blocks_fail_like_the_reference(block: Any) -> None:
    """A damaged block gives the reference's records or its exact error."""
    assert _outcome(decode_records, block) == _outcome(reference.decode_records, block)


def test_a_block_written_before_the_rewrite_loads_and_encodes_the_same() -> None:
    """An old block decodes to its records, which encode back to the same columns
    but for the two format 3 stores shared (crash, extra): the same values."""
    text = OLD_BLOCK.read_text().strip()
    records = decode_records(json.loads(text))
    assert [r.status for r in records] == [
        Status.NOT_RUN,
        Status.NOT_RUN,
        Status.CRASHED,
        Status.FAILED,
    ]
    assert records[2].crash == CrashInfo(
        CrashKind.SIGNAL, "SIGSEGV", -11, "worker died"
    )
    assert records[2].extra == {"rss_mb": 812, "tags": ["a"]}
    before = json.loads(text)["columns"]
    after = json.loads(json.dumps(encode_records(records)))["columns"]
    assert list(after) == list(before)
    for name in ("crash", "extra"):
        spec = after.pop(name)
        assert spec["codec"] == "shared"
        rows = [None if i is None else spec["table"][i] for i in spec["index"]]
        assert rows == before.pop(name)["values"]
    assert after == before


def test_columns_follow_the_record_fields_in_order() -> None:
    """Every CaseRecord field is a column, in field order (the fields added after the
    freeze only when some record has them)."""
    block = encode_records([record(), record(sample=1)])
    assert tuple(block["columns"]) == FIELD_NAMES[: -len(OMITTED_WHEN_NULL)]
    used = ToleranceUsed("float32", 1e-5, 1.3e-5, ToleranceSource.DEFAULT_TABLE)
    block = encode_records([record(tolerance=used, repro="r.py"), record(sample=1)])
    assert tuple(block["columns"]) == (*FIELD_NAMES[:-3], "repro")
    assert decode_records(block)[0].tolerance == used
    block = encode_records([record(cpu_fallback=("aten::sin.out",)), record()])
    assert tuple(block["columns"]) == (*FIELD_NAMES[:-4], "cpu_fallback")


def test_new_record_fields_round_trip_and_bad_ones_are_named() -> None:
    """tolerance, facts and repro come back equal; a bad tolerance names its field."""
    used = ToleranceUsed("float32", 0.1, 0, ToleranceSource.MANIFEST_OP, True)
    facts = {"inputs": [{"shape": [2], "values": [1.0]}], "mismatches": []}
    records = [record(tolerance=used, facts=facts, repro="k_repros/a.py"), record()]
    assert decode_records(encode_records(records)) == records
    assert CaseRecord.from_dict(records[0].to_dict()) == records[0]
    bad = {"codec": "raw", "values": [{"atol": "x", "rtol": 0, "source": "x"}]}
    block = encode_records([record()])
    block["columns"]["tolerance"] = bad
    with pytest.raises(ArtifactError, match="tolerance atol is not a number"):
        decode_records(block)


def test_cpu_fallback_round_trips_and_a_bad_one_is_named() -> None:
    """cpu_fallback comes back as the same tuple from a block and from a dict, is a
    list in JSON, and a value that is not a list of names is refused by name."""
    names = ("aten::add.out", "aten::sin.out")
    other = ("aten::mul.out",)  # two lists in three rows: too few to share
    records = [record(cpu_fallback=names), record(sample=1, cpu_fallback=other)]
    records.append(record(sample=2))
    block = json.loads(json.dumps(encode_records(records)))
    assert block["columns"]["cpu_fallback"] == {
        "codec": "raw",
        "values": [list(names), list(other), None],
    }
    assert decode_records(block) == records
    assert records[0].to_dict()["cpu_fallback"] == list(names)
    assert CaseRecord.from_dict(records[0].to_dict()) == records[0]
    for bad in ([3], "aten::sin.out", [""]):
        block["columns"]["cpu_fallback"] = {"codec": "raw", "values": [bad, None, None]}
        with pytest.raises(ArtifactError, match="cpu_fallback is not a list"):
            decode_records(block)


def test_decoded_records_own_their_extra_dicts() -> None:
    """A constant extra column gives each record its own dict, not the block's."""
    block = encode_records([record(), record(sample=1)])
    records = decode_records(block)
    records[0].extra["x"] = 1
    assert records[1].extra == {} and block["columns"]["extra"]["value"] == {}


def test_decoded_records_are_frozen_case_records() -> None:
    """Records built a column at a time are real, frozen CaseRecords."""
    records = [record(sample=i, extra={"k": i}) for i in range(3)]
    decoded = decode_records(json.loads(json.dumps(encode_records(records))))
    assert all(type(r) is CaseRecord for r in decoded)
    assert decoded == records
    with pytest.raises(dataclasses.FrozenInstanceError):
        decoded[0].op = "mul"  # type: ignore[misc]
    assert dataclasses.replace(decoded[0], op="mul").op == "mul"


def _block(count: int = 3, **columns: Any) -> dict[str, Any]:
    base = encode_records([record(sample=i) for i in range(3)])
    base["count"] = count
    base["columns"].update(columns)
    return base


def test_an_interned_column_of_the_wrong_length_is_an_artifact_error() -> None:
    """Too few indexes name the column (it used to escape as a bare ValueError)."""
    block = _block(op={"codec": "intern", "table": ["add"], "index": [0, 0]})
    with pytest.raises(ArtifactError, match="column 'op' has 2 indexes, not 3"):
        decode_records(block)


def test_a_column_spec_that_is_not_an_object_is_an_artifact_error() -> None:
    """A spec that is not an object has no codec (it used to raise AttributeError)."""
    with pytest.raises(ArtifactError, match="column 'op' has unknown codec None"):
        decode_records(_block(op=["add"]))


def test_a_bad_enum_value_names_the_first_bad_row_and_column() -> None:
    """A bad status names its value, its column and the first case carrying it."""
    status = {"codec": "raw", "values": ["passed", "bogus", "nope"]}
    with pytest.raises(ArtifactError) as info:
        decode_records(_block(status=status))
    assert str(info.value).startswith("case 'opinfo/add/forward/float32/1' status: ")
    assert "'bogus' is not one of passed, failed" in str(info.value)


def test_a_bad_crash_block_is_named() -> None:
    """A crash that is not an object is refused with its value."""
    crash = {"codec": "raw", "values": [None, "boom", None]}
    with pytest.raises(ArtifactError, match="crash block is not an object: 'boom'"):
        decode_records(_block(crash=crash))


def test_a_block_without_case_ids_is_refused() -> None:
    """Records cannot be rebuilt without the case_id column."""
    block = _block()
    del block["columns"]["case_id"], block["columns"]["node_id"]
    with pytest.raises(ArtifactError, match="case record lacks 'case_id'"):
        decode_records(block)


def test_wrong_lengths_are_artifact_errors_in_artifacts_and_journals(
    tmp_path: Path,
) -> None:
    """A short interned column fails a load with a named error, never a traceback."""
    records = [record(op=f"op{i % 2}", sample=i) for i in range(20)]
    text = encode_artifact(RunArtifact.from_records(metadata(), records))
    data = json.loads(text)
    data["results"]["columns"]["op"]["index"].pop()
    with pytest.raises(ArtifactError, match="'op' has 19 indexes, not 20"):
        decode_artifact(data, "artifact.json")
    path = tmp_path / "journal.jsonl"
    with JournalWriter(path) as journal:
        journal.case_block(records)
    line = json.loads(path.read_text())
    line["records"]["columns"]["op"]["index"].pop()
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ArtifactError, match="line 1: column 'op' has 19 indexes"):
        read_journal(path)


@pytest.mark.parametrize("enabled", [True, False])
def test_garbage_collection_is_left_as_it_was(enabled: bool) -> None:
    """Encoding and decoding, even a failing decode, restore the collector's state."""
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        decode_records(encode_records([record(), record(sample=1)]))
        assert gc.isenabled() is enabled
        with pytest.raises(ArtifactError):
            decode_records(_block(status={"codec": "const", "value": "bogus"}))
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
