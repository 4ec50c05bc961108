"""Build the `crashed` record of a case that took its process down, with its evidence.

Used by the controller for xdist worker crashes, for hard timeouts without xdist, for
in-process timeouts, and for `--resume` after a process died in a case. Each crash
leaves one file in ``<key>_crashes/`` (runlog tail, signal or exit code, stderr or
faulthandler tail, environment, a repro command that reruns only that case).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from torchcts_isolate import safe_case_name, write_crash_record
from torchcts_schema import (
    CaseRecord,
    CaseSpec,
    CrashInfo,
    CrashRecord,
    NextFix,
    ResultsLayout,
    Status,
    node_id_for_case,
    record_for,
    tool_command,
    tool_prefix_at,
)

from torchcts_runner import __version__
from torchcts_runner.case_evidence import write_repro
from torchcts_runner.casesource import CaseSource, surfaces_or_none, with_surfaces
from torchcts_runner.crash_evidence import environment_summary
from torchcts_runner.metadata import torch_version, usable_path
from torchcts_runner.runlog import runlog_path, tail_lines
from torchcts_runner.settings import RunSettings

TAIL_CHARS = 8000
START_MEMORY = 256  # start lines kept per process, newest last


class CrashRecorder:
    """Turns crash evidence into records and ``<key>_crashes/`` files."""

    def __init__(
        self,
        settings: RunSettings,
        run_key: str,
        hardware_key: str,
        source: Callable[[], CaseSource | None],
    ) -> None:
        self.settings = settings
        self.run_key = run_key
        self.hardware_key = hardware_key
        self._source = source
        self.specs: dict[str, CaseSpec] = {}
        self._starts: dict[str, str] = {}  # node id -> its runlog start line
        self._repros: ThreadPoolExecutor | None = None

    @property
    def source(self) -> CaseSource | None:
        """The case source, loaded on first need (it imports torch)."""
        return self._source()

    def _spec(self, case_id: str) -> CaseSpec | None:
        spec = self.specs.get(case_id)
        if spec is None and self.source is not None:
            try:
                spec = self.source.get_case(case_id)
            except Exception:  # an unknown id still gets an honest record below
                spec = None
        return spec

    def record(self, case_id: str, **fields: Any) -> CaseRecord:
        """A record of `case_id` from its spec (or from the id alone) and `fields`,
        naming the overloads the case reaches as its own records do (the case
        source's coverage trace: read once, without torch)."""
        spec = self._spec(case_id)
        source = self.source
        if spec is not None and source is not None:
            surfaces = surfaces_or_none(source.surfaces, spec)
            fields["extra"] = with_surfaces(fields.get("extra") or {}, surfaces)
        return record_for(spec, case_id, **fields)

    def repro_command(self, case_id: str) -> list[str]:
        """torchcts-run arguments that rerun only this case, in process."""
        command = [
            tool_command("torchcts-run", tool_prefix_at()),
            "--manifest",
            usable_path(str(self.settings.manifest.path)),
        ]
        if self.settings.validation:
            command.append("--validation")
        return [*command, "-n", "0", node_id_for_case(case_id)]

    def crashed(
        self,
        case_id: str,
        crash: CrashInfo,
        worker: str,
        fault: str,
        *,
        defer_repro: bool = False,
    ) -> CaseRecord:
        """A crashed record with its crash file written."""
        record = self.record(
            case_id,
            status=Status.CRASHED,
            crash=crash,
            detail=crash.detail,
            next_fix=NextFix.CRASH_EVIDENCE,
            worker=worker,
        )
        return self.with_evidence(record, fault, defer_repro=defer_repro)

    def with_evidence(
        self, record: CaseRecord, fault: str = "", *, defer_repro: bool = False
    ) -> CaseRecord:
        """Write the crash file for `record` from a process's faulthandler text."""
        tail = fault[-TAIL_CHARS:] if fault else ""
        return self.file_crash(
            record, stderr_tail=tail, traceback=tail or None, defer_repro=defer_repro
        )

    def note_start(self, node_id: str, line: str) -> None:
        """Remember a case's start line: a long hang lets other workers push it out
        of the 32-line runlog before its crash record is written."""
        self._starts[node_id] = line
        while len(self._starts) > START_MEMORY:
            del self._starts[next(iter(self._starts))]

    def _runlog_tail(self, node_id: str) -> list[str]:
        """The latest runlog starts, with the crashed case's own start in them."""
        tail = tail_lines(runlog_path(self.settings.results_dir, self.run_key))
        if any(line.endswith(" " + node_id) for line in tail):
            return tail
        own = self._starts.get(node_id)
        return (
            [f"{own} (this case's start, since pushed out of the ring)", *tail]
            if own
            else tail
        )

    def file_crash(
        self,
        record: CaseRecord,
        *,
        stderr_tail: str,
        traceback: str | None,
        stdout_tail: str | None = None,
        defer_repro: bool = False,
        build_repro: Callable[[CaseSpec], str | None] | None = None,
    ) -> CaseRecord:
        """The one builder of ``<key>_crashes/<case>.json``; points `record` at it.

        Building the repro script may import the OpInfo database (seconds). A
        controller that is still scheduling cases defers it to a background thread
        that rewrites the crash file with the script; `wait_for_repros` joins it
        before the run's artifacts are final. `build_repro` builds it in a process
        that has the case source loaded already (an isolation child); when it gives
        None the script is built here as usual.
        """
        if record.crash is None:
            return record
        spec = self._spec(record.case_id)
        s = self.settings
        script = None
        if spec is not None and not defer_repro:
            script = build_repro(spec) if build_repro is not None else None
            if script is None and self.source is not None:
                script = self.source.repro_source(spec, s.manifest, s.device)
        crash_record = CrashRecord(
            case_id=record.case_id,
            node_id=record.node_id,
            run_key=self.run_key,
            crash=record.crash,
            runlog_tail=self._runlog_tail(record.node_id),
            stderr_tail=stderr_tail,
            stdout_tail=stdout_tail,
            traceback=traceback,
            environment=environment_summary(
                s.manifest.backend_name,
                self.hardware_key,
                s.device,
                torch_version(),
                __version__,
            ),
            repro_command=self.repro_command(record.case_id),
            repro_script=script,
            isolation=record.isolation,
        )
        try:
            path = write_crash_record(s.results_dir, self.run_key, crash_record)
            if defer_repro and spec is not None:
                self._defer(crash_record, spec)
        except Exception as exc:  # the record stays honest without its file
            crash = replace(
                record.crash,
                detail=f"{record.crash.detail} (crash file not written: {exc})",
            )
            return replace(record, crash=crash)
        relative = Path(path).resolve().relative_to(s.results_dir.resolve()).as_posix()
        record = replace(record, crash=replace(record.crash, evidence=relative))
        if spec is not None and (script is not None or defer_repro):
            # a deferred script lands at the same path once it is built
            record = replace(record, repro=self._write_repro(record.case_id, script))
        return record

    def _write_repro(self, case_id: str, script: str | None) -> str | None:
        """The script in ``<key>_repros/`` beside the crash file (explain and the
        next-fix rows point at it); its relative path."""
        s = self.settings
        try:
            if script is None:  # deferred: only the path, the thread writes it
                layout = ResultsLayout(s.results_dir, self.run_key)
                path = layout.repro_script(safe_case_name(case_id))
                return path.relative_to(layout.results_dir).as_posix()
            return write_repro(s.results_dir, self.run_key, case_id, script)
        except Exception:  # the crash file above holds the script too
            return None

    def _defer(self, crash_record: CrashRecord, spec: CaseSpec) -> None:
        if self._repros is None:
            # one thread, so the crash files of one case are rewritten in order
            self._repros = ThreadPoolExecutor(1, thread_name_prefix="torchcts-repro")
        self._repros.submit(self._complete_repro, crash_record, spec)

    def _complete_repro(self, crash_record: CrashRecord, spec: CaseSpec) -> None:
        s = self.settings
        source = self.source
        script = source.repro_source(spec, s.manifest, s.device) if source else None
        if script is not None:
            write_crash_record(
                s.results_dir, self.run_key, replace(crash_record, repro_script=script)
            )
            self._write_repro(crash_record.case_id, script)

    def wait_for_repros(self) -> None:
        """Finish the deferred repro scripts (before the run's artifacts are final)."""
        if self._repros is not None:
            self._repros.shutdown(wait=True)
            self._repros = None


__all__ = ["CrashRecorder"]
