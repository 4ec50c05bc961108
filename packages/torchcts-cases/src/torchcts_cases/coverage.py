"""The coverage audit: every aten overload registered in the installed torch is covered
by OpInfo, covered by a hand-written suite, excluded with a reason, or unknown.

"Covered" means a case's CPU run was observed dispatching that overload (see
`coverage_trace`). Exclusions are rules with reasons; everything else is unknown and
goes to the pending-review file for a maintainer to classify.
"""

from __future__ import annotations

import fnmatch
import json
from collections import Counter
from pathlib import Path
from typing import Any

import torch
from torchcts_schema import COVERAGE_DIR, DTYPE_NAMES, write_atomic

from torchcts_cases import index
from torchcts_cases.coverage_trace import observed_overloads

COVERED_OPINFO = "covered_by_opinfo"
COVERED_SUITE = "covered_by_suite"
EXCLUDED = "excluded"
UNKNOWN = "unknown"
CATEGORIES = (COVERED_OPINFO, COVERED_SUITE, EXCLUDED, UNKNOWN)

# (glob on the overload name without "aten::", reason). First match wins.
EXCLUSIONS: tuple[tuple[str, str], ...] = (
    ("*quantize*", "quantized tensors are outside TorchCTS's dense-tensor contract"),
    ("q_*", "quantized tensors are outside TorchCTS's dense-tensor contract"),
    ("*quantized*", "quantized tensors are outside TorchCTS's dense-tensor contract"),
    ("fbgemm_*", "x86 FBGEMM kernels, not a device contract"),
    ("*sparse*", "sparse layouts are outside the dense-tensor contract"),
    ("*_coo*", "sparse layouts are outside the dense-tensor contract"),
    ("*csr*", "sparse layouts are outside the dense-tensor contract"),
    ("*csc*", "sparse layouts are outside the dense-tensor contract"),
    ("*bsr*", "sparse layouts are outside the dense-tensor contract"),
    ("*bsc*", "sparse layouts are outside the dense-tensor contract"),
    ("*mkldnn*", "another backend's private kernel (oneDNN)"),
    ("*miopen*", "another backend's private kernel (MIOpen)"),
    ("*cudnn*", "another backend's private kernel (cuDNN)"),
    ("_cufft*", "another backend's private kernel (cuFFT)"),
    ("*_mps*", "another backend's private kernel (MPS)"),
    ("_mps_*", "another backend's private kernel (MPS)"),
    ("*nnpack*", "another backend's private kernel (NNPACK)"),
    ("*xnnpack*", "another backend's private kernel (XNNPACK)"),
    ("*vulkan*", "another backend's private kernel (Vulkan)"),
    ("_nested*", "nested tensors are outside the dense-tensor contract"),
    ("*nested_tensor*", "nested tensors are outside the dense-tensor contract"),
    ("_test_*", "PyTorch's own test hooks"),
    ("_assert*", "graph assertions used by compilers, not a device contract"),
    ("sym_*", "symbolic-shape helpers used by compilers"),
    ("_functional_*", "functionalization helpers used by compilers"),
    ("*_jvp*", "forward-mode AD helpers (TorchCTS checks reverse mode)"),
    ("_make_dual*", "forward-mode AD helpers (TorchCTS checks reverse mode)"),
    ("_unpack_dual*", "forward-mode AD helpers (TorchCTS checks reverse mode)"),
    ("_fw_primal*", "forward-mode AD helpers (TorchCTS checks reverse mode)"),
    ("*_cuda*", "another backend's private kernel (CUDA)"),
    ("_fbgemm*", "x86 FBGEMM kernels, not a device contract"),
    ("_thnn_fused*", "CUDA-only fused RNN cells"),
    ("_fused_moving_avg*", "quantization-aware training helper"),
    ("*fake_quant*", "quantization-aware training helper"),
    ("_foobar*", "PyTorch's own test hooks"),
    ("_has_compatible_shallow_copy_type*", "Python binding helper"),
)
COMPOSITE_REASON = (
    "CompositeImplicitAutograd: decomposes into other overloads before reaching a "
    "backend, which never sees it"
)


def registered_overloads() -> list[str]:
    """Every aten overload registered in this torch, sorted."""
    return sorted(
        n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")
    )


def classify(name: str, trace: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    """The audit row of one overload."""
    if name in trace["opinfo"]:
        return {"category": COVERED_OPINFO, "by": trace["opinfo"][name][:10]}
    if name in trace["suites"]:
        return {"category": COVERED_SUITE, "by": trace["suites"][name][:10]}
    bare = name.removeprefix("aten::")
    for glob, reason in EXCLUSIONS:
        if fnmatch.fnmatchcase(bare, glob):
            return {"category": EXCLUDED, "reason": reason}
    if torch._C._dispatch_has_kernel_for_dispatch_key(
        name, "CompositeImplicitAutograd"
    ):
        return {"category": EXCLUDED, "reason": COMPOSITE_REASON}
    return {"category": UNKNOWN}


def audit() -> dict[str, dict[str, Any]]:
    """The audit of every registered overload."""
    trace = observed_overloads()
    return {name: classify(name, trace) for name in registered_overloads()}


def summarize(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Counts per category, and excluded counts per reason."""
    counts = Counter(r["category"] for r in rows.values())
    reasons = Counter(r["reason"] for r in rows.values() if r["category"] == EXCLUDED)
    return {
        "torch_version": torch.__version__,
        "overloads": len(rows),
        "counts": {c: counts.get(c, 0) for c in CATEGORIES},
        "excluded_by_reason": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
    }


def summary_markdown(summary: dict[str, Any]) -> str:
    """The summary as a small markdown table."""
    total = summary["overloads"] or 1
    lines = [
        f"Coverage of the {summary['overloads']} aten overloads registered in torch "
        f"{summary['torch_version']}:",
        "",
        "| category | overloads | share |",
        "|---|---:|---:|",
    ]
    for category, n in summary["counts"].items():
        lines.append(f"| {category} | {n} | {100 * n / total:.1f}% |")
    return "\n".join(lines) + "\n"


def write_coverage(results_dir: Path, rows: dict[str, dict[str, Any]]) -> Path:
    """Write results/coverage/: audit, pending review, generated cases, summary."""
    out = Path(results_dir) / COVERAGE_DIR
    summary = summarize(rows)
    pending = sorted(n for n, r in rows.items() if r["category"] == UNKNOWN)
    files = {
        "aten_coverage_audit.json": rows,
        "pending_review.json": {
            "about": "aten overloads no case reaches and no exclusion explains; "
            "classify each (add a case, or an exclusion with a reason)",
            "overloads": pending,
        },
        "generated_cases.json": generated_cases(),
        "summary.json": summary,
    }
    for name, data in files.items():
        write_atomic(out / name, json.dumps(data, indent=1, sort_keys=True) + "\n")
    write_atomic(out / "summary.md", summary_markdown(summary))
    return out


def generated_cases() -> dict[str, Any]:
    """Case counts per op, dtype and variant (the compact generated-case list)."""
    from torchcts_cases.catalog import opinfo_groups
    from torchcts_cases.suites import all_hand_cases

    cached = [
        p.stem
        for p in sorted(index.index_dir().glob("*.json"))
        if p.stem in DTYPE_NAMES
    ]
    opinfo: dict[str, dict[str, dict[str, int]]] = {}
    for dtype in cached:
        for op, _entry, variant, count in opinfo_groups(dtype):
            opinfo.setdefault(op, {}).setdefault(dtype, {})[variant] = count
    for op, _entry, variant, count in opinfo_groups(None):
        opinfo.setdefault(op, {}).setdefault("-", {})[variant] = count
    return {
        "note": "OpInfo counts for the dtypes whose case index is built on this machine",
        "dtypes": cached,
        "opinfo": opinfo,
        "hand_written": sorted(all_hand_cases()),
    }
