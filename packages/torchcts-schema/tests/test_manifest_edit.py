"""Manifest edits change one literal, keep every other byte, and the diff applies."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from torchcts_schema import (
    ManifestEdit,
    ManifestError,
    apply_edits,
    check_manifest_text,
    load_manifest,
    unified_patch,
)
from torchcts_schema.manifest_edit import extended_regex, ops_regex

ROOT = Path(__file__).resolve().parents[3]
SIMDEV = (ROOT / "manifests" / "simdev.py").read_text(encoding="utf-8")
SMALL = """\"\"\"A manifest with comments that must survive.\"\"\"
DEVICE = "simdev"
DTYPES = {"float32": True, "int64": False}  # int64: see below
CAPABILITIES = ["forward"]
OPS = {
    "exclude": {
        "abs": "wrong dtype on int64",  # filed as BUG-1
        "mul": "high word dropped",
    },
}
"""


def _changed(old: str, new: str) -> tuple[list[str], list[str]]:
    gone = [line for line in old.splitlines() if line not in new.splitlines()]
    added = [line for line in new.splitlines() if line not in old.splitlines()]
    return gone, added


def test_remove_exclude_deletes_its_line_only() -> None:
    """An OPS exclude on its own line goes with its comment; nothing else moves."""
    new = apply_edits(SMALL, [ManifestEdit("remove_exclude", "abs")], "m.py")
    gone, added = _changed(SMALL, new)
    assert gone == ['        "abs": "wrong dtype on int64",  # filed as BUG-1']
    assert added == []
    assert check_manifest_text(new, "m.py").ops_exclude == {"mul": "high word dropped"}


def test_remove_exclude_inline_dict() -> None:
    """In a one-line dict the item and its comma go; the rest of the line stays."""
    text = 'DEVICE = "x"\nOPS = {"exclude": {"a": "r1", "b": "r2"}}\n'
    first = apply_edits(text, [ManifestEdit("remove_exclude", "a")], "m.py")
    assert first.splitlines()[1] == 'OPS = {"exclude": {"b": "r2"}}'
    last = apply_edits(text, [ManifestEdit("remove_exclude", "b")], "m.py")
    assert check_manifest_text(last, "m.py").ops_exclude == {"a": "r1"}


def test_dtype_false_becomes_true_or_a_regex() -> None:
    """DTYPES False -> True, or -> a regex of named ops; the comment stays."""
    true = apply_edits(SMALL, [ManifestEdit("set_dtype", "int64", True)], "m.py")
    assert 'DTYPES = {"float32": True, "int64": True}  # int64: see below' in true
    ops = ops_regex(["abs", "div.no_rounding_mode"])
    regex = apply_edits(SMALL, [ManifestEdit("set_dtype", "int64", ops)], "m.py")
    support = check_manifest_text(regex, "m.py").dtypes["int64"]
    assert isinstance(support, str)
    assert re.fullmatch(support, "div.no_rounding_mode")
    assert not re.fullmatch(support, "div") and not re.fullmatch(support, "mul")


def test_absent_dtype_is_added() -> None:
    """A dtype the manifest never named is added to the literal."""
    new = apply_edits(SMALL, [ManifestEdit("set_dtype", "int16", True)], "m.py")
    assert check_manifest_text(new, "m.py").dtypes == {
        "float32": True,
        "int64": False,
        "int16": True,
    }


def test_regex_extension_keeps_its_group() -> None:
    """simdev's float16 regex gains ops inside its group and still excludes others."""
    edit = ManifestEdit("extend_dtype_regex", "float16", items=("tanh", "log1p"))
    new = apply_edits(SIMDEV, [edit], "simdev.py")
    support = check_manifest_text(new, "simdev.py").dtypes["float16"]
    assert isinstance(support, str) and support.startswith("^(add|sub|")
    assert all(re.fullmatch(support, op) for op in ("add", "tanh", "log1p", "cat"))
    assert not re.fullmatch(support, "log") and not re.fullmatch(support, "tanhx")
    odd = extended_regex("add|s.b", ["x"])
    assert re.fullmatch(odd, "sub") and re.fullmatch(odd, "x")
    assert not re.fullmatch(odd, "xx") and not re.search(odd, "axe")


def test_capabilities_appended_in_a_packed_list() -> None:
    """A capability joins simdev's multi-line list; `# fmt: skip` stays."""
    edit = ManifestEdit("add_capability", items=("serialization", "pin_memory"))
    new = apply_edits(SIMDEV, [edit], "simdev.py")
    caps = check_manifest_text(new, "simdev.py").capabilities
    assert caps[-2:] == ("serialization", "pin_memory")
    assert "]  # fmt: skip" in new
    missing = apply_edits('DEVICE = "x"\n', [edit], "m.py")
    assert check_manifest_text(missing, "m.py").capabilities == (
        "forward",
        "serialization",
        "pin_memory",
    )


def test_a_capability_already_listed_is_not_added_twice() -> None:
    """Adding a declared capability (or one twice) leaves each listed once, so the
    edited manifest passes the check that refuses a repeated capability."""
    edit = ManifestEdit("add_capability", items=("views", "pin_memory", "pin_memory"))
    new = apply_edits(SIMDEV, [edit], "simdev.py")
    caps = check_manifest_text(new, "simdev.py").capabilities
    assert caps.count("views") == 1 and caps.count("pin_memory") == 1
    forward = ManifestEdit("add_capability", items=("forward", "views"))
    missing = apply_edits('DEVICE = "x"\n', [forward], "m.py")
    assert check_manifest_text(missing, "m.py").capabilities == ("forward", "views")
    assert apply_edits(new, [edit], "simdev.py") == new  # nothing left to add


def test_include_appended() -> None:
    """An op joins OPS include."""
    text = 'DEVICE = "x"\nOPS = {"include": ["add"]}\n'
    new = apply_edits(text, [ManifestEdit("add_include", items=("mul",))], "m.py")
    assert check_manifest_text(new, "m.py").ops_include == ("add", "mul")


def test_unknown_key_is_a_one_line_error() -> None:
    """Removing an exclude the manifest lacks names the file and key."""
    with pytest.raises(ManifestError, match=r"m\.py: OPS\['exclude'\] has no key 'x'"):
        apply_edits(SMALL, [ManifestEdit("remove_exclude", "x")], "m.py")


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch tool")
def test_patch_applies_with_patch_p1(tmp_path: Path) -> None:
    """The diff of several edits applies with `patch -p1` and loads."""
    (tmp_path / "manifests").mkdir()
    path = tmp_path / "manifests" / "simdev.py"
    path.write_text(SIMDEV, encoding="utf-8")
    edits = [
        ManifestEdit("remove_exclude", "to_sparse"),
        ManifestEdit("set_dtype", "int16", True),
        ManifestEdit("add_capability", items=("serialization",)),
    ]
    new = apply_edits(SIMDEV, edits, path)
    patch = unified_patch(SIMDEV, new, "manifests/simdev.py")
    done = subprocess.run(
        ["patch", "-p1", "--batch"],
        input=patch,
        text=True,
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert path.read_text(encoding="utf-8") == new
    manifest = load_manifest(path)
    assert "to_sparse" not in manifest.ops_exclude
    assert manifest.dtypes["int16"] is True
    assert "serialization" in manifest.capabilities


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch tool")
def test_patch_of_a_file_without_a_final_newline(tmp_path: Path) -> None:
    """A one-line file with no newline at its end patches exactly."""
    old, new = 'DEVICE = "x"\nLEVEL = 1', 'DEVICE = "x"\nLEVEL = 2'
    (tmp_path / "m.py").write_text(old, encoding="utf-8")
    done = subprocess.run(
        ["patch", "-p1", "--batch"],
        input=unified_patch(old, new, "m.py"),
        text=True,
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == new
