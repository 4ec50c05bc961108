"""The end of a recheck of the exclusions: ``<key>_recheck.md`` and ``.patch``.

Written by the controller into the recheck's own results folder once the run has
finished, from the plan (which entries decline each case) and the run's records.
The report gives every entry its verdict with evidence: case counts, statuses, the
first message and the case ids; the patch removes exactly the entries proposed
(`recheck_patch`). Neither file changes the manifest: a person reads and applies.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchcts_schema import (
    ArtifactError,
    CaseRecord,
    Decline,
    HostIdentity,
    Manifest,
    ResultsLayout,
    for_terminal,
    scrub_text,
    tool_command,
    tool_prefix_at,
    write_atomic,
)

from torchcts_runner.metadata import shareable_path
from torchcts_runner.recheck_patch import RecheckPatch, build_patch
from torchcts_runner.recheck_verdicts import EntryVerdict, judge_entries, status_of
from torchcts_runner.selection import CasePlan
from torchcts_runner.settings import RunSettings

LISTED = 8  # case ids shown per entry; the run's artifact has every one
MESSAGE = 240  # characters of a first message
SECTIONS = (
    ("remove", "Remove from the manifest", "every case it would run passed"),
    ("narrow", "Narrow: declare the dtype for the ops that passed", ""),
    ("confirm", "Passes in this selection; confirm with a whole recheck", ""),
    ("keep", "Still needed", "some case it declines did not pass"),
    ("unproven", "Not shown by this recheck", "entries that stay decline its cases"),
)


@dataclass(frozen=True)
class RecheckFiles:
    """What a finished recheck wrote (the patch only when it proposes something)."""

    report: Path
    patch: Path | None


def entry_label(decline: Decline, manifest: Manifest) -> str:
    """How the report names an entry, as it is spelled in the manifest."""
    d = decline
    if d.kind == "dtype":
        state = "False" if d.item in manifest.dtypes else "absent"
        return f"DTYPES[{d.item!r}] ({state})"
    if d.kind == "dtype_regex":
        return f"DTYPES[{d.item!r}] regex, which leaves out {d.op}"
    if d.kind == "ops_exclude":
        return f"OPS['exclude'][{d.item!r}]"
    if d.kind == "ops_include":
        return f"OPS['include'], which leaves out {d.op}"
    if d.kind == "capability":
        return f"CAPABILITIES, {d.item}"
    return f"known-crash rule {d.item!r}"


def _entry(decline: Decline, manifest: Manifest) -> str:
    """The label as code, with the manifest's own reason for an OPS exclude."""
    label = _code(entry_label(decline, manifest))
    why = (
        manifest.ops_exclude.get(decline.item) if decline.kind == "ops_exclude" else ""
    )
    return f"{label} ({_code(why)})" if why else label


def first_message(record: CaseRecord | None) -> str:
    """The one line that says why a case did not pass."""
    if record is None:
        return "the run has no record of it"
    if record.mismatch:
        return record.mismatch
    if record.exception_type or record.exception_message:
        return f"{record.exception_type or 'error'}: {record.exception_message or ''}"
    return record.detail or record.status.value


def _code(text: str, limit: int = MESSAGE) -> str:
    """One line of arbitrary text as inline code that markdown cannot break."""
    line = for_terminal(" ".join(text.split()), keep_newlines=False)
    line = line.replace("`", "'")
    return f"`{line[:limit]}{'...' if len(line) > limit else ''}`"


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(_code(i) for i in ids[:LISTED])
    return shown + (f" and {len(ids) - LISTED} more" if len(ids) > LISTED else "")


def _evidence(
    v: EntryVerdict, records: Mapping[str, CaseRecord], manifest: Manifest
) -> str:
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(v.statuses.items()))
    text = f"{len(v.cases)} case(s): {statuses}"
    if v.verdict in ("remove", "narrow", "confirm"):
        text += (
            f"; removing it runs {len(v.would_run)}, all passed: {_ids(v.would_run)}"
        )
        if v.not_passed:
            text += (
                f"; the {len(v.not_passed)} that did not pass stay declined by "
                "entries that stay: " + _ids(v.not_passed)
            )
    if v.decline.kind == "known_crash":
        isolated = sum(
            (r := records.get(c)) is not None and r.isolation not in (None, "none")
            for c in v.cases
        )
        text += f"; {isolated} of them ran in a child process"
    if v.verdict == "narrow":
        text += f"; declare it for {', '.join(v.ops)}"
    if v.outside:
        left = ", ".join(f"{f} ({n or 'some'})" for f, n in v.outside.items())
        text += f"; the filters left out cases of it: {left}"
    if v.verdict == "keep" and v.not_passed:
        first = v.not_passed[0]
        record = records.get(first)
        text += (
            f"; first: {_code(first)} {status_of(record)}: "
            f"{_code(first_message(record))}; not passed: {_ids(v.not_passed)}"
        )
    if v.verdict == "unproven":
        kept = (_code(entry_label(d, manifest)) for d in v.stays_with)
        text += "; kept by " + ", ".join(kept)
    return text


def render_report(
    verdicts: Sequence[EntryVerdict],
    records: Mapping[str, CaseRecord],
    settings: RunSettings,
    run_key: str,
    patch: RecheckPatch,
    patch_name: str | None,
    apply_line: str,
) -> str:
    """The markdown report of a recheck."""
    m = settings.manifest
    ran = {c for v in verdicts for c in v.cases}
    totals: dict[str, int] = {}
    for case_id in ran:
        word = status_of(records.get(case_id))
        totals[word] = totals.get(word, 0) + 1
    words = ", ".join(f"{n} {s}" for s, n in sorted(totals.items())) or "none"
    filters = _filters(settings)
    lines = [
        f"# Recheck of the manifest's exclusions: {run_key}",
        "",
        f"Manifest {_code(shareable_path(str(m.path)))} ({m.digest[:19]}); "
        f"selection: {_code(filters or 'the whole manifest')}, level "
        f"{settings.level or m.level}. It ran the {len(ran)} case(s) the manifest "
        f"declines ({words}). The manifest was not changed. A verdict holds at "
        f"this level: cases deeper than it did not run.",
    ]
    for verdict, title, why in SECTIONS:
        chosen = [v for v in verdicts if v.verdict == verdict]
        if not chosen:
            continue
        lines += ["", f"## {title} ({len(chosen)})", ""]
        if why:
            lines += [f"An entry here: {why}.", ""]
        lines += [
            f"- {_entry(v.decline, m)}: {_evidence(v, records, m)}" for v in chosen
        ]
        if verdict == "confirm":
            lines += ["", f"Confirm with: {_code(confirm_command(settings), 400)}"]
    lines += ["", "## Patch", ""]
    if patch_name:
        lines.append(f"{_code(patch_name)} removes the entries above; {apply_line}.")
    else:
        lines.append("Nothing to remove: no patch.")
    if patch.packaged_rules:
        lines.append(
            "Rules of the packaged ledger (remove upstream in torchcts-isolate): "
            + _ids(patch.packaged_rules)
        )
    if not verdicts:
        lines += ["", "The selection holds no case the manifest declines."]
    return "\n".join(lines) + "\n"


def _filters(settings: RunSettings) -> str:
    return shlex.join(settings.filter_words())


def confirm_command(settings: RunSettings) -> str:
    """The recheck of the whole manifest, at this run's level."""
    words = [tool_command("torchcts-run", tool_prefix_at())]
    words += ["--manifest", shareable_path(str(settings.manifest.path))]
    words.append("--recheck-exclusions")
    if settings.level is not None:
        words += ["--level", str(settings.level)]
    return " ".join(shlex.quote(w) for w in words)


def write_recheck(
    settings: RunSettings,
    run_key: str,
    plan: CasePlan,
    records: Mapping[str, CaseRecord],
) -> RecheckFiles:
    """Judge the entries and write the report (and the patch when one is due)."""
    layout = ResultsLayout(settings.results_dir, run_key)
    verdicts = judge_entries(plan.declined, records, plan.declined_outside)
    manifest_path = Path(settings.manifest.path).resolve()
    label = shareable_path(str(manifest_path))
    patch = build_patch(verdicts, manifest_path, label, plan.rule_sources)
    patch_path = layout.recheck_patch if patch.text else None
    shown = shareable_path(str(layout.recheck_patch.resolve()))
    inside = manifest_path.is_relative_to(Path.cwd().resolve())
    where = "the directory the run started in" if inside else "the manifest's folder"
    apply_line = f"apply it from {where} with {_code(f'patch -p1 < {shown}')}"
    name = shown if patch_path else None
    text = render_report(verdicts, records, settings, run_key, patch, name, apply_line)
    identity = HostIdentity.current(roots=[os.getcwd()])
    write_atomic(layout.recheck_report, scrub_text(text, identity), fsync=False)
    if patch_path is not None:
        write_atomic(patch_path, patch.text, fsync=False)
    else:
        layout.recheck_patch.unlink(missing_ok=True)  # an earlier recheck's, now stale
    return RecheckFiles(layout.recheck_report, patch_path)


def recheck_lines(
    settings: RunSettings,
    run_key: str,
    plan: CasePlan,
    records: Mapping[str, CaseRecord],
) -> list[str]:
    """Write the recheck's files; the lines the run's summary ends with."""
    try:
        files = write_recheck(settings, run_key, plan, records)
    except (ArtifactError, OSError, ValueError) as exc:
        return [f"TorchCTS recheck: the report could not be written ({exc})"]
    lines = [f"TorchCTS recheck report: {shareable_path(str(files.report.resolve()))}"]
    if files.patch is not None:
        patch = shareable_path(str(files.patch.resolve()))
        lines.append(f"TorchCTS recheck manifest patch: {patch}")
    else:
        lines.append("TorchCTS recheck: no exclusion to remove, no patch")
    return lines


__all__ = [
    "RecheckFiles",
    "confirm_command",
    "entry_label",
    "first_message",
    "recheck_lines",
    "render_report",
    "write_recheck",
]
