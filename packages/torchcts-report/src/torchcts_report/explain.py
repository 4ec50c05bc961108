"""``torchcts-report explain CASE``: everything the results say about one case.

Reads records and files only (never torch): the facts the worker captured when it
judged the case (inputs, expected against got, the first mismatching elements, the
aten overloads its CPU run reaches), the tolerance and where it came from, the
expected-result source, the case's history over every run in the results directory
(its own runs and ``selections/<name>/`` subset runs), and its repro script.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from torchcts_schema import (
    EXPECTED_SOURCE_MEANINGS,
    SELECTIONS_DIR,
    TOLERANCE_SOURCE_MEANINGS,
    ArtifactError,
    CaseRecord,
    ResultsLayout,
    case_id_for_node,
    load_result,
    recorded_prefix,
    run_keys,
    tool_command,
)


@dataclass
class Explanation:
    """The latest record of a case and where it came from, with its history."""

    case_id: str
    record: CaseRecord
    results_dir: Path  # the directory holding the record's run, as given
    run_key: str
    started_at: str
    history: list[dict[str, Any]] = field(default_factory=list)
    tool_prefix: str = ""  # "bin/" for a run started in a checkout
    other_runs: tuple[str, ...] = ()  # other run keys that recorded the case

    @property
    def repro_path(self) -> Path | None:
        """The repro script, as a path usable from where the command ran."""
        return (
            None if self.record.repro is None else self.results_dir / self.record.repro
        )


def explain_case(
    results: Path, case: str, *, run_key: str | None = None
) -> Explanation:
    """The explanation of `case` (a case id or a node id) from `results`: the
    latest record of it, of `run_key`'s runs when given (a CPU validation run and a
    device run share case ids; the other keys are named so neither is taken
    silently for the other)."""
    case_id = case_id_for_node(case) or case
    found: list[Explanation] = []
    for folder in _run_folders(results):
        for key in sorted(run_keys(folder)):
            if run_key is not None and key != run_key:
                continue
            artifact = load_result(folder, run_key=key)
            record = next((r for r in artifact.records if r.case_id == case_id), None)
            if record is None:
                continue
            found.append(
                Explanation(
                    case_id,
                    record,
                    folder,
                    key,
                    artifact.metadata.started_at,
                    tool_prefix=recorded_prefix(artifact.metadata.options),
                )
            )
    if not found:
        of = "" if run_key is None else f" of run key {run_key!r}"
        raise ArtifactError(
            results, f"no run{of} here has a record of case {case_id!r}"
        )
    latest = max(found, key=lambda e: e.started_at)
    latest.other_runs = tuple(sorted({e.run_key for e in found} - {latest.run_key}))
    _check_repro(latest)
    for seen in found:
        latest.history += _history(seen.results_dir, seen.run_key, case_id, results)
    latest.history.sort(key=lambda row: (row["run"], row["folder"]))
    return latest


def _run_folders(results: Path) -> list[Path]:
    if not results.is_dir():
        raise ArtifactError(results, "is not a results directory")
    subsets = results / SELECTIONS_DIR
    nested = (
        sorted(p for p in subsets.iterdir() if p.is_dir()) if subsets.is_dir() else []
    )
    return [results, *nested]


def _check_repro(explanation: Explanation) -> None:
    """A crafted record must not point explain outside its results directory."""
    repro = explanation.record.repro
    if repro is None:
        return
    pure = PurePosixPath(repro)
    if pure.is_absolute() or ".." in pure.parts or "\\" in repro or ":" in repro:
        raise ArtifactError(
            explanation.results_dir,
            f"case {explanation.case_id!r} names a repro outside its results "
            f"directory: {repro!r:.120}",
        )


def _history(
    folder: Path, key: str, case_id: str, results: Path
) -> list[dict[str, Any]]:
    rows = []
    for path in ResultsLayout(folder, key).glob("history"):
        artifact = load_result(path)
        record = next((r for r in artifact.records if r.case_id == case_id), None)
        if record is not None:
            rows.append(
                {
                    "run": path.stem,
                    "folder": folder.relative_to(results).as_posix(),
                    "run_key": key,
                    "status": record.status.value,
                    "mismatch": record.mismatch,
                }
            )
    return rows


def explanation_json(explanation: Explanation) -> dict[str, Any]:
    """The JSON form `--json` prints: the record as stored, plus where it is."""
    repro = explanation.repro_path
    return {
        "case_id": explanation.case_id,
        "run_key": explanation.run_key,
        "other_run_keys": list(explanation.other_runs),
        "results_dir": str(explanation.results_dir),
        "record": explanation.record.to_dict(),
        "repro_path": None if repro is None else str(repro),
        "repro_exists": repro is not None and repro.is_file(),
        "history": explanation.history,
    }


def render_explanation(explanation: Explanation) -> str:
    """The human form: one fact per line, sections in the order a reader asks."""
    r = explanation.record
    lines = [
        f"case {r.case_id}  ({r.node_id})",
        f"run: {explanation.run_key} in {explanation.results_dir} "
        f"(started {explanation.started_at})",
        *(
            [
                "also recorded by run key(s) "
                + ", ".join(explanation.other_runs)
                + ": choose with --run-key KEY"
            ]
            if explanation.other_runs
            else []
        ),
        f"status: {r.status.value}"
        + (f" (next fix: {r.next_fix.value})" if r.next_fix else ""),
    ]
    if r.expected_source is not None:
        meaning = EXPECTED_SOURCE_MEANINGS[r.expected_source]
        lines.append(f"expected-result source: {r.expected_source.value} ({meaning})")
    lines.append(_tolerance_line(r))
    if r.cpu_fallback:
        lines.append(
            "cpu fallback: " + ", ".join(r.cpu_fallback) + " (ran on the CPU through "
            "the device's fallback, not a kernel of the backend's own)"
        )
    facts = r.facts or {}
    for title, key in (
        ("inputs", "inputs"),
        ("expected", "expected"),
        ("got", "observed"),
    ):
        entries = facts.get(key)
        if entries:
            lines.append(f"{title}:")
            lines += [f"  {_entry(e)}" for e in entries if isinstance(e, dict)]
    placed = facts.get("nonfinite")
    if isinstance(placed, list) and placed:
        # a nonfinite case: the NaN and Inf written into the OpInfo sample
        lines.append("non-finite inputs: " + ", ".join(map(str, placed)))
    if r.mismatch:
        lines.append(f"mismatch: {r.mismatch}")
    lines += _mismatch_lines(facts.get("mismatches"))
    if r.exception_type:
        lines.append(f"raised: {r.exception_type}: {r.exception_message or ''}")
    if r.crash is not None:
        how = r.crash.signal or r.crash.exit_code
        lines.append(
            f"crash: {r.crash.kind.value} {how or ''} {r.crash.detail}".rstrip()
        )
        if r.crash.evidence:
            lines.append(f"crash record: {explanation.results_dir / r.crash.evidence}")
    if r.detail:
        lines.append(f"detail: {r.detail}")
    aten = facts.get("aten")
    lines.append(
        "aten overloads reached (CPU run): " + ", ".join(map(str, aten))
        if aten
        else "aten overloads reached: not known for this record"
    )
    lines.append(f"history ({len(explanation.history)} completed run(s)):")
    for row in explanation.history:
        lines.append(f"  {row['run']}  {row['folder']}  {row['status']}")
    repro = explanation.repro_path
    if repro is None:
        lines.append("repro: none (only cases that ran and did not pass get one)")
    elif repro.is_file():
        python = tool_command("python", explanation.tool_prefix)
        lines.append(f"repro: {python} {shlex.quote(str(repro))}")
    else:
        lines.append(f"repro: {repro} (named by the record, but missing)")
    return "\n".join(lines) + "\n"


def _tolerance_line(r: CaseRecord) -> str:
    t = r.tolerance
    if t is None:
        return "tolerance: none used (no values were compared)"
    line = (
        f"tolerance: atol={t.atol:g} rtol={t.rtol:g} for {t.dtype or 'its values'}, "
        f"from {t.source.value} ({TOLERANCE_SOURCE_MEANINGS[t.source]})"
    )
    if t.override_needed:
        line += "; passes only under this override (fails under the default)"
    return line


def _entry(e: dict[str, Any]) -> str:
    path = e.get("path", "?")
    if "raised" in e:
        return f"{path}: raised {e['raised']}: {e.get('message', '')}"
    if "shape" in e:
        text = f"{path}: {e.get('dtype')} shape {e.get('shape')}"
        if "stride" in e:
            text += f" stride {e['stride']}"
        if "values" in e:
            text += f" first values {e['values']}"
        return text
    return f"{path}: {e.get('value', '')}"


def _mismatch_lines(found: Any) -> list[str]:
    if not isinstance(found, dict):
        return []
    lines = [
        f"first mismatching elements of {found.get('path')}: {found.get('count')} of "
        f"{found.get('numel')} differ beyond atol={found.get('atol')} "
        f"rtol={found.get('rtol')}"
    ]
    for row in found.get("first") or []:
        if isinstance(row, dict):
            diff = f" (|diff| {row['abs_diff']})" if "abs_diff" in row else ""
            lines.append(
                f"  at {row.get('index')}: expected {row.get('expected')}, "
                f"got {row.get('got')}{diff}"
            )
    return lines
