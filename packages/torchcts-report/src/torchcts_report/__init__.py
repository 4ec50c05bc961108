"""TorchCTS reports from result artifacts: markdown scorecard, HTML, JUnit XML, failure
clusters and next-fix triage, run diff, shard merge and upstream skip-list export.

Imports neither torch nor pytest and reads artifacts only through the schema's loader,
so a reviewer can render a submission on any machine.
"""

from torchcts_report.clusters import (
    Cluster,
    build_clusters,
    error_signature,
    normalise_message,
    op_family,
    rerun_command,
)
from torchcts_report.diff import (
    GuardResult,
    RunDiff,
    check_guards,
    diff_artifacts,
    render_diff,
)
from torchcts_report.export_skips import FORMATS as SKIP_FORMATS
from torchcts_report.export_skips import export_skips
from torchcts_report.html_report import render_html
from torchcts_report.inputs import ReportInput, load_input
from torchcts_report.junit import render_junit
from torchcts_report.merge import MergeError, Shard, merge_artifacts, merge_paths
from torchcts_report.render import render_path, render_reports
from torchcts_report.scorecard import render_markdown
from torchcts_report.skip_entries import SkipEntry, collect_entries
from torchcts_report.triage import Action, Triage, build_triage

__version__ = "0.1.0"

__all__ = [
    "SKIP_FORMATS",
    "Action",
    "Cluster",
    "GuardResult",
    "MergeError",
    "ReportInput",
    "RunDiff",
    "Shard",
    "SkipEntry",
    "Triage",
    "build_clusters",
    "build_triage",
    "check_guards",
    "collect_entries",
    "diff_artifacts",
    "error_signature",
    "export_skips",
    "load_input",
    "merge_artifacts",
    "merge_paths",
    "normalise_message",
    "op_family",
    "render_diff",
    "render_html",
    "render_junit",
    "render_markdown",
    "render_path",
    "render_reports",
    "rerun_command",
]
