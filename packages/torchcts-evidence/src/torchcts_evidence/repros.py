"""A run's repro scripts in its submission archive, and what is left out and why.

The results page asks for a minimal repro in crash and submission evidence. Each case
that ran and did not pass names its standalone script in its record
(`CaseRecord.repro`, ``<key>_repros/<case>.py``, relative to the results directory),
so `torchcts-report explain` on an extracted archive finds it where the record says.
The archive carries the script of every record of the run, scrubbed like every member,
as far as `verify` accepts: each at most ``Limits.max_repro_bytes``, all within
``Limits.max_members``. Scripts of earlier runs left in the folder are not this run's
and stay out.

The saved inputs beside a script (``<case>.pt``, `torchcts_cases.replay`) stay out:
they are this machine's replay cache (a rerun reads them only under the same torch and
package versions), the script rebuilds its sample without them, and their binary
bytes can be neither scrubbed nor checked for host identity. Everything left out is
named in ``SUBMISSION.json``'s ``left_out`` (reason -> member names), which `verify`
prints; a record's script that is neither in the archive nor listed there is a problem,
like a missing crash record.

`verify` reads each script member (never runs it) as UTF-8 text holding no absolute
path: a reviewer cannot know the submitter's host and user names, but a path is a
path. The archive's name rules (no ``..``, no absolute or odd names) apply to these
members as to all.
"""

from __future__ import annotations

import zipfile
from collections.abc import Container, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from torchcts_schema import (
    REPRO_INPUTS_SUFFIX,
    REPRO_SCRIPT_SUFFIX,
    REPROS_SUFFIX,
    HostIdentity,
    ResultsLayout,
    RunArtifact,
    find_identity,
)

from torchcts_evidence.submission_schema import RESULTS_PREFIX
from torchcts_evidence.zipcheck import Limits, read_member

SAVED_INPUTS = (
    f"saved inputs ({REPRO_INPUTS_SUFFIX}): this machine's replay cache, read only by "
    "its own reruns under the same torch and package versions; the repro script "
    "rebuilds its sample without them, and binary bytes cannot be checked for host "
    "identity"
)
NOT_FOUND = "repro script named by its case's record, not in the results directory"
NOT_A_SCRIPT = (
    f"repro named by its case's record is not a script in <key>{REPROS_SUFFIX}/"
)
LeftOut = dict[str, list[str]]  # reason -> member names, sorted
_READ_ERRORS = (zipfile.BadZipFile, OSError, ValueError, EOFError)


def run_repros(
    results_dir: Path, run_key: str, artifact: RunArtifact
) -> tuple[list[Path], LeftOut]:
    """The scripts the run's records name (relative to `results_dir`, sorted) and
    what is left out: their saved inputs, and named scripts that are not there."""
    layout = ResultsLayout(results_dir, run_key)
    folder = layout.repros_dir.name
    scripts: set[Path] = set()
    left: LeftOut = {}
    for record in artifact.records:
        if record.repro is None:
            continue
        pure = PurePosixPath(record.repro)
        name = pure.name
        if (
            pure.parts != (folder, name)
            or not name.endswith(REPRO_SCRIPT_SUFFIX)
            or name.startswith(".")
        ):
            left.setdefault(NOT_A_SCRIPT, []).append(RESULTS_PREFIX + record.repro)
            continue
        path = layout.repros_dir / name
        if not path.is_file() or path.is_symlink():
            left.setdefault(NOT_FOUND, []).append(RESULTS_PREFIX + record.repro)
            continue
        scripts.add(Path(folder, name))
        inputs = path.with_name(name[: -len(REPRO_SCRIPT_SUFFIX)] + REPRO_INPUTS_SUFFIX)
        if inputs.is_file():
            member = f"{RESULTS_PREFIX}{folder}/{inputs.name}"
            left.setdefault(SAVED_INPUTS, []).append(member)
    return sorted(scripts, key=lambda p: p.as_posix()), left


def too_large(limits: Limits) -> str:
    """Why a script past verify's read limit is left out."""
    return f"repro script over {limits.max_repro_bytes} bytes, the most verify reads"


def too_many(limits: Limits) -> str:
    """Why the scripts past verify's member limit are left out."""
    return f"repro scripts past {limits.max_members} members, the most verify accepts"


def sorted_left_out(left: LeftOut) -> LeftOut:
    """Each reason's names sorted and unique, reasons in order (deterministic JSON)."""
    return {reason: sorted(set(names)) for reason, names in sorted(left.items())}


def is_repro_script(name: str) -> bool:
    """Whether archive member `name` is a repro script
    (``results/<key>_repros/x.py``)."""
    parts = PurePosixPath(name).parts
    return (
        len(parts) == 3
        and parts[0] + "/" == RESULTS_PREFIX
        and parts[1].endswith(REPROS_SUFFIX)
        and parts[2].endswith(REPRO_SCRIPT_SUFFIX)
    )


def script_problems(
    zf: zipfile.ZipFile, members: Mapping[str, zipfile.ZipInfo], limits: Limits
) -> list[str]:
    """One line per repro script member that is too large, not UTF-8 text, or holds
    an absolute path (the first one found is named)."""
    problems = []
    nobody = HostIdentity()  # no names to look for: only paths
    for name in sorted(n for n in members if is_repro_script(n)):
        try:
            raw = read_member(zf, members[name], limits.max_repro_bytes)
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{name}: a repro script that is not UTF-8 text")
            continue
        except _READ_ERRORS as exc:
            problems.append(f"{name}: cannot be read ({exc})")
            continue
        leaks = find_identity(text, nobody)
        if leaks:
            problems.append(
                f"{name}: a repro script holding an {leaks[0]:.200} (host paths must "
                "not leave the machine)"
            )
    return problems


def left_out_problems(
    body: Mapping[str, Any], members: Container[str], limits: Limits
) -> list[str]:
    """``left_out`` may give only the reasons an archive writes (with these
    limits), for what it left out: saved inputs by their suffix, and nothing the
    archive holds. A crafted list could otherwise excuse any missing script with any
    text."""
    known = {NOT_A_SCRIPT, NOT_FOUND, SAVED_INPUTS, too_large(limits), too_many(limits)}
    problems: list[str] = []
    for reason, names in (body.get("left_out") or {}).items():
        if reason not in known:
            problems.append(
                f"SUBMISSION.json: left_out gives a reason no archive writes: "
                f"{reason!r:.200}"
            )
            continue
        held = [n for n in names if n in members]
        if held:
            problems.append(
                f"SUBMISSION.json: left_out lists {held[0]!r:.200}, which the "
                "archive holds"
            )
        if reason == SAVED_INPUTS and any(
            not n.endswith(REPRO_INPUTS_SUFFIX) for n in names
        ):
            problems.append(
                "SUBMISSION.json: left_out lists as saved inputs a name that is not "
                f"one ({REPRO_INPUTS_SUFFIX})"
            )
    return problems


def named_problems(
    artifact: RunArtifact, members: Container[str], body: Mapping[str, Any], result: str
) -> list[str]:
    """One line when records name repro scripts the archive neither holds nor lists
    in ``left_out``: the first such case, and how many there are."""
    left = {n for names in (body.get("left_out") or {}).values() for n in names}
    missing = [
        (record.case_id, RESULTS_PREFIX + record.repro)
        for record in artifact.records
        if record.repro is not None
        and RESULTS_PREFIX + record.repro not in members
        and RESULTS_PREFIX + record.repro not in left
    ]
    if not missing:
        return []
    case_id, name = missing[0]
    more = f" ({len(missing)} cases)" if len(missing) > 1 else ""
    return [
        f"{result}: case {case_id!r} names its repro script {name!r:.200}, which the "
        f"archive neither holds nor lists as left out{more}"
    ]
