"""The record-at-a-time compact codec as it was before the columnar rewrite.

Kept verbatim (less docstrings) as the reference the fast `torchcts_schema.codec`
must agree with: the same block for the same records, the same records (or the same
error) for the same block. Two additions since the freeze, each written here the
plain way: all-null new columns are left out, and a column of JSON objects or lists
(`SHARED_COLUMNS`) is stored once per distinct JSON text (codec ``shared``).
"""

from __future__ import annotations

import json
from typing import Any

from torchcts_schema import ArtifactError, CaseRecord, make_case_id, node_id_for_case
from torchcts_schema.codec import FIELD_NAMES, OMITTED_WHEN_NULL
from torchcts_schema.shared_codec import SHARED_COLUMNS

JsonDict = dict[str, Any]


def encode_records(records: list[CaseRecord]) -> JsonDict:
    """Column-wise form of `records`, one `to_dict` per record."""
    rows = [r.to_dict() for r in records]
    columns: JsonDict = {}
    for name in FIELD_NAMES:
        values = [row[name] for row in rows]
        if name in OMITTED_WHEN_NULL and values.count(None) == len(values):
            continue  # the one addition since the freeze: new all-null columns
        columns[name] = _encode_column(name, values, rows)
    return {"count": len(rows), "columns": columns}


def decode_records(block: Any) -> list[CaseRecord]:
    """Inverse of `encode_records`, one dict and one `from_dict` per record."""
    if not isinstance(block, dict) or "count" not in block or "columns" not in block:
        raise ArtifactError(None, "compact block lacks 'count' or 'columns'")
    count = block["count"]
    columns = block["columns"]
    unknown = sorted(set(columns) - set(FIELD_NAMES))
    if unknown:
        raise ArtifactError(
            None, f"compact block has unknown column(s): {', '.join(unknown)}"
        )
    rows: list[JsonDict] = [{} for _ in range(count)]
    order = sorted(columns, key=lambda n: columns[n].get("codec") == "derived")
    for name in order:
        spec = columns[name]
        for row, value in zip(
            rows, _decode_column(name, spec, rows, count), strict=True
        ):
            row[name] = value
    return [CaseRecord.from_dict(row) for row in rows]


def _derived(name: str, row: JsonDict) -> Any:
    if name == "case_id":
        return make_case_id(
            row["suite"], row["op"], row["variant"], row["dtype"], row["sample"]
        )
    return node_id_for_case(row["case_id"])


def _derivable(name: str, values: list[Any], rows: list[JsonDict]) -> bool:
    if name not in ("case_id", "node_id") or not rows:
        return False
    try:
        return all(
            _derived(name, row) == v for row, v in zip(rows, values, strict=True)
        )
    except (ValueError, TypeError):
        return False


def _encode_column(name: str, values: list[Any], rows: list[JsonDict]) -> JsonDict:
    if values and all(v == values[0] and type(v) is type(values[0]) for v in values):
        return {"codec": "const", "value": values[0]}
    if _derivable(name, values, rows):
        return {"codec": "derived"}
    if all(v is None or isinstance(v, str) for v in values):
        table: dict[str, int] = {}
        for v in values:
            if v is not None and v not in table:
                table[v] = len(table)
        if len(table) * 2 <= len(values):
            return {
                "codec": "intern",
                "table": list(table),
                "index": [None if v is None else table[v] for v in values],
            }
    if name in SHARED_COLUMNS:  # the second addition since the freeze
        shared = _shared(values)
        if shared is not None:
            return shared
    return {"codec": "raw", "values": values}


def _shared(values: list[Any]) -> JsonDict | None:
    try:
        texts = [json.dumps(v, separators=(",", ":")) for v in values]
    except (TypeError, ValueError):
        return None
    firsts: dict[str, Any] = {}
    for text, v in zip(texts, values, strict=True):
        if v is not None and text not in firsts:
            firsts[text] = v
    if len(firsts) * 2 > len(values):
        return None
    order = list(firsts)
    rows = zip(texts, values, strict=True)
    return {
        "codec": "shared",
        "table": list(firsts.values()),
        "index": [None if v is None else order.index(t) for t, v in rows],
    }


def _decode_column(name: str, spec: Any, rows: list[JsonDict], count: int) -> list[Any]:
    kind = spec.get("codec") if isinstance(spec, dict) else None
    if kind == "const":
        return [spec["value"]] * count
    if kind == "derived":
        return [_derived(name, row) for row in rows]
    if kind in ("intern", "shared"):
        table = spec["table"]
        return [None if i is None else table[i] for i in spec["index"]]
    if kind == "raw":
        values = spec["values"]
        if len(values) != count:
            raise ArtifactError(
                None, f"column {name!r} has {len(values)} values, not {count}"
            )
        return list(values)
    raise ArtifactError(None, f"column {name!r} has unknown codec {kind!r}")
