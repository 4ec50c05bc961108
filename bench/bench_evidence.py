"""Evidence costs on a large run: archive build (scrub + zip), verify, backend-pack."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from run import BenchRow
from torchcts_evidence import (
    HostIdentity,
    PackOptions,
    build_archive,
    pack_run,
    verify_archive,
)
from torchcts_schema import (
    CaseRecord,
    ExpectedSource,
    JournalWriter,
    RunArtifact,
    RunMetadata,
    Status,
    journal_path,
    make_case_id,
    manifest_digest,
    node_id_for_case,
    write_history,
)

N = 20_000
KEY = "simdev_bench"
STATUSES = [Status.PASSED] * 8 + [Status.FAILED, Status.ERROR, Status.CRASHED]


def _project(root: Path) -> Path:
    manifest = root / "manifests" / "simdev.py"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('DEVICE = "simdev"\n')
    results = root / "results"
    meta = RunMetadata(
        run_key=KEY, device="simdev", hardware_key="bench", backend="simdev",
        os="Linux", python="3.11", torch_version="2.13.0", torchcts_version="0.1.0",
        manifest_digest=manifest_digest(manifest),
        command="torchcts-run --manifest manifests/simdev.py",
        started_at="2026-11-30T00:00:00Z", ended_at="2026-11-30T01:00:00Z",
        completed_normally=True,
    )  # fmt: skip
    records = []
    for i in range(N):
        op = f"op{i % 700}"
        case_id = make_case_id("opinfo", op, "forward", "float32", i // 700)
        status = STATUSES[i % len(STATUSES)]
        message = None
        if status is not Status.PASSED:
            message = f"failed in {root}/x/site-packages/torch/_ops.py line {i}"
        records.append(
            CaseRecord(
                case_id=case_id, node_id=node_id_for_case(case_id), op=op,
                variant="forward", dtype="float32", sample=i // 700, level=1,
                status=status, expected_source=ExpectedSource.CPU_REFERENCE,
                exception_message=message,
            )
        )  # fmt: skip
    with JournalWriter(journal_path(results, KEY)) as journal:
        journal.run_start(meta)
        for record in records:
            journal.case(record)
        journal.run_end(meta)
    write_history(results, KEY, RunArtifact.from_records(meta, records))
    return results


def rows() -> list[BenchRow]:
    """Seconds for each evidence step on an N-case run."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        results = _project(root)
        start = time.perf_counter()
        built = build_archive(results, out_dir=root / "out", project_root=root)
        out.append(
            BenchRow("evidence", f"archive {N} cases", time.perf_counter() - start, "s")
        )
        size = built.path.stat().st_size / 2**20
        out.append(BenchRow("evidence", "archive size", size, "MiB"))
        start = time.perf_counter()
        assert verify_archive(built.path).ok
        out.append(
            BenchRow("evidence", f"verify {N} cases", time.perf_counter() - start, "s")
        )
        start = time.perf_counter()
        pack_run(results, root / "store", PackOptions(), HostIdentity())
        out.append(
            BenchRow("evidence", "backend-pack", time.perf_counter() - start, "s")
        )
    return out
