"""Oracle failure diagnostics: when the CPU reference cannot be built.

These records explain reference construction problems; they never become backend
results. Each process appends to its own file, so parallel workers never interleave.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torchcts_schema import HostIdentity, ResultsLayout, scrub_text

from torchcts_cases.spec import CaseSpec

_IDENTITY = HostIdentity.current(roots=[os.getcwd()])


def oracle_failures_path(results_dir: Path, run_key: str) -> Path:
    """``<key>_opinfo_oracle_failures_<pid>.jsonl`` of this process."""
    return ResultsLayout(results_dir, run_key).oracle_failures(os.getpid())


def write_oracle_failure(
    results_dir: Path | str, run_key: str, spec: CaseSpec, exc: BaseException
) -> None:
    """Append one diagnostic line (flushed) for a case whose reference failed."""
    cause = exc.__cause__ or exc
    record = {
        "type": "opinfo_oracle_failure",
        "case_id": spec.case_id,
        "suite": spec.suite,
        "op": spec.op,
        "variant": spec.variant,
        "dtype": spec.dtype,
        "sample": spec.sample,
        "exception_type": type(cause).__name__,
        "message": scrub_text(str(exc), _IDENTITY)[:2000],
        "torch_version": torch.__version__,
    }
    path = oracle_failures_path(Path(results_dir), run_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
