"""export-skips: each format from a hand-built run, the status-to-decorator rules, the
variant-to-upstream-test mapping, not_run handling, empty runs and bad input."""

from __future__ import annotations

import ast
import json
import random
import types
from pathlib import Path
from typing import Any

import pytest
from report_factories import Synthetic
from torchcts_report.cli import main
from torchcts_report.export_skips import export_skips
from torchcts_schema import CrashInfo, CrashKind, NotRunReason, RunArtifact, Status

r = Synthetic.record
KEY = "simdev_x86-64-2cpu"


def _run() -> RunArtifact:
    """Three samples of mul float32 (two fail), and one case of every other kind."""
    return Synthetic.artifact(
        [
            r(
                "mul",
                "float32",
                Status.FAILED,
                sample=1,
                mismatch="values differ\nat 3",
            ),
            r("mul", "float32", Status.FAILED, sample=0, mismatch="values differ at 7"),
            r("mul", "float32", Status.PASSED, sample=2),
            r("mul", "int64", Status.PASSED),
            r(
                "add",
                "float32",
                Status.ERROR,
                exception_type="RuntimeError",
                exception_message="device fault",
            ),
            r(
                "where",
                "float32",
                Status.UNSUPPORTED,
                exception_type="NotImplementedError",
                exception_message="no kernel",
            ),
            r(
                "exp",
                "float32",
                Status.CRASHED,
                source=None,
                crash=CrashInfo(CrashKind.SIGNAL, signal="SIGSEGV", detail="segfault"),
            ),
            r("exp", "float32", Status.FAILED, sample=1, mismatch="nan"),
            r("sin", "float64", Status.FAILED, variant="backward", mismatch="grad off"),
            r(
                "bmm",
                "float32",
                Status.FAILED,
                variant="error_inputs",
                mismatch="no raise",
            ),
            r(
                "views",
                None,
                Status.FAILED,
                suite="views",
                variant="view_of",
                sample=None,
                mismatch="copy, not a view",
            ),
            r("rng", None, Status.SKIPPED, suite="rng", variant="stream", sample=None),
            r(
                "div",
                "bfloat16",
                Status.NOT_RUN,
                source=None,
                not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
            ),
            r(
                "div",
                "float32",
                Status.NOT_RUN,
                source=None,
                not_run_reason=NotRunReason.FILTERED_BY_SELECTION,
            ),
            r(
                "abs",
                "float32",
                Status.NOT_RUN,
                source=None,
                not_run_reason=NotRunReason.REFERENCE_UNAVAILABLE,
            ),
        ]
    )


def _rows(text: str) -> list[tuple[Any, ...]]:
    return [
        (d["op"], d["variant"], d["dtype"], d["status"], d["count"], d["run"])
        for d in json.loads(text)
    ]


def test_json_lists_every_non_passed_key_with_counts_reason_and_ids() -> None:
    """One object per suite, op, variant, dtype and status, sorted; skipped and
    not_run cases are left out by default."""
    text = export_skips(_run(), "json")
    assert _rows(text) == [
        ("add", "forward", "float32", "error", 1, 1),
        ("bmm", "error_inputs", "float32", "failed", 1, 1),
        ("exp", "forward", "float32", "crashed", 1, 2),
        ("exp", "forward", "float32", "failed", 1, 2),
        ("mul", "forward", "float32", "failed", 2, 3),
        ("sin", "backward", "float64", "failed", 1, 1),
        ("where", "forward", "float32", "unsupported", 1, 1),
        ("views", "view_of", None, "failed", 1, 1),
    ]
    mul = json.loads(text)[4]
    assert mul["case_ids"] == [
        "opinfo/mul/forward/float32/0",
        "opinfo/mul/forward/float32/1",
    ]
    # the first case's own message, not the first one in the artifact
    assert mul["reason"] == "mismatch: values differ at 7"
    crashed = json.loads(text)[2]
    assert crashed["reason"] == "signal SIGSEGV: segfault"


def test_include_not_run_adds_only_what_the_backend_declined() -> None:
    """--include-not-run exports dtype_not_supported, never the run's own filters or
    an unbuildable reference."""
    rows = _rows(export_skips(_run(), "json", include_not_run=True))
    not_run = [row for row in rows if row[3] == "not_run"]
    assert not_run == [("div", "forward", "bfloat16", "not_run", 1, 0)]


def _evaluate_opinfo(text: str) -> dict[str, list[tuple[Any, ...]]]:
    """The op_overrides dict, after checking the module holds nothing but the three
    imports and one assignment of literals, DecorateInfo and unittest.skip calls."""
    tree = ast.parse(text)
    imports, assign = tree.body[:3], tree.body[3:]
    assert [ast.unparse(node) for node in imports] == [
        "import unittest",
        "import torch",
        "from torch.testing._internal.opinfo.core import DecorateInfo",
    ]
    (node,) = assign
    assert isinstance(node, ast.AnnAssign) and node.value is not None
    assert ast.unparse(node.target) == "op_overrides"
    for sub in ast.walk(node.value):
        if isinstance(sub, ast.Call):
            assert ast.unparse(sub.func) in {"DecorateInfo", "unittest.skip"}
        elif isinstance(sub, ast.Name):
            assert sub.id in {"DecorateInfo", "unittest", "torch"}
        else:
            allowed = (ast.Dict, ast.List, ast.Tuple, ast.Constant, ast.Attribute)
            assert isinstance(sub, (*allowed, ast.keyword, ast.Load)), ast.dump(sub)

    def decorate_info(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
        return (*args, tuple(sorted(kwargs.items())))

    namespace = {
        "DecorateInfo": decorate_info,
        "unittest": types.SimpleNamespace(
            expectedFailure="xfail", skip=lambda why: ("skip", why)
        ),
        "torch": types.SimpleNamespace(float32="f32", float64="f64", int64="i64"),
    }
    value = eval(compile(ast.Expression(node.value), "<opinfo>", "eval"), namespace)
    assert isinstance(value, dict)
    return value


def test_opinfo_maps_variants_and_statuses_to_decorators() -> None:
    """forward -> TestCommon.test_compare_cpu, backward -> TestBwdGradients.test_fn_grad,
    error_inputs -> test_errors without dtypes; crashed or unsupported -> skip, failed
    or error -> expectedFailure; a crashed and a failed sample -> skip."""
    found = _evaluate_opinfo(export_skips(_run(), "opinfo"))
    dev = ("device_type", "simdev")
    f32 = (dev, ("dtypes", ("f32",)))
    assert found["mul"] == [("xfail", "TestCommon", "test_compare_cpu", f32)]
    assert found["add"] == [("xfail", "TestCommon", "test_compare_cpu", f32)]
    assert found["sin"] == [
        ("xfail", "TestBwdGradients", "test_fn_grad", (dev, ("dtypes", ("f64",))))
    ]
    assert found["bmm"] == [("xfail", "TestCommon", "test_errors", (dev,))]
    ((skip, why), *rest) = found["exp"][0]
    assert skip == "skip" and rest == ["TestCommon", "test_compare_cpu", f32]
    assert why == "TorchCTS: 1 of 2 run crashed: signal SIGSEGV: segfault"
    assert found["where"][0][0] == (
        "skip",
        "TorchCTS: 1 of 1 run unsupported: NotImplementedError: no kernel",
    )
    assert sorted(found) == ["add", "bmm", "exp", "mul", "sin", "where"]


def test_opinfo_lists_what_has_no_upstream_test_in_comments() -> None:
    """A hand-written suite's failure is named in a trailing comment, not dropped."""
    text = export_skips(_run(), "opinfo")
    tail = text.split("# Not exported: 1 entries without upstream test\n")[1]
    assert tail == (
        "# views/views/view_of/- (suite views has no upstream OpInfo test): "
        "1 of 1 run failed: mismatch: copy, not a view\n"
    )


def _evaluate_xpu_ops(text: str) -> dict[str, tuple[str, ...]]:
    tree = ast.parse(text)
    (node,) = tree.body
    assert isinstance(node, ast.Assign)
    assert [ast.unparse(t) for t in node.targets] == ["skip_dict"]
    value = ast.literal_eval(node.value)
    assert isinstance(value, dict)
    return value


def test_xpu_ops_names_follow_pytorch_test_instantiation() -> None:
    """skip_dict maps test_ops_<device>.py and test_ops_gradients_<device>.py to
    <test>_<op>_<device>_<dtype> names, sorted; each is commented with its status."""
    text = export_skips(_run(), "xpu-ops")
    assert _evaluate_xpu_ops(text) == {
        "test_ops_gradients_simdev.py": ("test_fn_grad_sin_simdev_float64",),
        "test_ops_simdev.py": (
            "test_compare_cpu_add_simdev_float32",
            "test_compare_cpu_exp_simdev_float32",
            "test_compare_cpu_mul_simdev_float32",
            "test_compare_cpu_where_simdev_float32",
            "test_errors_bmm_simdev",
        ),
    }
    block = text.split('"test_compare_cpu_exp_simdev_float32"')[0].rsplit("),", 1)[-1]
    assert "# exp: skip\n" in block
    assert "# forward float32: 1 of 2 run crashed: signal SIGSEGV: segfault\n" in block
    assert "# forward float32: 1 of 2 run failed: mismatch: nan\n" in block


def test_variants_sharing_an_upstream_test_merge_into_one_line() -> None:
    """method and inplace both map to test_variant_consistency_eager: one name."""
    artifact = Synthetic.artifact(
        [
            r("add", "float32", Status.FAILED, variant="method", mismatch="m"),
            r("add", "float32", Status.FAILED, variant="inplace", mismatch="i"),
        ]
    )
    names = _evaluate_xpu_ops(export_skips(artifact, "xpu-ops"))
    assert names == {
        "test_ops_simdev.py": ("test_variant_consistency_eager_add_simdev_float32",)
    }
    (entry,) = _evaluate_opinfo(export_skips(artifact, "opinfo"))["add"]
    assert entry[:3] == ("xfail", "TestCommon", "test_variant_consistency_eager")


def test_device_type_comes_from_the_run() -> None:
    """Names and device_type use the device the run recorded."""
    artifact = Synthetic.artifact(
        [r("mul", "float16", Status.FAILED, mismatch="m")], device="xpu"
    )
    names = _evaluate_xpu_ops(export_skips(artifact, "xpu-ops"))
    assert names == {"test_ops_xpu.py": ("test_compare_cpu_mul_xpu_float16",)}
    assert 'device_type="xpu",' in export_skips(artifact, "opinfo")


def test_a_run_that_passed_exports_empty_valid_lists(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Nothing to skip: [] , skip_dict = {}, op_overrides = {}, and exit 0."""
    Synthetic.write(tmp_path, Synthetic.artifact([r("add", "float32")]))
    outputs = {}
    for form in ("json", "xpu-ops", "opinfo"):
        assert main(["export-skips", "--results", str(tmp_path), "--format", form]) == 0
        outputs[form] = capsys.readouterr().out
    assert json.loads(outputs["json"]) == []
    assert _evaluate_xpu_ops(outputs["xpu-ops"]) == {}
    assert _evaluate_opinfo(outputs["opinfo"]) == {}


def test_same_run_same_bytes_whatever_the_record_order(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Shuffled records give byte-identical text, and --out holds what stdout shows."""
    records = _run().records
    for form in ("json", "xpu-ops", "opinfo"):
        texts = set()
        for seed in range(3):
            shuffled = list(records)
            random.Random(seed).shuffle(shuffled)
            texts.add(export_skips(Synthetic.artifact(shuffled), form))
        assert len(texts) == 1, form
    Synthetic.write(tmp_path, _run())
    out = tmp_path / "skips.py"
    argv = ["export-skips", "--results", str(tmp_path), "--format", "opinfo"]
    assert main([*argv, "--out", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert main(argv) == 0
    assert capsys.readouterr().out.encode() == out.read_bytes()
    assert out.read_text() == export_skips(_run(), "opinfo")


@pytest.mark.parametrize(
    "content", ['{"format": "torchcts-result", "format_vers', "[]"]
)
def test_bad_artifact_is_one_line_exit_2(tmp_path: Path, content: str, capsys) -> None:  # type: ignore[no-untyped-def]
    """A corrupt artifact: exit 2, one line naming the file, no traceback."""
    (tmp_path / "k_latest.json").write_text(content)
    argv = ["export-skips", "--results", str(tmp_path), "--format", "json"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.out == ""
    assert "k_latest.json" in captured.err and "Traceback" not in captured.err


def test_missing_results_and_several_runs_are_usage_errors(
    tmp_path: Path,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    """No run there: exit 2; several run keys: exit 2 until --run-key picks one."""
    argv = ["export-skips", "--format", "json", "--results"]
    assert main([*argv, str(tmp_path / "absent")]) == 2
    Synthetic.write(tmp_path, _run())
    Synthetic.write(tmp_path, Synthetic.artifact([r("add")], run_key="cpu_other"))
    assert main([*argv, str(tmp_path)]) == 2
    assert "several run keys" in capsys.readouterr().err
    assert main([*argv, str(tmp_path), "--run-key", KEY]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 8
