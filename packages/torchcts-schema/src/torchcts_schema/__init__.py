"""The shared vocabulary of TorchCTS: statuses, records, run metadata, the artifact store
and the static manifest reader. Imports neither torch nor pytest, so a reviewer can load
a submission anywhere.
"""

from torchcts_schema.artifact import (
    FORMAT_VERSION,
    RESULT_FORMAT,
    RunArtifact,
    decode_artifact,
    encode_artifact,
)
from torchcts_schema.atomic import write_atomic, write_once
from torchcts_schema.case_contract import (
    CASE_SOURCE_GROUP,
    CaseSpec,
    SelectedCases,
    Selection,
    Verdict,
    record_for,
)
from torchcts_schema.crash_record import (
    CRASH_RECORD_FORMAT,
    CRASH_RECORD_VERSION,
    ENVIRONMENT_KEYS,
    CrashRecord,
)
from torchcts_schema.errors import ArtifactError, ArtifactWriteError, ManifestError
from torchcts_schema.gc_pause import gc_paused
from torchcts_schema.identity import (
    NODE_PREFIX,
    case_id_for_node,
    make_case_id,
    make_run_key,
    node_id_for_case,
    slug,
    split_case_id,
)
from torchcts_schema.integrity import artifact_digest
from torchcts_schema.journal import (
    JournalContents,
    JournalWriter,
    journal_path,
    read_journal,
)
from torchcts_schema.known_crash import (
    KnownCrashError,
    KnownCrashRule,
    load_known_crash_rules,
    rule_from_dict,
    rule_to_dict,
    rules_to_json,
    torch_minor_family,
    validate_rules,
)
from torchcts_schema.layout import (
    CRASHES_SUFFIX,
    HISTORY_SUFFIX,
    JOURNAL_SUFFIX,
    LATEST_SUFFIX,
    PREV_SUFFIX,
    REPORT_SUFFIXES,
    ResultsLayout,
    run_key_of,
)
from torchcts_schema.loader import (
    find_latest,
    load_result,
    rebuild_from_journal,
    resolve_reference,
    run_keys,
)
from torchcts_schema.manifest import (
    CAPABILITY_NAMES,
    DEFAULT_UNSUPPORTED_PATTERNS,
    DTYPE_NAMES,
    SUITE_CAPABILITIES,
    VARIANT_CAPABILITIES,
    Manifest,
    load_manifest,
    validate_manifest,
)
from torchcts_schema.manifest import (
    KEYS as MANIFEST_KEYS,
)
from torchcts_schema.manifest_reader import (
    manifest_digest,
    read_manifest_file,
    read_manifest_source,
)
from torchcts_schema.records import (
    CaseRecord,
    CrashInfo,
    JsonDict,
    RunMetadata,
    count_statuses,
    metadata_problems,
)
from torchcts_schema.run_lock import LOCK_NAME, RunLock, RunLockedError
from torchcts_schema.scrub import (
    HostIdentity,
    find_identity,
    scrub_argv,
    scrub_bytes,
    scrub_text,
    scrub_value,
)
from torchcts_schema.store import (
    SnapshotWriter,
    history_dir,
    latest_path,
    utc_stamp,
    write_history,
    write_reference,
    write_snapshot,
)
from torchcts_schema.terminal import for_terminal
from torchcts_schema.vocabulary import (
    EXPECTED_SOURCE_MEANINGS,
    NEXT_FIX_MEANINGS,
    NOT_RUN_MEANINGS,
    STATUS_MEANINGS,
    CrashKind,
    ExpectedSource,
    NextFix,
    NotRunReason,
    Status,
    default_next_fix,
)

__version__ = "0.1.0"

__all__ = [
    "CAPABILITY_NAMES",
    "CASE_SOURCE_GROUP",
    "CRASHES_SUFFIX",
    "CRASH_RECORD_FORMAT",
    "CRASH_RECORD_VERSION",
    "DEFAULT_UNSUPPORTED_PATTERNS",
    "DTYPE_NAMES",
    "ENVIRONMENT_KEYS",
    "EXPECTED_SOURCE_MEANINGS",
    "FORMAT_VERSION",
    "HISTORY_SUFFIX",
    "JOURNAL_SUFFIX",
    "LATEST_SUFFIX",
    "LOCK_NAME",
    "MANIFEST_KEYS",
    "NEXT_FIX_MEANINGS",
    "NODE_PREFIX",
    "NOT_RUN_MEANINGS",
    "PREV_SUFFIX",
    "REPORT_SUFFIXES",
    "RESULT_FORMAT",
    "STATUS_MEANINGS",
    "SUITE_CAPABILITIES",
    "VARIANT_CAPABILITIES",
    "ArtifactError",
    "ArtifactWriteError",
    "CaseRecord",
    "CaseSpec",
    "CrashInfo",
    "CrashKind",
    "CrashRecord",
    "ExpectedSource",
    "HostIdentity",
    "JournalContents",
    "JournalWriter",
    "JsonDict",
    "KnownCrashError",
    "KnownCrashRule",
    "Manifest",
    "ManifestError",
    "NextFix",
    "NotRunReason",
    "ResultsLayout",
    "RunArtifact",
    "RunLock",
    "RunLockedError",
    "RunMetadata",
    "SelectedCases",
    "Selection",
    "SnapshotWriter",
    "Status",
    "Verdict",
    "artifact_digest",
    "case_id_for_node",
    "count_statuses",
    "decode_artifact",
    "default_next_fix",
    "encode_artifact",
    "find_identity",
    "find_latest",
    "for_terminal",
    "gc_paused",
    "history_dir",
    "journal_path",
    "latest_path",
    "load_known_crash_rules",
    "load_manifest",
    "load_result",
    "make_case_id",
    "make_run_key",
    "manifest_digest",
    "metadata_problems",
    "node_id_for_case",
    "read_journal",
    "read_manifest_file",
    "read_manifest_source",
    "rebuild_from_journal",
    "record_for",
    "resolve_reference",
    "rule_from_dict",
    "rule_to_dict",
    "rules_to_json",
    "run_key_of",
    "run_keys",
    "scrub_argv",
    "scrub_bytes",
    "scrub_text",
    "scrub_value",
    "slug",
    "split_case_id",
    "torch_minor_family",
    "utc_stamp",
    "validate_manifest",
    "validate_rules",
    "write_atomic",
    "write_history",
    "write_once",
    "write_reference",
    "write_snapshot",
]
