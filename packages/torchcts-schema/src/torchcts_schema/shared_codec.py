"""The compact codec ``shared``: a column of JSON objects or lists, each distinct value
stored once.

A case's tolerance and the aten surfaces its ``extra`` lists repeat a few thousand
distinct values over a hundred thousand records (a level-4 CPU validation: 4,328
``extra`` values and 19 tolerances over 104,833 records). Stored raw they were
four fifths of the history (21 of 25.6 MB); stored as a table of distinct values
and an index per row, a fraction of a megabyte. Two values are the same when their
JSON text is (`SHARED_KEY`, the spelling artifacts and journals use), which is all
a reader of the file can tell apart.

Keying is most of the encoding's cost, one JSON text per row, so a run notes each
record's texts as it journals the record (`SharedTexts`, during the case phase)
and the end of the run encodes with them instead of encoding every value again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from torchcts_schema.records import CaseRecord, JsonDict

# columns of JSON objects or lists, stored once per distinct value (format 3)
SHARED_COLUMNS = ("crash", "extra", "tolerance", "facts", "cpu_fallback")
# a value's identity in a shared table: its JSON text as artifacts and journals
# spell it (compact separators, ASCII escapes)
SHARED_KEY: Callable[[Any], str] = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=True
).encode
# a record attribute's JSON form, as `CaseRecord.to_dict` and the codec give it
JSON_FORM: dict[str, Callable[[Any], Any]] = {
    "crash": lambda crash: crash.to_dict(),
    "extra": dict,
    "tolerance": lambda tolerance: tolerance.to_dict(),
    "facts": dict,
    "cpu_fallback": list,
}
_NOT_JSON = (TypeError, ValueError, RecursionError)


class SharedTexts:
    """The JSON texts of records' shared values, noted one record at a time.

    Kept by the value object's id; an entry holds its object, so the id cannot be
    reused by another while it lasts, and is used only for that very object. A
    value changed in place after it was noted keeps the text it had then: the text
    the journal holds for it.
    """

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Any, str]] = {}
        self._distinct: dict[str, str] = {}  # one string object per distinct text

    def note(self, record: CaseRecord) -> None:
        """Note the texts of `record`'s shared values (a value that is not JSON is
        left to the encoder, which names it)."""
        for name, form in JSON_FORM.items():
            value = getattr(record, name)
            if value is None:
                continue
            try:
                text = SHARED_KEY(form(value))
            except _NOT_JSON:
                continue
            self._texts[id(value)] = (value, self._distinct.setdefault(text, text))

    def keys(self, originals: list[Any], values: list[Any]) -> list[str]:
        """The key of each row: its original's noted text, else its value's own."""
        texts = self._texts
        keys = []
        for original, value in zip(originals, values, strict=True):
            entry = texts.get(id(original))
            if entry is not None and entry[0] is original:
                keys.append(entry[1])
            else:
                keys.append("null" if value is None else SHARED_KEY(value))
        return keys

    def __len__(self) -> int:
        return len(self._texts)


def shared_column(
    values: list[Any], keys: list[str], *, from_keys: bool = False
) -> JsonDict | None:
    """Each distinct JSON value of `values` once, in first-seen order, and an index
    per row (None for null), given each row's `SHARED_KEY` text; None when a table
    would not halve the column. `from_keys`: each entry is read back from its text
    (texts noted earlier are what the journal holds, even of a value changed since),
    not taken from its first row."""
    order: dict[str, Any] = dict.fromkeys(keys)
    order.pop("null", None)  # only None is spelt null: it stays a null index
    if len(order) * 2 > len(values):
        return None
    if from_keys:
        table = list(map(json.loads, order))
    else:
        # reversed, so that the first row with a text is the one that stays
        first = dict(zip(reversed(keys), reversed(values), strict=True))
        table = [first[key] for key in order]
    position: dict[str, int | None] = {key: i for i, key in enumerate(order)}
    position["null"] = None
    return {
        "codec": "shared",
        "table": table,
        "index": list(map(position.__getitem__, keys)),
    }


__all__ = [
    "JSON_FORM",
    "SHARED_COLUMNS",
    "SHARED_KEY",
    "SharedTexts",
    "shared_column",
]
