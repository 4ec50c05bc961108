"""The report tests' one record, metadata and artifact factory (schema objects only).

`conftest.py` hands it to tests as the ``syn`` fixture; property-based tests build
records from it directly.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from torchcts_schema import (
    CaseRecord,
    CrashInfo,
    CrashKind,
    ExpectedSource,
    NotRunReason,
    RunArtifact,
    RunMetadata,
    Status,
    encode_artifact,
    make_case_id,
    node_id_for_case,
    write_history,
)


class Synthetic:
    """Builders for records, metadata and whole artifacts, with sensible defaults."""

    @staticmethod
    def record(
        op: str = "add",
        dtype: str | None = "float32",
        status: Status = Status.PASSED,
        *,
        variant: str = "forward",
        sample: int | None = 0,
        suite: str = "opinfo",
        level: int = 1,
        source: ExpectedSource | None = ExpectedSource.CPU_REFERENCE,
        case_id: str | None = None,
        **fields: Any,
    ) -> CaseRecord:
        cid = case_id or make_case_id(suite, op, variant, dtype, sample)
        return CaseRecord(
            case_id=cid,
            node_id=node_id_for_case(cid),
            op=op,
            variant=variant,
            dtype=dtype,
            sample=sample,
            level=level,
            status=status,
            expected_source=source,
            suite=suite,
            **fields,
        )

    @staticmethod
    def metadata(**fields: Any) -> RunMetadata:
        base = RunMetadata(
            run_key="simdev_x86-64-2cpu",
            device="simdev",
            hardware_key="x86-64-2cpu",
            backend="torchcts_simdev",
            os="Linux-6.1-x86_64",
            python="3.11.7",
            torch_version="2.13.0",
            torchcts_version="0.1.0",
            manifest_digest="sha256:abc123",
            command="torchcts-run --manifest manifests/simdev.py -n 2",
            started_at="2026-11-30T01:00:00+00:00",
            ended_at="2026-11-30T01:02:03+00:00",
            completed_normally=True,
            level=2,
            probes={"passed": 10, "failed": 1, "total": 11},
        )
        return replace(base, **fields)

    @classmethod
    def artifact(
        cls, records: list[CaseRecord] | None = None, **meta: Any
    ) -> RunArtifact:
        recs = cls.mixed() if records is None else records
        return RunArtifact.from_records(cls.metadata(**meta), recs)

    @classmethod
    def mixed(cls) -> list[CaseRecord]:
        """One or more records of every status, source, reason and crash kind."""
        r = cls.record
        return [
            r("add", "float32"),
            r("add", "float16", source=ExpectedSource.REVIEWED_REFERENCE),
            r("add", "int64", variant="inplace"),
            r(
                "mul",
                "float32",
                Status.FAILED,
                mismatch="values differ at 3 of 12 elements (max abs diff 0.5)",
            ),
            r(
                "mul",
                "float32",
                Status.FAILED,
                sample=1,
                mismatch="values differ at 7 of 40 elements (max abs diff 1.25)",
            ),
            r("mul", "float64", Status.FAILED, mismatch="dtype float32 != float64"),
            r(
                "sin",
                "float32",
                Status.ERROR,
                exception_type="RuntimeError",
                exception_message="bad pointer 0x7ffd1234 at index 17",
            ),
            r(
                "nn.functional.conv2d",
                "float32",
                Status.UNSUPPORTED,
                exception_type="NotImplementedError",
                exception_message="aten::convolution is not implemented for simdev",
            ),
            r(
                "sum",
                "float32",
                Status.CRASHED,
                source=None,
                crash=CrashInfo(
                    CrashKind.SIGNAL,
                    signal="SIGSEGV",
                    detail="segfault",
                    evidence="simdev_x86-64-2cpu_crashes/sum.json",
                ),
            ),
            r(
                "cumsum",
                "float32",
                Status.CRASHED,
                crash=CrashInfo(CrashKind.TIMEOUT, detail="over 30 s"),
            ),
            r(
                "views",
                None,
                Status.PASSED,
                suite="views",
                variant="view_of",
                sample=None,
                source=ExpectedSource.PROPERTY,
                level=3,
            ),
            r("empty", "float32", Status.PASSED, source=ExpectedSource.LEGAL_OUTPUT),
            r(
                "rng",
                None,
                Status.SKIPPED,
                suite="rng",
                variant="stream",
                sample=None,
                detail="needs two devices",
            ),
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
                variant="backward",
                not_run_reason=NotRunReason.CAPABILITY_NOT_DECLARED,
                level=5,
            ),
        ]

    @classmethod
    def write(cls, results: Path, artifact: RunArtifact) -> Path:
        """Write `artifact` as a completed run into `results`; return the history file."""
        return write_history(results, artifact.metadata.run_key, artifact)

    @staticmethod
    def write_ascii(results: Path, artifact: RunArtifact) -> Path:
        """Write `artifact` as ASCII-escaped JSON, as a journal-style writer would.

        Lone surrogates (possible in exception text) survive only this way.
        """
        data = json.loads(encode_artifact(artifact, encoding="plain"))
        path = results / f"{artifact.metadata.run_key}_latest.json"
        path.write_text(json.dumps(data, ensure_ascii=True), encoding="ascii")
        return path


def render_scorecard(
    tmp_path: Path, syn: Any, artifact: RunArtifact | None = None
) -> str:
    """The Markdown scorecard of `artifact` (the default synthetic one), via the files."""
    from torchcts_report import load_input, render_markdown

    syn.write(tmp_path, artifact or syn.artifact())
    return render_markdown(load_input(tmp_path))


def section(text: str, title: str) -> str:
    """One ``## title`` section of a rendered scorecard, up to the next."""
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


__all__ = ["Synthetic", "render_scorecard", "section"]
