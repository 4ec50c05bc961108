"""The static manifest reader accepts literals only and never executes anything."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from torchcts_schema import (
    DEFAULT_UNSUPPORTED_PATTERNS,
    MAX_MANIFEST_BYTES,
    ManifestError,
    dtype_claims,
    load_manifest,
    read_manifest_source,
)

GOOD = '''"""A manifest."""
DEVICE = "simdev"
BACKEND_IMPORT = "torchcts_simdev"
DTYPES = {"float32": True, "float16": r"^(add|mul)$", "complex64": False}
CAPABILITIES = ["forward", "views"]
LEVEL: int = 2
'''


def test_reads_literal_assignments(tmp_path: Path) -> None:
    """Docstring, plain and annotated literal assignments are read in order."""
    path = tmp_path / "manifest.py"
    path.write_text(GOOD)
    manifest = load_manifest(path)
    assert manifest.device == "simdev" and manifest.level == 2
    assert manifest.dtypes["float16"] == "^(add|mul)$"
    assert manifest.digest.startswith("sha256:")
    assert manifest.cpu_fallback == "allow"  # the default: label, never fail


def test_cpu_fallback_policy_is_read(tmp_path: Path) -> None:
    """CPU_FALLBACK = 'forbid' reaches the manifest as written."""
    path = tmp_path / "manifest.py"
    path.write_text(GOOD + 'CPU_FALLBACK = "forbid"\n')
    assert load_manifest(path).cpu_fallback == "forbid"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("import os\nDEVICE = 'x'", "line 1: only NAME = <literal> assignments"),
        ("DEVICE = __import__('os').system('touch pwned')", "DEVICE is not a literal"),
        ("DEVICE = f'{1}'", "DEVICE is not a literal"),
        ("X = [i for i in range(3)]", "X is not a literal"),
        ("DEVICE = 'a'\nDEVICE = 'b'", "line 2: DEVICE assigned twice"),
        ("a, b = 1, 2", "assign to one plain NAME"),
        ("DEVICE = (", "not valid Python"),
        ("def f():\n    pass", "found FunctionDef"),
    ],
)
def test_code_is_refused_with_its_line(
    source: str, message: str, tmp_path: Path
) -> None:
    """Anything but literals is an error naming the file and the line."""
    marker = tmp_path / "pwned"
    with pytest.raises(ManifestError, match=message) as info:
        read_manifest_source(source, tmp_path / "manifest.py")
    assert "manifest.py" in str(info.value)
    assert not marker.exists()


def test_a_manifest_past_the_limit_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    """A valid manifest of more than 1 MiB (comments) is refused in one line naming
    the file and the limit; one of exactly 1 MiB is read."""
    assert MAX_MANIFEST_BYTES == 2**20  # verify's limit on an archived manifest too
    path = tmp_path / "manifest.py"
    padding = MAX_MANIFEST_BYTES - len(GOOD.encode())
    path.write_text(GOOD + "#" * (padding - 1) + "\n")
    assert path.stat().st_size == MAX_MANIFEST_BYTES
    assert load_manifest(path).device == "simdev"
    path.write_text(GOOD + "#" * padding + "\n")
    with pytest.raises(ManifestError) as refused:
        load_manifest(path)
    assert str(refused.value) == (
        f"{path}: manifest is larger than 1 MiB (1048576 bytes), the most a "
        "manifest may hold"
    )


def test_line_endings_are_read_as_text_mode_reads_them(tmp_path: Path) -> None:
    """CRLF and CR line endings inside a string literal become newlines, as the
    reader's text decoding always made them (the bounded read keeps that)."""
    path = tmp_path / "manifest.py"
    path.write_bytes(
        b'DEVICE = "simdev"\r\nOPS = {"exclude": {"add": """a\r\nb\rc"""}}\r\n'
    )
    assert load_manifest(path).ops_exclude == {"add": "a\nb\nc"}


def test_a_directory_is_called_one(tmp_path: Path) -> None:
    """A directory given as the manifest is named as one (was 'cannot read manifest
    (Is a directory)')."""
    with pytest.raises(ManifestError, match="is a directory; name the manifest file"):
        load_manifest(tmp_path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("COLOUR = 1", "unknown key COLOUR"),
        ("CAPABILITIES = ['teleport']", "unknown capability 'teleport'"),
        ("DTYPES = {'float33': True}", "unknown dtype 'float33'"),
        ("DTYPES = {'float16': '(unclosed'}", "invalid regex"),
        (
            "TOLERANCES = {'dtypes': {'float16': {'atol': -1}}}",
            "not a finite non-negative",
        ),
        ("TOLERANCES = {'dtypes': {'float16': {'eps': 1}}}", "'atol' and/or 'rtol'"),
        ("LEVEL = 9", "LEVEL must be an integer 1-8"),
        ("RESOURCE_LIMITS = {'gpus': 1}", "unknown key 'gpus'"),
        (
            "CAPABILITIES = ['forward', 'views', 'forward']",
            "CAPABILITIES: 'forward' is listed twice",
        ),
        ("OPS = {'exclude': {'add': ''}}", "non-empty reason"),
        (
            "CPU_FALLBACK = 'warn'",
            "CPU_FALLBACK must be 'allow' or 'forbid', not 'warn'",
        ),
        ("CPU_FALLBACK = True", "CPU_FALLBACK must be 'allow' or 'forbid'"),
    ],
)
def test_schema_errors_name_the_key(line: str, message: str, tmp_path: Path) -> None:
    """Schema violations name the key and value."""
    path = tmp_path / "manifest.py"
    path.write_text(f"DEVICE = 'simdev'\n{line}\n")
    with pytest.raises(ManifestError, match=message):
        load_manifest(path)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "'' is empty or only whitespace"),
        (" ", "' ' is empty or only whitespace"),
        ("\t\n", "'\\t\\n' is empty or only whitespace"),
        (".*", "'.*' matches the empty string"),
        ("a*", "'a*' matches the empty string"),
        ("x?", "'x?' matches the empty string"),
        ("(?:)", "'(?:)' matches the empty string"),
        ("$", "'$' matches the empty string"),
        ("not implemented|", "'not implemented|' matches the empty string"),
    ],
)
def test_an_unsupported_pattern_that_matches_anything_is_refused(
    pattern: str, message: str, tmp_path: Path
) -> None:
    """A pattern that matches an empty (or blank) message matches every error, and
    would report real runtime errors as unsupported: refused, naming it."""
    path = tmp_path / "manifest.py"
    path.write_text(
        f"DEVICE = 'simdev'\nUNSUPPORTED_PATTERNS = ['unsupported', {pattern!r}]\n"
    )
    with pytest.raises(ManifestError, match=re.escape(message)) as info:
        load_manifest(path)
    assert "UNSUPPORTED_PATTERNS" in str(info.value) and "\n" not in str(info.value)


def test_the_default_unsupported_patterns_are_accepted(tmp_path: Path) -> None:
    """The shipped patterns each need some text to match, and load as written."""
    path = tmp_path / "manifest.py"
    patterns = list(DEFAULT_UNSUPPORTED_PATTERNS)
    path.write_text(f"DEVICE = 'simdev'\nUNSUPPORTED_PATTERNS = {patterns!r}\n")
    assert load_manifest(path).unsupported_patterns == DEFAULT_UNSUPPORTED_PATTERNS


@pytest.mark.parametrize(
    ("support", "op", "name", "claimed"),
    [
        (True, "add", "add", True),
        (False, "add", "add", False),
        ("add|mul", "add", "add", True),
        ("add|mul", "addmm", "addmm", False),  # a whole match, never a prefix
        ("max", "max.binary", "max", True),  # by the OpInfo name
        ("max\\.binary", "max.binary", "max", True),  # by the full segment
        ("max\\.binary", "max.reduction_with_dim", "max", False),
        ("(?!(?:sin)$).*", "sin", "sin", False),
    ],
)
def test_dtype_claims_matches_segment_or_name(
    support: bool | str, op: str, name: str, claimed: bool
) -> None:
    """A DTYPES regex claims an op when it fully matches its segment or its name."""
    assert dtype_claims(support, op, name) is claimed


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            'DTYPES = {\n  "float16": True,\n  "float32": True,\n  "float16": False,\n}\n',
            "line 4: DTYPES names the key 'float16' twice",
        ),
        (
            'RESOURCE_LIMITS = {"case_timeout_s": 5, "case_timeout_s": 500}\n',
            "line 1: RESOURCE_LIMITS names the key 'case_timeout_s' twice",
        ),
        (  # nested: a known-crash rule's own dict
            'OPS = {"include": ["add"], "rules": [{"op": "a", "op": "b"}]}\n',
            "line 1: OPS names the key 'op' twice",
        ),
    ],
)
def test_a_dict_that_names_a_key_twice_is_refused(
    source: str, message: str, tmp_path: Path
) -> None:
    """Python keeps the last of two equal keys without a word: a dtype's claim or
    a limit would be decided by which line came last. Refused with the line."""
    with pytest.raises(ManifestError, match=re.escape(message)):
        read_manifest_source(source, tmp_path / "manifest.py")
    read_manifest_source('DTYPES = {"float16": True, "float32": True}\n', "m.py")
