"""Edit a manifest's source text in place, the smallest change that says one thing.

A recheck of the exclusions proposes a patch a person reviews and applies, so each
edit touches only the literal it is about (found through the static reader's `ast`
positions), keeps every other byte, comment and layout, and the edited text must
still load. Positions from `ast` count UTF-8 bytes within a line, so edits are made
on the encoded text.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchcts_schema.errors import ManifestError
from torchcts_schema.manifest import Manifest, validate_manifest
from torchcts_schema.manifest_reader import read_manifest_source

EDIT_KINDS = (
    "remove_exclude",  # delete OPS["exclude"][key]
    "set_dtype",  # DTYPES[key] = value (added when absent)
    "extend_dtype_regex",  # DTYPES[key] also matches the ops in `items`
    "add_include",  # append `items` to OPS["include"]
    "add_capability",  # append `items` to CAPABILITIES
)


@dataclass(frozen=True)
class ManifestEdit:
    """One change to a manifest: what kind, which key, with what."""

    kind: str
    key: str = ""
    value: bool | str = True
    items: tuple[str, ...] = ()


def apply_edits(text: str, edits: Sequence[ManifestEdit], where: str | Path) -> str:
    """`text` with every edit made, in order; the result must load as a manifest
    (else `ManifestError` naming `where`)."""
    for edit in edits:
        if edit.kind not in EDIT_KINDS:
            raise ValueError(f"unknown manifest edit {edit.kind!r}")
        text = _Source(text, where).apply(edit)
    check_manifest_text(text, where)
    return text


def check_manifest_text(text: str, where: str | Path) -> Manifest:
    """Load manifest source text the way `load_manifest` loads a file."""
    raw = read_manifest_source(text, where)
    return validate_manifest(raw, Path(where), "sha256:edited")


def unified_patch(old: str, new: str, label: str) -> str:
    """A unified diff of one file, ``a/<label>`` to ``b/<label>`` (``patch -p1``)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        f"a/{label}",
        f"b/{label}",
    )
    # a last line without its newline is marked the way patch(1) expects
    return "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n"
        for line in lines
    )


def regex_literal(pattern: str) -> str:
    """Python source for a regex: a raw string when that spells it exactly."""
    if '"' not in pattern and "\n" not in pattern and not pattern.endswith("\\"):
        return f'r"{pattern}"' if "\\" in pattern else f'"{pattern}"'
    return repr(pattern)


def ops_regex(ops: Sequence[str]) -> str:
    """A DTYPES regex that fully matches exactly these op names."""
    return "^(" + "|".join(re.escape(op) for op in ops) + ")$"


def extended_regex(pattern: str, ops: Sequence[str]) -> str:
    """`pattern` that also fully matches each of `ops` (and nothing else new).

    ``^(add|sub)$`` gains the ops inside its group; any other pattern keeps its
    meaning as one alternative beside an anchored group of the ops.
    """
    alts = "|".join(re.escape(op) for op in ops)
    simple = re.fullmatch(r"(\^?\()([^()\\]*)(\)\$?)", pattern)
    if simple and simple[2]:
        return f"{simple[1]}{simple[2]}|{alts}{simple[3]}"
    return f"(?:{pattern})|^(?:{alts})$"


def _quote(name: str) -> str:
    """A name as a double-quoted literal, the manifests' own style."""
    return json.dumps(name)


class _Source:
    """One parse of the text: byte offsets of its top-level literals."""

    def __init__(self, text: str, where: str | Path) -> None:
        self.where = where
        self.data = text.encode("utf-8")
        self.tree = ast.parse(text)
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def apply(self, edit: ManifestEdit) -> str:
        if edit.kind == "remove_exclude":
            return self._remove_exclude(edit.key)
        if edit.kind == "set_dtype":
            return self._set_dtype(edit.key, edit.value)
        if edit.kind == "extend_dtype_regex":
            return self._extend_regex(edit.key, edit.items)
        if edit.kind == "add_include":
            ops = self._dict_value(self._assigned("OPS"), "include", "OPS")
            return self._append(ops, "OPS['include']", edit.items)
        return self._add_capability(edit.items)

    # -- locating -----------------------------------------------------------------

    def _offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def _span(self, node: ast.AST) -> tuple[int, int]:
        start = self._offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self._offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def _assigned(self, name: str) -> ast.expr | None:
        for node in self.tree.body:
            if isinstance(node, ast.Assign):
                target: ast.expr = node.targets[0]
                value: ast.expr | None = node.value
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.value
            else:
                continue
            if isinstance(target, ast.Name) and target.id == name:
                return value
        return None

    def _dict_value(self, node: ast.expr | None, key: str, label: str) -> ast.expr:
        if not isinstance(node, ast.Dict):
            raise ManifestError(self.where, f"{label} is not a dict literal")
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == key:
                return v
        raise ManifestError(self.where, f"{label} has no key {key!r}")

    # -- editing ------------------------------------------------------------------

    def _replaced(self, start: int, end: int, new: str) -> str:
        return (self.data[:start] + new.encode("utf-8") + self.data[end:]).decode()

    def _remove_exclude(self, glob: str) -> str:
        exclude = self._dict_value(self._assigned("OPS"), "exclude", "OPS")
        if not isinstance(exclude, ast.Dict):
            raise ManifestError(self.where, "OPS['exclude'] is not a dict literal")
        for k, v in zip(exclude.keys, exclude.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == glob:
                assert k is not None
                return self._cut(self._span(k)[0], self._span(v)[1])
        raise ManifestError(self.where, f"OPS['exclude'] has no key {glob!r}")

    def _cut(self, start: int, end: int) -> str:
        """Delete one item (and its comma); its own lines go when nothing else is
        on them but a trailing comment."""
        data = self.data
        after = end
        while after < len(data) and data[after] in b" \t":
            after += 1
        if after < len(data) and data[after : after + 1] == b",":
            end = after + 1
        line_start = data.rfind(b"\n", 0, start) + 1
        line_end = data.find(b"\n", end)
        line_end = len(data) if line_end < 0 else line_end + 1
        rest = data[end:line_end].strip()
        if not data[line_start:start].strip() and (not rest or rest.startswith(b"#")):
            return self._replaced(line_start, line_end, "")
        while end < len(data) and data[end] in b" \t":
            end += 1
        return self._replaced(start, end, "")

    def _set_dtype(self, dtype: str, value: bool | str) -> str:
        node = self._assigned("DTYPES")
        literal = regex_literal(value) if isinstance(value, str) else repr(value)
        if node is None:
            raise ManifestError(self.where, "DTYPES is not set")
        try:
            current = self._dict_value(node, dtype, "DTYPES")
        except ManifestError:
            item = f"{_quote(dtype)}: {literal}"
            return self._append(node, "DTYPES", (item,), raw=True)
        return self._replaced(*self._span(current), literal)

    def _extend_regex(self, dtype: str, ops: Sequence[str]) -> str:
        current = self._dict_value(self._assigned("DTYPES"), dtype, "DTYPES")
        if not isinstance(current, ast.Constant) or not isinstance(current.value, str):
            raise ManifestError(self.where, f"DTYPES[{dtype!r}] is not a regex")
        literal = regex_literal(extended_regex(current.value, ops))
        return self._replaced(*self._span(current), literal)

    def _add_capability(self, caps: Sequence[str]) -> str:
        node = self._assigned("CAPABILITIES")
        # each once: the manifest check refuses a capability listed twice
        listed = node.elts if isinstance(node, ast.List) else []
        held = {e.value for e in listed if isinstance(e, ast.Constant)}
        caps = [c for c in dict.fromkeys(caps) if c not in (held or {"forward"})]
        if not caps:
            return self.data.decode()
        if node is None:  # the default is ["forward"]: say it, plus the new ones
            line = f"CAPABILITIES = [{', '.join(map(_quote, ['forward', *caps]))}]\n"
            text = self.data.decode()
            return text + ("" if text.endswith("\n") or not text else "\n") + line
        return self._append(node, "CAPABILITIES", caps)

    def _append(
        self, node: ast.expr | None, label: str, items: Sequence[str], raw: bool = False
    ) -> str:
        """Insert items after the last element of a list or dict literal."""
        if isinstance(node, ast.List):
            elements: list[ast.expr] = list(node.elts)
        elif isinstance(node, ast.Dict):
            elements = list(node.values)
        else:
            raise ManifestError(self.where, f"{label} is not a list or dict literal")
        words = ", ".join(items if raw else (_quote(i) for i in items))
        if elements:
            at = self._span(elements[-1])[1]
            return self._replaced(at, at, f", {words}")
        at = self._span(node)[0] + 1  # just inside the opening bracket
        return self._replaced(at, at, words)


__all__ = [
    "EDIT_KINDS",
    "ManifestEdit",
    "apply_edits",
    "check_manifest_text",
    "extended_regex",
    "ops_regex",
    "regex_literal",
    "unified_patch",
]
