"""The fixed words every TorchCTS tool shares: statuses, crash kinds, sources, reasons.

They are string enums so that artifacts stay plain JSON and a reviewer can read them
without TorchCTS installed. Adding a member is a format change; renaming one is a break.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """The seven outcomes of a case, exactly as the results page names them."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    UNSUPPORTED = "unsupported"
    NOT_RUN = "not_run"
    SKIPPED = "skipped"
    CRASHED = "crashed"


STATUS_MEANINGS: dict[Status, str] = {
    Status.PASSED: "The backend matched the expected behavior for that test.",
    Status.FAILED: "The test ran but the backend result was wrong.",
    Status.ERROR: "The test did not complete normally.",
    Status.UNSUPPORTED: "A configured in-contract path raised unsupported or not "
    "implemented.",
    Status.NOT_RUN: "TorchCTS did not run the case and recorded why.",
    Status.SKIPPED: "Pytest marked the case skipped for a runtime condition.",
    Status.CRASHED: "The process exited by signal, timeout, hang, or subprocess "
    "failure.",
}


class CrashKind(StrEnum):
    """How a crashed case ended; kept apart so hangs and signals are triaged apart."""

    SIGNAL = "signal"
    TIMEOUT = "timeout"
    HANG = "hang"
    SUBPROCESS = "subprocess"
    WORKER_LOST = "worker_lost"


class ExpectedSource(StrEnum):
    """What a backend result was compared against."""

    CPU_REFERENCE = "cpu_reference"
    REVIEWED_REFERENCE = "reviewed_reference"
    LEGAL_OUTPUT = "legal_output"
    PROPERTY = "property"


EXPECTED_SOURCE_MEANINGS: dict[ExpectedSource, str] = {
    ExpectedSource.CPU_REFERENCE: "PyTorch CPU reference behavior",
    ExpectedSource.REVIEWED_REFERENCE: "a reviewed TorchCTS reference",
    ExpectedSource.LEGAL_OUTPUT: "a legal-output check for an operator with more "
    "than one valid representation",
    ExpectedSource.PROPERTY: "a direct property check for behavior such as aliasing, "
    "mutation, storage, RNG, or allocation",
}


class ToleranceSource(StrEnum):
    """Where the tolerance a result was judged with came from (most specific wins:
    manifest per-op, manifest per-dtype, the case's reviewed reference, the case's
    documented tolerance, the table)."""

    DEFAULT_TABLE = "default_table"
    MANIFEST_DTYPE = "manifest_dtype"
    MANIFEST_OP = "manifest_op"
    REVIEWED_REFERENCE = "reviewed_reference"
    CASE_DOCUMENTED = "case_documented"


TOLERANCE_SOURCE_MEANINGS: dict[ToleranceSource, str] = {
    ToleranceSource.DEFAULT_TABLE: "the default per-dtype table (exact for integers)",
    ToleranceSource.MANIFEST_DTYPE: "the manifest's TOLERANCES['dtypes'] override",
    ToleranceSource.MANIFEST_OP: "the manifest's TOLERANCES['ops'] override",
    ToleranceSource.REVIEWED_REFERENCE: "the tolerance reviewed with the case's values",
    ToleranceSource.CASE_DOCUMENTED: "the case's own documented tolerance (several "
    "steps or kernels chained, e.g. optimizer steps, model blocks)",
}
OVERRIDE_SOURCES = frozenset(
    (ToleranceSource.MANIFEST_DTYPE, ToleranceSource.MANIFEST_OP)
)


class NotRunReason(StrEnum):
    """Why TorchCTS chose not to execute a case (filtered accounting)."""

    DTYPE_NOT_SUPPORTED = "dtype_not_supported"
    CAPABILITY_NOT_DECLARED = "capability_not_declared"
    LEVEL_FILTERED = "level_filtered"
    OP_EXCLUDED = "op_excluded"
    FILTERED_BY_SELECTION = "filtered_by_selection"
    SAMPLE_LIMIT = "sample_limit"
    DEVICE_COUNT = "device_count"
    REFERENCE_UNAVAILABLE = "reference_unavailable"
    KNOWN_CRASH_NOT_EXECUTED = "known_crash_not_executed"
    COMPARISON_NOT_VALID = "comparison_not_valid"


NOT_RUN_MEANINGS: dict[NotRunReason, str] = {
    NotRunReason.DTYPE_NOT_SUPPORTED: "the manifest does not declare this dtype for "
    "this op",
    NotRunReason.CAPABILITY_NOT_DECLARED: "the manifest does not declare the "
    "capability this case needs",
    NotRunReason.LEVEL_FILTERED: "the case is deeper than the selected semantic level",
    NotRunReason.OP_EXCLUDED: "the manifest excludes this op, with a reason",
    NotRunReason.FILTERED_BY_SELECTION: "a command-line filter (dtype, suite, op "
    "glob) left it out",
    NotRunReason.SAMPLE_LIMIT: "beyond the manifest's max samples per op",
    NotRunReason.DEVICE_COUNT: "needs more devices than the manifest declares",
    NotRunReason.REFERENCE_UNAVAILABLE: "the CPU reference could not be built; see "
    "the oracle failure diagnostics (never a backend result)",
    NotRunReason.KNOWN_CRASH_NOT_EXECUTED: "a known-crash rule matched and "
    "isolation was unavailable, so it was not executed",
    NotRunReason.COMPARISON_NOT_VALID: "PyTorch's OpInfo says a cross-device "
    "comparison of this op is not valid",
}


class NextFix(StrEnum):
    """The seed's "Find The Next Fix" list, in its order."""

    CONFIGURATION = "configuration"
    CORRECTNESS = "correctness"
    IMPLEMENT_OR_DECLARE = "implement_or_declare"
    CRASH_EVIDENCE = "crash_evidence"
    SUPPORT_SURFACE = "support_surface"
    MISSING_EVIDENCE = "missing_evidence"


NEXT_FIX_MEANINGS: dict[NextFix, str] = {
    NextFix.CONFIGURATION: "Correct the import, device name, dtype configuration, "
    "capability configuration, or runtime environment before interpreting operator "
    "results.",
    NextFix.CORRECTNESS: "Inspect values, shape, dtype, layout, aliasing, mutation, "
    "error behavior, or property checks for the failing case.",
    NextFix.IMPLEMENT_OR_DECLARE: "Implement the configured path or update the "
    "manifest if that support is not currently part of the backend.",
    NextFix.CRASH_EVIDENCE: "Use isolation, the runlog, and subprocess records to "
    "retain evidence while allowing the rest of the run to continue.",
    NextFix.SUPPORT_SURFACE: "Check whether the case is intentionally outside the "
    "current support surface or represents support the team plans to add.",
    NextFix.MISSING_EVIDENCE: "Determine whether the missing evidence requires "
    "target hardware, a matching build family, a backend runner, or a new test "
    "strategy.",
}

_DEFAULT_NEXT_FIX: dict[Status, NextFix | None] = {
    Status.PASSED: None,
    Status.FAILED: NextFix.CORRECTNESS,
    Status.ERROR: NextFix.CORRECTNESS,
    Status.UNSUPPORTED: NextFix.IMPLEMENT_OR_DECLARE,
    Status.CRASHED: NextFix.CRASH_EVIDENCE,
    Status.NOT_RUN: NextFix.SUPPORT_SURFACE,
    Status.SKIPPED: NextFix.MISSING_EVIDENCE,
}


def default_next_fix(
    status: Status, *, harness_problem: bool = False
) -> NextFix | None:
    """The next-fix category a record gets unless its producer knows better.

    A harness problem (import, device name, dtype or capability configuration) comes
    first in the seed's list because it invalidates every operator result after it.
    """
    if harness_problem and status is not Status.PASSED:
        return NextFix.CONFIGURATION
    return _DEFAULT_NEXT_FIX[status]
