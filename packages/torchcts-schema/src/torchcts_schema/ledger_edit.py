"""Remove rules from a known-crash ledger's text, keeping every other byte.

A recheck that shows a known crash gone proposes deleting its rule as a diff a person
applies; re-serializing the JSON would rewrite the whole file. So the rules array is
walked with the decoder's own `raw_decode` (which says where each value ends), the
rule objects to delete are cut out with their commas, and the result must still be a
valid ledger.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

from torchcts_schema.known_crash import KnownCrashError, parse_known_crash_rules

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


def remove_rules(text: str, rule_ids: Collection[str], where: str | Path) -> str:
    """`text` without the rules whose ids are in `rule_ids` (`ArtifactError` naming
    `where` when the text is not JSON; `KnownCrashError` when it is no ledger or
    lacks an id)."""
    parse_known_crash_rules(text, where)
    try:
        spans = _rule_spans(text)
    except (ValueError, IndexError):
        raise KnownCrashError(where, ["cannot locate the rules array"]) from None
    found = {rid for _, _, rid in spans}
    missing = sorted(set(rule_ids) - found)
    if missing:
        raise KnownCrashError(where, [f"no rule with id {missing[0]!r}"])
    for rule_id in sorted(set(rule_ids)):
        text = _without(text, _rule_spans(text), rule_id)
    parse_known_crash_rules(text, where)
    return text


def _without(text: str, spans: list[tuple[int, int, str]], rule_id: str) -> str:
    """`text` without one rule, its comma and the space before the next."""
    index = next(i for i, span in enumerate(spans) if span[2] == rule_id)
    start, end, _ = spans[index]
    if len(spans) == 1:  # the only rule: an empty array
        start = text.rfind("[", 0, start) + 1
        end = text.index("]", end)
    elif index + 1 < len(spans):  # up to the next rule: its comma goes too
        end = spans[index + 1][0]
    else:  # the last rule: from the end of the one before it
        start = spans[index - 1][1]
    return text[:start] + text[end:]


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def _rules_array(text: str) -> int:
    """Where the rules array opens: the top level, or the value of "rules"."""
    at = _skip(text, 0)
    if text[at] == "[":
        return at
    at = _skip(text, at + 1)  # past "{"
    while text[at] != "}":
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        at = _skip(text, at + 1)  # past ":"
        if key == "rules":
            return at
        _, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if text[at] == ",":
            at = _skip(text, at + 1)
    raise ValueError("no rules")


def _rule_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, id) of each rule object, in file order."""
    at = _skip(text, _rules_array(text) + 1)
    spans = []
    while text[at] != "]":
        value, end = _DECODER.raw_decode(text, at)
        spans.append((at, end, str(value.get("id")) if isinstance(value, dict) else ""))
        at = _skip(text, end)
        if text[at] == ",":
            at = _skip(text, at + 1)
    return spans


__all__ = ["remove_rules"]
