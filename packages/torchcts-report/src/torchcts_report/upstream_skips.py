"""Skip entries as the Python a backend team pastes into PyTorch's own test setup.

Two shapes, both plain Python that parses on its own and holds nothing but literals,
``DecorateInfo`` calls and ``unittest.skip`` (every artifact string is an ASCII-escaped
literal or an escaped one-line comment, so no message can end a line and start code):

- ``opinfo``: ``op_overrides = {"<OpInfo full name>": [DecorateInfo(...), ...]}``, the
  ``dict[str, list[DecorateInfo]]`` that ``DeviceTypeTestBase.set_test_configs(
  op_overrides=...)`` takes (keys are ``OpInfo.full_name``, the op segment of a
  TorchCTS case id); each list also fits ``OpInfo.decorators``.
- ``xpu-ops``: ``skip_dict = {"<test file>": ("<test name>", ...)}``, the shape of
  intel/torch-xpu-ops' ``skip_list_common.py``, whose runner deselects each name with
  ``pytest -k "not <name>"``. Files are ``<stem>_<device>.py`` (``test_ops_xpu.py`` on
  XPU); names follow PyTorch's instantiation, ``<test>_<op with . as _>_<device>_<dtype>``.

A TorchCTS variant maps to the upstream test that checks the same thing, where one does:

| variant | upstream test (file stem, class, test) |
|---|---|
| forward | test_ops, TestCommon, test_compare_cpu (device against CPU) |
| method, inplace | test_ops, TestCommon, test_variant_consistency_eager |
| out | test_ops, TestCommon, test_out |
| noncontiguous | test_ops, TestCommon, test_noncontiguous_samples |
| error_inputs | test_ops, TestCommon, test_errors (no dtype in its name) |
| backward | test_ops_gradients, TestBwdGradients, test_fn_grad (nearest: gradcheck) |

Hand-written suites (views, factories, rng, ...) and other variants (nonfinite: the
nearest upstream tests compare ufuncs with NumPy on samples of their own) have no
upstream OpInfo test; they are listed in comments at the end, never dropped. An upstream test
covers every sample of one op and dtype, so the entries that map to it merge into one
decorator: ``skip`` when any case crashed (a crash kills the test process, it cannot be
an expected failure), was unsupported or not run; ``unittest.expectedFailure`` when
all of them failed or erred. Upstream instantiates some tests for a few dtypes only
(test_fn_grad for float64 and complex128); a line for another dtype matches nothing
there and does no harm. Review before committing: a case TorchCTS judged with its own
samples may pass upstream, and an expected failure that passes is an error there.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchcts_schema import DTYPE_NAMES, RunMetadata, Status

from torchcts_report.skip_entries import EXPORTED, SkipEntry
from torchcts_report.text import py_comment, py_string


@dataclass(frozen=True)
class UpstreamTest:
    """One PyTorch device-generic test an OpInfo variant maps to."""

    stem: str  # test file without .py
    cls: str
    test: str
    per_dtype: bool = True  # whether instantiated names end in a dtype


_COMMON = "test_ops"
UPSTREAM_TESTS: dict[str, UpstreamTest] = {
    "forward": UpstreamTest(_COMMON, "TestCommon", "test_compare_cpu"),
    "method": UpstreamTest(_COMMON, "TestCommon", "test_variant_consistency_eager"),
    "inplace": UpstreamTest(_COMMON, "TestCommon", "test_variant_consistency_eager"),
    "out": UpstreamTest(_COMMON, "TestCommon", "test_out"),
    "noncontiguous": UpstreamTest(_COMMON, "TestCommon", "test_noncontiguous_samples"),
    "error_inputs": UpstreamTest(_COMMON, "TestCommon", "test_errors", False),
    "backward": UpstreamTest("test_ops_gradients", "TestBwdGradients", "test_fn_grad"),
}
MAPPED_SUITE = "opinfo"
# a case that kills the process, or a path the backend lacks: never expect it to fail
SKIP_STATUSES = frozenset({Status.CRASHED, Status.UNSUPPORTED, Status.NOT_RUN})
INDENT = "    "


@dataclass(frozen=True)
class UpstreamSkip:
    """The entries of one op and dtype that one upstream test covers."""

    test: UpstreamTest
    op: str
    dtype: str | None  # None for a test without dtypes
    entries: tuple[SkipEntry, ...]

    @property
    def skip(self) -> bool:
        """Skip (True) or expect the failure (False)."""
        return any(e.status in SKIP_STATUSES for e in self.entries)

    @property
    def worst(self) -> SkipEntry:
        """The entry whose status decides first (crashed before unsupported, ...)."""
        return min(self.entries, key=lambda e: EXPORTED.index(e.status))

    def comments(self) -> list[str]:
        """One escaped comment line per entry: variant, dtype, counts and reason."""
        return [
            py_comment(f"{e.variant} {e.dtype or '(no dtype)'}: {e.summary()}")
            for e in self.entries
        ]


def upstream_skips(
    entries: list[SkipEntry],
) -> tuple[list[UpstreamSkip], list[tuple[SkipEntry, str]]]:
    """Entries merged per upstream test, op and dtype; the rest, with why not."""
    merged: dict[tuple[str, str, str, str, str], list[SkipEntry]] = {}
    tests: dict[tuple[str, str, str, str, str], UpstreamTest] = {}
    left: list[tuple[SkipEntry, str]] = []
    for entry in entries:
        why = _unmapped(entry)
        if why:
            left.append((entry, why))
            continue
        test = UPSTREAM_TESTS[entry.variant]
        dtype = entry.dtype if test.per_dtype else None
        key = (test.stem, test.cls, test.test, entry.op, dtype or "")
        merged.setdefault(key, []).append(entry)
        tests[key] = test
    skips = [
        UpstreamSkip(tests[key], key[3], key[4] or None, tuple(group))
        for key, group in sorted(merged.items())
    ]
    return skips, left


def _unmapped(entry: SkipEntry) -> str:
    """Why no upstream test matches the entry ("" when one does)."""
    if entry.suite != MAPPED_SUITE:
        return f"suite {entry.suite} has no upstream OpInfo test"
    if entry.variant not in UPSTREAM_TESTS:
        return f"variant {entry.variant} has no upstream OpInfo test"
    if UPSTREAM_TESTS[entry.variant].per_dtype:
        dtype = entry.dtype
        if dtype is None:
            return "no dtype recorded"
        if dtype not in DTYPE_NAMES:  # it becomes the attribute in torch.<dtype>
            return "dtype is not a torch dtype name"
    return ""


def opinfo_text(entries: list[SkipEntry], metadata: RunMetadata) -> str:
    """The ``op_overrides`` dict of ``DecorateInfo`` lists, as a Python module."""
    skips, left = upstream_skips(entries)
    device = py_string(metadata.device)
    lines = _header("opinfo", metadata, len(skips))
    lines += [
        "import unittest",
        "",
        "import torch",
        "from torch.testing._internal.opinfo.core import DecorateInfo",
        "",
    ]
    by_op: dict[str, list[UpstreamSkip]] = {}
    for skip in skips:
        by_op.setdefault(skip.op, []).append(skip)
    if not by_op:
        lines.append("op_overrides: dict[str, list[DecorateInfo]] = {}")
    else:
        lines.append("op_overrides: dict[str, list[DecorateInfo]] = {")
        for op in sorted(by_op):
            lines.append(f"{INDENT}{py_string(op)}: [")
            for skip in by_op[op]:
                lines += _decorate_info(skip, device)
            lines.append(f"{INDENT}],")
        lines.append("}")
    return "\n".join(lines + _left_out(left)) + "\n"


def _decorate_info(skip: UpstreamSkip, device: str) -> list[str]:
    pad = INDENT * 2
    reason = skip.worst.summary()
    decorator = (
        f"unittest.skip({py_string(f'TorchCTS: {reason}')})"
        if skip.skip
        else "unittest.expectedFailure"
    )
    lines = [pad + c for c in skip.comments()]
    lines += [
        f"{pad}DecorateInfo(",
        f"{pad}{INDENT}{decorator},",
        f"{pad}{INDENT}{py_string(skip.test.cls)},",
        f"{pad}{INDENT}{py_string(skip.test.test)},",
        f"{pad}{INDENT}device_type={device},",
    ]
    if skip.dtype is not None:
        lines.append(f"{pad}{INDENT}dtypes=(torch.{skip.dtype},),")
    lines.append(f"{pad}),")
    return lines


def xpu_ops_text(entries: list[SkipEntry], metadata: RunMetadata) -> str:
    """The ``skip_dict`` of test file to test names, as a Python module."""
    skips, left = upstream_skips(entries)
    device = metadata.device
    lines = _header("xpu-ops", metadata, len(skips))
    by_file: dict[str, list[tuple[str, UpstreamSkip]]] = {}
    for skip in skips:
        name = "_".join(
            [skip.test.test, skip.op.replace(".", "_"), device]
            + ([skip.dtype] if skip.dtype is not None else [])
        )
        by_file.setdefault(f"{skip.test.stem}_{device}.py", []).append((name, skip))
    if not by_file:
        lines.append("skip_dict = {}")
    else:
        lines.append("skip_dict = {")
        for file in sorted(by_file):
            lines.append(f"{INDENT}{py_string(file)}: (")
            for name, skip in sorted(by_file[file], key=lambda pair: pair[0]):
                action = "skip" if skip.skip else "expected failure"
                lines.append(f"{INDENT * 2}{py_comment(f'{skip.op}: {action}')}")
                lines += [INDENT * 2 + c for c in skip.comments()]
                lines.append(f"{INDENT * 2}{py_string(name)},")
            lines.append(f"{INDENT}),")
        lines.append("}")
    return "\n".join(lines + _left_out(left)) + "\n"


def _header(form: str, metadata: RunMetadata, count: int) -> list[str]:
    return [
        py_comment(f"TorchCTS skips for upstream PyTorch tests ({form} shape)"),
        py_comment(
            f"run {metadata.run_key}, device {metadata.device}, torch "
            f"{metadata.torch_version}: {count} upstream test(s)"
        ),
        py_comment("made by torchcts-report export-skips; review before committing"),
        "",
    ]


def _left_out(left: list[tuple[SkipEntry, str]]) -> list[str]:
    if not left:
        return []
    lines = ["", py_comment(f"Not exported: {len(left)} entries without upstream test")]
    for entry, why in left:
        where = f"{entry.suite}/{entry.op}/{entry.variant}/{entry.dtype or '-'}"
        lines.append(py_comment(f"{where} ({why}): {entry.summary()}"))
    return lines


__all__ = [
    "UPSTREAM_TESTS",
    "UpstreamSkip",
    "UpstreamTest",
    "opinfo_text",
    "upstream_skips",
    "xpu_ops_text",
]
