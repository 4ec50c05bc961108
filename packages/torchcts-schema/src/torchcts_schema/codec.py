"""Compact columnar encoding of case records.

Records of one run repeat the same ops, dtypes, statuses and sources thousands of times
and their ids are derivable from their parts. Storing each field as a column lets a
column be a constant, a list of indexes into a string table, derived from other
columns, or raw values, whichever is exact. Decoding gives back equal records.

A column of JSON objects or lists (`SHARED_COLUMNS`: tolerance, the aten surfaces
``extra`` lists, crash, facts, CPU fallback) is stored once per distinct value
(codec ``shared``, `torchcts_schema.shared_codec`). Records decoded from one table
entry share its inner lists and dicts, as records decoded from a ``const`` column
always have; each still owns its top-level ``extra`` and ``facts`` dicts, and a
shared tolerance or crash is one frozen object.

A level-1 run writes a block of ~325,000 not_run records three times, so both
directions work a column at a time in C-level passes (``map``, ``count``, ``set``)
and never build a dict per record. The per-record reference (`make_case_id`,
`CaseRecord.from_dict`) still decides every case those passes do not vouch for, and
words every error.

`decode_records` accepts exactly what the frozen reference decoder accepts (a test
compares them on damaged blocks); refusing what the encoder never writes (an index
out of range, an unused table entry) is `integrity.check_block`'s job, which every
loader runs first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import fields
from itertools import repeat, starmap
from operator import add, eq
from types import MemberDescriptorType
from typing import Any

from torchcts_schema.errors import ArtifactError
from torchcts_schema.gc_pause import gc_paused
from torchcts_schema.identity import (
    NO_DTYPE,
    NODE_PREFIX,
    is_case_id_segment,
    make_case_id,
    node_id_for_case,
)
from torchcts_schema.records import (
    CaseRecord,
    CrashInfo,
    JsonDict,
    ToleranceUsed,
    is_overload_list,
)
from torchcts_schema.shared_codec import (
    JSON_FORM,
    SHARED_COLUMNS,
    SHARED_KEY,
    SharedTexts,
    shared_column,
)
from torchcts_schema.vocabulary import ExpectedSource, NextFix, NotRunReason, Status

FIELD_NAMES = tuple(f.name for f in fields(CaseRecord))
# fields added after the format was frozen: a column of nothing but nulls is left
# out, so blocks of records without them stay byte-identical (absent means null)
OMITTED_WHEN_NULL = ("tolerance", "facts", "repro", "cpu_fallback")
Columns = dict[str, list[Any]]
_ID_PARTS = ("suite", "op", "variant", "dtype", "sample")
_TEXT = (str, type(None))
# what `CaseRecord.from_dict` gives a record whose block lacks the column
_ABSENT = dict.fromkeys(FIELD_NAMES) | {
    "node_id": "",
    "op": "",
    "variant": "",
    "level": 1,
    "suite": "opinfo",
    "isolation": "none",
}
_ENUMS: dict[str, type[Any]] = {
    "status": Status,
    "expected_source": ExpectedSource,
    "next_fix": NextFix,
    "not_run_reason": NotRunReason,
}


def _slot_setters() -> tuple[Callable[[Any, Any], None], ...]:
    """The ``__set__`` of each CaseRecord slot, in `FIELD_NAMES` order.

    CaseRecord's frozen __init__ calls ``object.__setattr__`` once per field per
    record, most of the decoding time of a large block. A slot's own descriptor
    stores the same value without that per-call lookup, so decoding fills one column
    at a time with ``starmap`` over ``__set__``: the object is exactly what
    ``CaseRecord(...)`` builds, with nothing generated and no class switched.
    ``__set__`` has no fast calling convention, so ``map`` would build an argument
    tuple per store; ``starmap(setter, zip(records, column))`` passes zip's tuple,
    which zip reuses, and stores a third faster (the stores are most of a block).
    """
    if hasattr(CaseRecord, "__post_init__"):
        raise TypeError("CaseRecord has a __post_init__ that decoding would skip")
    setters = []
    for name in FIELD_NAMES:
        slot = vars(CaseRecord)[name]
        if not isinstance(slot, MemberDescriptorType):
            raise TypeError(f"CaseRecord.{name} is not a slot")
        setters.append(slot.__set__)
    return tuple(setters)


_SETTERS = _slot_setters()
_FILL_ROWS = 1024


def encode_records(
    records: list[CaseRecord], known: SharedTexts | None = None
) -> JsonDict:
    """Column-wise form of `records`: what encoding each `to_dict` row would give.

    `known`: texts of the records' shared values noted earlier (the same block,
    without encoding those values again).
    """
    with gc_paused():
        values = _columns(records)
        originals = {name: values[name] for name in SHARED_COLUMNS}
        for name in ("crash", "tolerance", "facts", "cpu_fallback"):
            form = JSON_FORM[name]
            values[name] = [None if v is None else form(v) for v in values[name]]
        extras = values["extra"]
        empty = bool(extras) and set(map(type, extras)) == {dict} and not any(extras)
        if not empty:
            values["extra"] = [dict(e) for e in extras]
        columns: JsonDict = {}
        for name in FIELD_NAMES:
            if name in OMITTED_WHEN_NULL and values[name].count(None) == len(records):
                continue
            if name == "extra" and empty:
                columns[name] = {"codec": "const", "value": {}}
            else:
                hint = (originals.get(name), known)
                columns[name] = _encode_column(name, values[name], values, hint)
    return {"count": len(records), "columns": columns}


def _columns(records: list[CaseRecord]) -> Columns:
    """Every field as a list, in `FIELD_NAMES` order (a test pins the list).

    Spelled out because a comprehension reads a slot directly, nearly twice as fast
    as `attrgetter`; it is a third of the encoding time of a 325,000-record block.
    """
    return {
        "case_id": [r.case_id for r in records],
        "node_id": [r.node_id for r in records],
        "op": [r.op for r in records],
        "variant": [r.variant for r in records],
        "dtype": [r.dtype for r in records],
        "sample": [r.sample for r in records],
        "level": [r.level for r in records],
        "status": [r.status for r in records],
        "expected_source": [r.expected_source for r in records],
        "suite": [r.suite for r in records],
        "mismatch": [r.mismatch for r in records],
        "exception_type": [r.exception_type for r in records],
        "exception_message": [r.exception_message for r in records],
        "crash": [r.crash for r in records],
        "duration_s": [r.duration_s for r in records],
        "isolation": [r.isolation for r in records],
        "next_fix": [r.next_fix for r in records],
        "not_run_reason": [r.not_run_reason for r in records],
        "detail": [r.detail for r in records],
        "worker": [r.worker for r in records],
        "extra": [r.extra for r in records],
        "tolerance": [r.tolerance for r in records],
        "facts": [r.facts for r in records],
        "repro": [r.repro for r in records],
        "cpu_fallback": [r.cpu_fallback for r in records],
    }


def _encode_column(
    name: str,
    values: list[Any],
    parts: Columns,
    hint: tuple[list[Any] | None, SharedTexts | None] = (None, None),
) -> JsonDict:
    if values and _constant(values):
        return {"codec": "const", "value": values[0]}
    if name == "case_id" and values and _case_ids_derivable(values, parts):
        return {"codec": "derived"}
    if name == "node_id" and values and _node_ids_derivable(values, parts["case_id"]):
        return {"codec": "derived"}
    if all(map(isinstance, values, repeat(_TEXT))):
        lookup: dict[Any, Any] = dict.fromkeys(values)  # first-seen order
        lookup.pop(None, None)
        if len(lookup) * 2 <= len(values):
            table = list(lookup)
            lookup = {v: i for i, v in enumerate(table)}
            lookup[None] = None
            index = list(map(lookup.__getitem__, values))
            return {"codec": "intern", "table": table, "index": index}
    if name in SHARED_COLUMNS:
        originals, known = hint
        try:  # a value that is not JSON stays raw: the artifact's dump names it
            if known is None or originals is None:
                keys = list(map(SHARED_KEY, values))
            else:
                keys = known.keys(originals, values)
        except (TypeError, ValueError):
            keys = None
        noted = known is not None and originals is not None
        shared = None if keys is None else shared_column(values, keys, from_keys=noted)
        if shared is not None:
            return shared
    return {"codec": "raw", "values": values}


def _constant(values: list[Any]) -> bool:
    """Whether every value is ``==`` the first and of its type.

    `count` also matches the first value by identity; ``first == first`` keeps a
    NaN column raw, as ``==`` alone would.
    """
    first = values[0]
    return (
        values.count(first) == len(values)
        and bool(first == first)
        and set(map(type, values)) == {type(first)}
    )


def _case_ids_derivable(case_ids: list[Any], parts: Columns) -> bool:
    """Whether every case id is `make_case_id` of its row's parts; stops at a miss."""
    columns = [parts[p] for p in _ID_PARTS]
    try:
        built = _joined_case_ids(columns)
        if built is not None:
            return all(map(eq, built, case_ids))
        rows = zip(*columns, case_ids, strict=True)
        return all(make_case_id(*row) == case_id for *row, case_id in rows)
    except (ValueError, TypeError):
        return False


def _node_ids_derivable(node_ids: list[Any], case_ids: list[Any]) -> bool:
    """Whether every node id is `node_id_for_case` of its row's case id."""
    if set(map(type, case_ids)) == {str}:
        return all(map(eq, map(add, repeat(NODE_PREFIX), case_ids), node_ids))
    try:
        pairs = zip(case_ids, node_ids, strict=True)
        return all(node_id_for_case(c) == v for c, v in pairs)
    except (ValueError, TypeError):
        return False


def _joined_case_ids(columns: list[list[Any]]) -> Iterator[str] | None:
    """`make_case_id` of every row, or None where only it can tell.

    Its checks and its '/'-join act on a segment's text, so each distinct segment is
    validated once, not once per row (ValueError if one is refused). A sample is
    spelt by `str`, where equal values may differ (1, True, 1.0): only `int` samples
    take this path.
    """
    suites, ops, variants, dtypes, samples = columns
    if not set(map(type, samples)) <= {int, type(None)}:
        return None
    try:
        dtype_text = {d: d or NO_DTYPE for d in set(dtypes)}
        segments = {*dtype_text.values(), *set(suites), *set(ops), *set(variants)}
    except TypeError:  # an unhashable part
        return None
    if not all(map(is_case_id_segment, segments)):
        raise ValueError("a case id segment is not a plain token")
    sample_text = {s: NO_DTYPE if s is None else str(s) for s in set(samples)}
    return map(
        "/".join,
        zip(
            _spelt(suites, None),
            _spelt(ops, None),
            _spelt(variants, None),
            _spelt(dtypes, dtype_text),
            _spelt(samples, sample_text),
            strict=True,
        ),
    )


def _spelt(column: list[Any], text: dict[Any, str] | None) -> Iterable[Any]:
    """A case id part's segment per row; one repeated where all rows agree.

    Rows that are ``==`` spell the same segment (a str's text, a dict key's
    text), and a repeated one joins at twice the speed of a list.
    """
    if column and column.count(column[0]) == len(column):
        first = column[0] if text is None else text[column[0]]
        return repeat(first, len(column))
    return column if text is None else map(text.__getitem__, column)


def decode_records(block: Any) -> list[CaseRecord]:
    """Inverse of `encode_records`."""
    if not isinstance(block, dict) or "count" not in block or "columns" not in block:
        raise ArtifactError(None, "compact block lacks 'count' or 'columns'")
    count = block["count"]
    columns = block["columns"]
    unknown = sorted(set(columns) - set(FIELD_NAMES))
    if unknown:
        raise ArtifactError(
            None, f"compact block has unknown column(s): {', '.join(unknown)}"
        )
    size = len(range(count))
    values: Columns = {}
    # derived columns are filled after the columns they derive from
    order = sorted(columns, key=lambda n: _codec_of(columns[n]) == "derived")
    for name in order:
        values[name] = _decode_column(name, columns[name], values, count, size)
    same = {name for name in values if _codec_of(columns[name]) == "const"}
    with gc_paused():
        try:
            return _build(values, size, same)
        except Exception:  # the reference decides, and words the exact error
            rows: list[JsonDict] = [{} for _ in range(size)]
            for name, column in values.items():
                for row, value in zip(rows, column, strict=True):
                    row[name] = value
            return [CaseRecord.from_dict(row) for row in rows]


def _codec_of(spec: Any) -> Any:
    return spec.get("codec") if isinstance(spec, dict) else None


def _decode_column(
    name: str, spec: Any, values: Columns, count: Any, size: int
) -> list[Any]:
    kind = _codec_of(spec)
    if kind == "const":
        return [spec["value"]] * count
    if kind == "derived":
        return _derive(name, values, size)
    if kind in ("intern", "shared"):  # a shared row holds its table's very value
        table, index = spec["table"], spec["index"]
        # twice as fast as map(table.__getitem__, ...): the interpreter indexes a
        # list directly, where a bound __getitem__ converts each index
        decoded = [None if i is None else table[i] for i in index]
        if len(decoded) != size:
            raise ArtifactError(
                None, f"column {name!r} has {len(decoded)} indexes, not {count}"
            )
        return decoded
    if kind == "raw":
        raw = spec["values"]
        if len(raw) != count:
            raise ArtifactError(
                None, f"column {name!r} has {len(raw)} values, not {count}"
            )
        return list(raw)
    raise ArtifactError(None, f"column {name!r} has unknown codec {kind!r}")


def _derive(name: str, values: Columns, size: int) -> list[Any]:
    if not size:
        return []
    if name != "case_id":  # node_id; the reference derives any other name alike
        case_ids = values["case_id"]
        if set(map(type, case_ids)) == {str}:
            return list(map(add, repeat(NODE_PREFIX), case_ids))
        return [node_id_for_case(c) for c in case_ids]
    columns = [values[p] for p in _ID_PARTS]  # KeyError names the first missing part
    with suppress(ValueError):  # make_case_id names the first bad row
        built = _joined_case_ids(columns)
        if built is not None:
            return list(built)
    return [make_case_id(*row) for row in zip(*columns, strict=True)]


def _build(values: Columns, size: int, same: set[str]) -> list[CaseRecord]:
    """Records from decoded columns, each column checked once, not once per row.

    `same` names the columns that hold one value throughout (a const codec): their
    value is converted once and repeated. Raises (anything) where
    `CaseRecord.from_dict` might reject a row; the caller then asks `from_dict`
    itself, row by row, for the exact error.
    """
    if not size:
        return []
    if "case_id" not in values or "status" not in values:
        raise LookupError("a required column is missing")
    filled: list[list[Any] | repeat[Any]] = []
    for name in FIELD_NAMES:
        column = values.get(name)
        if column is None and name != "extra":
            filled.append(repeat(_ABSENT[name]))
            continue
        if column is None:  # every record owns its extra dict
            column = [{} for _ in range(size)]
        elif name in _ENUMS:
            kind, optional = _ENUMS[name], name != "status"
            if name in same:  # one value throughout: one lookup
                filled.append(repeat(_members(kind, column[:1], optional=optional)[0]))
                continue
            column = _members(kind, column, optional=optional)
        elif name == "crash":
            if column.count(None) != len(column):  # most blocks crash nowhere
                column = _converted(column, CrashInfo.from_dict)
        elif name == "tolerance":
            if column.count(None) != len(column):
                column = _converted(column, ToleranceUsed.from_dict)
        elif name in ("facts", "repro"):
            kinds = {dict, type(None)} if name == "facts" else {str, type(None)}
            if not set(map(type, column)) <= kinds:
                raise ValueError(f"column {name!r} has a value of the wrong type")
            if name == "facts":
                column = [None if f is None else dict(f) for f in column]
        elif name == "cpu_fallback":
            if column.count(None) != len(column):
                if not all(f is None or is_overload_list(f) for f in column):
                    raise ValueError("column 'cpu_fallback' has a bad value")
                column = [None if f is None else tuple(f) for f in column]
        elif name == "extra":
            if set(map(type, column)) == {dict}:  # a fresh dict each, at C speed
                column = list(map(dict, column))
            else:
                column = [dict(e) if e else {} for e in column]
        elif name in same:  # the very object the reference repeats
            filled.append(repeat(column[0]))
            continue
        if len(column) != size:
            raise ValueError(f"column {name!r} has the wrong length")
        filled.append(column)
    # a slice of records at a time, made just before its columns are stored, so its
    # objects stay in cache across every column instead of the whole block being
    # walked once per column; each list column is read through one iterator, which
    # zip draws from only while `part`, its first argument, lasts
    sources = [rows if type(rows) is repeat else iter(rows) for rows in filled]
    records: list[CaseRecord] = []
    for low in range(0, size, _FILL_ROWS):
        length = min(_FILL_ROWS, size - low)
        part = list(map(object.__new__, repeat(CaseRecord, length)))
        for setter, rows in zip(_SETTERS, sources, strict=True):
            # starmap over zip, not map: see _slot_setters
            deque(starmap(setter, zip(part, rows, strict=False)), maxlen=0)
        records += part
    return records


def _converted(column: list[Any], convert: Callable[[Any], Any]) -> list[Any]:
    """`convert` of every non-null row, once per distinct object: the rows of a
    shared table hold the same dict, and its frozen conversion can be shared too."""
    made = {id(value): value for value in column if value is not None}
    done = {key: convert(value) for key, value in made.items()}
    return [None if value is None else done[id(value)] for value in column]


def _members(kind: type[Any], column: list[Any], *, optional: bool) -> list[Any]:
    """Enum members for a column of values, each distinct value looked up once."""
    lookup: dict[Any, Any] = {}
    for value in set(column):
        member = kind._value2member_map_.get(value) if isinstance(value, str) else None
        if member is None and not (optional and value is None):
            raise ValueError(f"{value!r:.40} is not a {kind.__name__}")
        lookup[value] = member
    return list(map(lookup.__getitem__, column))
