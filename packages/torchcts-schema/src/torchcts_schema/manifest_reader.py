"""Read a ``manifest.py`` without executing it.

A reviewer must never run a submitted manifest, so the file is parsed with `ast` and
only a module docstring and ``NAME = <literal>`` assignments are accepted. Anything else
(imports, calls, comprehensions, f-strings) is refused with its line number. A file
larger than `MAX_MANIFEST_BYTES` is refused before it is read whole.
"""

from __future__ import annotations

import ast
import hashlib
import io
from pathlib import Path
from typing import Any

from torchcts_schema.errors import ManifestError

# The most a manifest may hold, wherever it is read: a run, check-manifest, the
# archive and a reviewer's verify. The largest real one is a few KiB; a file past
# this is not a manifest, and parsing it would hold it several times over in memory.
MAX_MANIFEST_BYTES = 2**20


def read_manifest_source(text: str, where: str | Path) -> dict[str, Any]:
    """The ``NAME = literal`` assignments of a manifest source, in file order."""
    try:
        tree = ast.parse(text, filename=str(where))
    except SyntaxError as exc:
        raise ManifestError(
            where, f"line {exc.lineno}: not valid Python ({exc.msg})"
        ) from None
    values: dict[str, Any] = {}
    for index, node in enumerate(tree.body):
        if index == 0 and _is_docstring(node):
            continue
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets: list[ast.expr] = [node.target]
            value = node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            raise ManifestError(
                where,
                f"line {node.lineno}: only NAME = <literal> assignments are allowed; "
                f"found {type(node).__name__} (the manifest is read, never executed)",
            )
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            raise ManifestError(where, f"line {node.lineno}: assign to one plain NAME")
        name = targets[0].id
        if name in values:
            raise ManifestError(where, f"line {node.lineno}: {name} assigned twice")
        try:
            values[name] = ast.literal_eval(value)
        except ValueError:
            raise ManifestError(
                where,
                f"line {node.lineno}: {name} is not a literal (code such as calls, names "
                f"or f-strings is not allowed in a manifest)",
            ) from None
        _refuse_repeated_keys(value, name, where)
    return values


def _refuse_repeated_keys(value: ast.expr, name: str, where: str | Path) -> None:
    """A dict literal that names a key twice keeps only the last value, silently:
    ``DTYPES = {"float16": True, ..., "float16": False}`` would decide a dtype by
    which line came last. Refused, with the line of the second one."""
    for node in ast.walk(value):
        if not isinstance(node, ast.Dict):
            continue
        seen: list[Any] = []
        for key in node.keys:
            if key is None:  # ``**x``: literal_eval has refused it already
                continue
            found = ast.literal_eval(key)
            if found in seen:
                raise ManifestError(
                    where,
                    f"line {key.lineno}: {name} names the key {found!r} twice (a "
                    "dict keeps only the last)",
                )
            seen.append(found)


def read_manifest_file(path: Path) -> dict[str, Any]:
    """`read_manifest_source` of a file, with read errors naming it."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_MANIFEST_BYTES + 1)  # a FIFO or device ends here too
    except IsADirectoryError:
        raise ManifestError(path, "is a directory; name the manifest file") from None
    except OSError as exc:
        raise ManifestError(path, f"cannot read manifest ({exc.strerror})") from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestError(
            path,
            f"manifest is larger than {MAX_MANIFEST_BYTES / 2**20:g} MiB "
            f"({MAX_MANIFEST_BYTES} bytes), the most a manifest may hold",
        )
    try:  # decoded as read_text decodes (universal newlines)
        text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
    except UnicodeDecodeError:
        raise ManifestError(path, "manifest is not UTF-8 text") from None
    return read_manifest_source(text, path)


def manifest_digest(path: Path) -> str:
    """``sha256:<hex>`` of the manifest bytes, recorded in every run's metadata."""
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )
