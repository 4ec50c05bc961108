"""``export-skips``: one run's non-passed cases in a shape a backend team maintains.

The grouping is `skip_entries`' and the Python shapes are `upstream_skips`'; this
module names the formats and picks one, so the command line and any caller share one
list. The text depends only on the artifact (sorted, no clock, no paths), so the same
run always exports byte-identical text a CI job can diff against its committed list.
"""

from __future__ import annotations

from collections.abc import Callable

from torchcts_schema import RunArtifact, RunMetadata

from torchcts_report.skip_entries import SkipEntry, collect_entries, entries_json
from torchcts_report.upstream_skips import opinfo_text, xpu_ops_text


def _json(entries: list[SkipEntry], metadata: RunMetadata) -> str:
    return entries_json(entries)


FORMATS: dict[str, Callable[[list[SkipEntry], RunMetadata], str]] = {
    "opinfo": opinfo_text,
    "xpu-ops": xpu_ops_text,
    "json": _json,
}


def export_skips(
    artifact: RunArtifact, form: str, *, include_not_run: bool = False
) -> str:
    """The run's skip list in format `form` (a key of `FORMATS`)."""
    entries = collect_entries(artifact, include_not_run=include_not_run)
    return FORMATS[form](entries, artifact.metadata)


__all__ = ["FORMATS", "export_skips"]
