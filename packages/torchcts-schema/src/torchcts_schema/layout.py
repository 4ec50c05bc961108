"""The results directory's layout: every file and folder name a run leaves, in one place.

Writers and readers ask a `ResultsLayout` for a path instead of spelling a suffix, so a
name can change (or be audited) here alone. Node ids keep their own home in
`identity` (`NODE_PREFIX`, `node_id_for_case`); the layout only names files. The
lock is per directory, not per key, and keeps its one definition in `run_lock`
(`LOCK_NAME`); `ResultsLayout.lock` points at it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torchcts_schema.errors import ArtifactError
from torchcts_schema.run_lock import LOCK_NAME

LATEST_SUFFIX = "_latest.json"
HISTORY_SUFFIX = "_history"
JOURNAL_SUFFIX = "_journal.jsonl"
RUNLOG_SUFFIX = "_runlog.txt"
PREV_SUFFIX = ".prev"  # the file a fresh run set aside
CRASHES_SUFFIX = "_crashes"
REPROS_SUFFIX = "_repros"
REPRO_SCRIPT_SUFFIX = ".py"
REPRO_INPUTS_SUFFIX = ".pt"  # a repro's saved CPU sample (torchcts_cases.replay)
SCRATCH_SUFFIX = "_scratch"  # hidden: ``.<key>_scratch``
PROBE_FAILURES_INFIX = "_harness_probe_failures_"
ORACLE_FAILURES_INFIX = "_opinfo_oracle_failures_"
PER_PROCESS_SUFFIX = ".jsonl"
ADAPTIVE_SUFFIX = "_adaptive_isolation.json"
PROBE_CACHE_SUFFIX = "_probes.json"  # hidden: ``.<key>_probes.json``
MARKDOWN_SUFFIX = ".md"
HTML_SUFFIX = ".html"
JUNIT_SUFFIX = ".junit.xml"
REPORT_SUFFIXES = (MARKDOWN_SUFFIX, HTML_SUFFIX, JUNIT_SUFFIX)
COVERAGE_DIR = "coverage"
SELECTIONS_DIR = "selections"  # subset runs: <results>/selections/<name>/
RECHECK_SELECTION = "recheck-exclusions"  # selections/<this>[_<filters>]/
RECHECK_REPORT_SUFFIX = "_recheck.md"
RECHECK_PATCH_SUFFIX = "_recheck.patch"
DISCOVERY_DIR = "discovery"  # dtype discovery probes: <results>/discovery/
DISCOVERY_JSON = "discovery.json"  # beside a probe's results, read by the scorecard
DISCOVERY_MARKDOWN = "discovery.md"
DISCOVERY_FORMAT = "torchcts-discovery"  # discovery.json's format tag and version
DISCOVERY_VERSION = 1
HISTORY_GLOB = "*.json"
CRASH_GLOB = "*.json"


@dataclass(frozen=True)
class ResultsLayout:
    """The paths of one run key's files in one results directory."""

    results_dir: Path
    run_key: str

    def __post_init__(self) -> None:
        # a key with a separator would name a file outside results_dir
        if not self.run_key or "/" in self.run_key or "\\" in self.run_key:
            raise ArtifactError(
                self.results_dir, f"run key {self.run_key!r} is not a plain file name"
            )
        object.__setattr__(self, "results_dir", Path(self.results_dir))

    def _named(self, suffix: str) -> Path:
        return self.results_dir / f"{self.run_key}{suffix}"

    @property
    def latest(self) -> Path:
        """``<key>_latest.json``: the recovery snapshot, then the reference."""
        return self._named(LATEST_SUFFIX)

    @property
    def history_dir(self) -> Path:
        """``<key>_history/``: one canonical artifact per completed run."""
        return self._named(HISTORY_SUFFIX)

    @property
    def journal(self) -> Path:
        """``<key>_journal.jsonl``: one line per finished case."""
        return self._named(JOURNAL_SUFFIX)

    @property
    def journal_prev(self) -> Path:
        """``<key>_journal.jsonl.prev``: the journal a fresh run set aside."""
        return self._named(JOURNAL_SUFFIX + PREV_SUFFIX)

    def report(self, suffix: str) -> Path:
        """``<key>.md``, ``<key>.html`` or ``<key>.junit.xml``."""
        if suffix not in REPORT_SUFFIXES:
            raise ValueError(
                f"report suffix {suffix!r} is not one of {REPORT_SUFFIXES}"
            )
        return self._named(suffix)

    @property
    def recheck_report(self) -> Path:
        """``<key>_recheck.md``: a recheck's verdict on each manifest exclusion."""
        return self._named(RECHECK_REPORT_SUFFIX)

    @property
    def recheck_patch(self) -> Path:
        """``<key>_recheck.patch``: the unified diff removing the stale exclusions."""
        return self._named(RECHECK_PATCH_SUFFIX)

    @property
    def runlog(self) -> Path:
        """``<key>_runlog.txt``: the latest test starts."""
        return self._named(RUNLOG_SUFFIX)

    @property
    def runlog_prev(self) -> Path:
        """``<key>_runlog.txt.prev``: the runlog a fresh run set aside."""
        return self._named(RUNLOG_SUFFIX + PREV_SUFFIX)

    @property
    def crashes_dir(self) -> Path:
        """``<key>_crashes/``: one record per crash, timeout or hang."""
        return self._named(CRASHES_SUFFIX)

    @property
    def repros_dir(self) -> Path:
        """``<key>_repros/``: one standalone repro script per case that did not pass."""
        return self._named(REPROS_SUFFIX)

    def repro_script(self, file_stem: str) -> Path:
        """``<key>_repros/<file_stem>.py``; `file_stem` is a file-name form of the
        case id (``torchcts_isolate.safe_case_name``), never a path."""
        return self._repro_file(file_stem, REPRO_SCRIPT_SUFFIX)

    def repro_inputs(self, file_stem: str) -> Path:
        """``<key>_repros/<file_stem>.pt``: the saved sample a rerun of that case
        replays instead of importing OpInfo; local only, never archived (its
        script is: `torchcts_evidence.repros`)."""
        return self._repro_file(file_stem, REPRO_INPUTS_SUFFIX)

    def _repro_file(self, file_stem: str, suffix: str) -> Path:
        if (
            not file_stem
            or "/" in file_stem
            or "\\" in file_stem
            or file_stem[0] == "."
        ):
            raise ValueError(f"repro file stem {file_stem!r} is not a plain name")
        return self.repros_dir / f"{file_stem}{suffix}"

    @property
    def scratch(self) -> Path:
        """``.<key>_scratch/``: hidden working space of isolated children."""
        return self.results_dir / f".{self.run_key}{SCRATCH_SUFFIX}"

    def probe_failures(self, pid: int) -> Path:
        """``<key>_harness_probe_failures_<pid>.jsonl`` of one process."""
        return self._named(f"{PROBE_FAILURES_INFIX}{pid}{PER_PROCESS_SUFFIX}")

    def oracle_failures(self, pid: int) -> Path:
        """``<key>_opinfo_oracle_failures_<pid>.jsonl`` of one process."""
        return self._named(f"{ORACLE_FAILURES_INFIX}{pid}{PER_PROCESS_SUFFIX}")

    @property
    def adaptive_decisions(self) -> Path:
        """``<key>_adaptive_isolation.json``: isolation chosen from prior evidence."""
        return self._named(ADAPTIVE_SUFFIX)

    @property
    def probe_cache(self) -> Path:
        """``.<key>_probes.json``: the last full probe table, reused by reruns."""
        return self.results_dir / f".{self.run_key}{PROBE_CACHE_SUFFIX}"

    @property
    def lock(self) -> Path:
        """``.torchcts.lock``: one per directory, held by the one run writing there."""
        return self.results_dir / LOCK_NAME

    @property
    def coverage_dir(self) -> Path:
        """``coverage/``: shared by every run key of the directory."""
        return self.results_dir / COVERAGE_DIR

    def glob(self, kind: str) -> list[Path]:
        """The existing files of one kind, sorted: ``probe_failures``,
        ``oracle_failures``, ``history`` or ``crashes`` (see `GLOB_KINDS`)."""
        directory, pattern = self._globs()[kind]
        return sorted(directory.glob(pattern)) if directory.is_dir() else []

    def _globs(self) -> dict[str, tuple[Path, str]]:
        key = _glob_escape(self.run_key)
        return {
            "probe_failures": (
                self.results_dir,
                f"{key}{PROBE_FAILURES_INFIX}*{PER_PROCESS_SUFFIX}",
            ),
            "oracle_failures": (
                self.results_dir,
                f"{key}{ORACLE_FAILURES_INFIX}*{PER_PROCESS_SUFFIX}",
            ),
            "history": (self.history_dir, HISTORY_GLOB),
            "crashes": (self.crashes_dir, CRASH_GLOB),
        }


GLOB_KINDS = ("probe_failures", "oracle_failures", "history", "crashes")
# the same kinds for every run key, relative to the results directory
_EVERY_KEY = {
    "probe_failures": f"*{PROBE_FAILURES_INFIX}*{PER_PROCESS_SUFFIX}",
    "oracle_failures": f"*{ORACLE_FAILURES_INFIX}*{PER_PROCESS_SUFFIX}",
    "history": f"*{HISTORY_SUFFIX}/{HISTORY_GLOB}",
    "crashes": f"*{CRASHES_SUFFIX}/{CRASH_GLOB}",
}


def every_key_pattern(kind: str) -> str:
    """The glob pattern of one kind of file over every run key, relative to the
    results directory: ``*_crashes/*.json`` for ``crashes``."""
    return _EVERY_KEY[kind]


def glob_every_key(results_dir: Path, kind: str) -> list[Path]:
    """The existing files of one kind of every run key in `results_dir`, sorted."""
    return sorted(Path(results_dir).glob(every_key_pattern(kind)))


def run_key_of(name: str) -> str | None:
    """The run key a ``<key>_latest.json`` or ``<key>_journal.jsonl`` name belongs to."""
    if name.startswith("."):
        return None  # temporary files of atomic writes, scratch space
    for suffix in (LATEST_SUFFIX, JOURNAL_SUFFIX):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def _glob_escape(text: str) -> str:
    # glob.escape would do, but it treats a drive prefix specially on Windows
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)
