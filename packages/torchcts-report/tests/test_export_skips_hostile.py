"""export-skips on crafted strings: the Python it writes still parses to the same few
statements, every string in it is exactly the recorded one, and no message, op name or
device name can end a comment or a literal and start code."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_factories import Synthetic
from torchcts_report.cli import main
from torchcts_report.export_skips import export_skips
from torchcts_report.text import py_comment, py_string
from torchcts_schema import Status

INJECTIONS = [
    '"""\nimport os\nos.system("echo pwned")\n"""',
    "'''\n)\n__import__('os').system('x')  #",
    "x\n)\nimport os\n#",
    "\r__import__('os')\r",
    "line\u2028sep\u2029para\x85nel\x0bvt\x0cff",
    "nul\x00 esc\x1b[31m del\x7f lone\ud800 bidi\u202eevil\u2066",
    "\\\\n\\x00\\ backslashes \\",
    "quotes ' \" ''' \"\"\" end\\",
]


def _artifact(  # type: ignore[no-untyped-def]
    message: str, op: str = "mul", device: str = "simdev", variant: str | None = None
):
    """Records whose message, op or variant are crafted (case ids stay plain)."""
    rows = [
        ("opinfo", "float32", "forward", Status.FAILED),
        ("opinfo", "int64", "forward", Status.ERROR),
        ("opinfo", "float64", "forward", Status.UNSUPPORTED),
        ("opinfo", "float16", variant or message, Status.FAILED),
        ("views", "bool", "v", Status.FAILED),
    ]
    records = [
        Synthetic.record(
            op,
            dtype,
            status,
            suite=suite,
            variant=variant,
            case_id=f"{suite}/x/v{n}/{dtype}/0",
            mismatch=message,
            exception_type=message,
            exception_message=message,
        )
        for n, (suite, dtype, variant, status) in enumerate(rows)
    ]
    return Synthetic.artifact(records, device=device)


def _only_expected_statements(text: str, form: str) -> ast.Module:
    """The module parses, is ASCII, and holds exactly the statements of its form."""
    assert text.isascii()
    tree = ast.parse(text)
    kinds = [type(node).__name__ for node in tree.body]
    if form == "xpu-ops":
        assert kinds == ["Assign"]
        ast.literal_eval(tree.body[0].value)  # type: ignore[attr-defined]
        return tree
    assert kinds == ["Import", "Import", "ImportFrom", "AnnAssign"]
    for node in ast.walk(tree.body[3]):
        if isinstance(node, ast.Call):
            assert ast.unparse(node.func) in {"DecorateInfo", "unittest.skip"}
        if isinstance(node, ast.Name):
            assert node.id in {
                "op_overrides",
                "dict",
                "str",
                "list",
                "DecorateInfo",
            } | {
                "unittest",
                "torch",
            }
    return tree


def _strings(tree: ast.Module) -> set[str]:
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


@pytest.mark.parametrize("message", INJECTIONS)
@pytest.mark.parametrize("form", ["opinfo", "xpu-ops"])
def test_crafted_messages_ops_and_devices_stay_data(message: str, form: str) -> None:
    """A message, op name or device name made to break out is still one literal or one
    comment line; op and device names come back exactly as recorded."""
    for artifact in (
        _artifact(message),
        _artifact("m", op=message),
        _artifact("m", device=message),
    ):
        text = export_skips(artifact, form)
        tree = _only_expected_statements(text, form)
        strings = _strings(tree)
        op = artifact.results[0].op
        device = artifact.metadata.device
        if form == "opinfo":
            assert op in strings and device in strings
        else:
            name = f"test_compare_cpu_{op.replace('.', '_')}_{device}_float32"
            assert name in strings


def test_a_megabyte_message_gives_a_bounded_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A 4 MB message costs a bounded reason in every format, saying what was cut."""
    huge = "A" * 4_000_000 + "\n" + "B" * 10
    Synthetic.write(tmp_path, _artifact(huge, variant="unmapped"))
    for form in ("json", "xpu-ops", "opinfo"):
        argv = ["export-skips", "--results", str(tmp_path), "--format", form]
        assert main(argv) == 0
        text = capsys.readouterr().out
        assert len(text) < 20_000, form
        assert "more characters)" in text
    entries = export_skips(_artifact(huge, variant="unmapped"), "json")
    assert all(len(e["reason"]) <= 260 for e in json.loads(entries))


def test_surrogates_survive_the_command_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """An artifact written with ASCII escapes (lone surrogates in it) exports valid,
    ASCII-only Python and JSON."""
    Synthetic.write_ascii(tmp_path, _artifact("bad \ud800 text", op="op\udfff"))
    for form in ("json", "xpu-ops", "opinfo"):
        argv = ["export-skips", "--results", str(tmp_path), "--format", form]
        assert main(argv) == 0
        text = capsys.readouterr().out
        if form == "json":
            assert text.isascii() and json.loads(text)[0]["op"] == "op\udfff"
        else:
            assert "op\udfff" in "".join(
                _strings(_only_expected_statements(text, form))
            )


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_py_string_and_py_comment_hold_any_text(text: str) -> None:
    """py_string evaluates back to the text; py_comment is one ASCII comment line."""
    literal = py_string(text)
    assert literal.isascii() and ast.literal_eval(literal) == text
    comment = py_comment(text)
    assert comment.startswith("# ") and comment.isascii()
    assert comment.isprintable() and ast.parse(comment).body == []
