"""TorchCTS evidence submission: archives and their verification, the backend evidence
store, known-crash candidates, and scrubbing of host identity from all of them.

Imports only the standard library and torchcts_schema, so a maintainer can verify a
submission on a machine without torch.
"""

__version__ = "0.1.0"

# The scrubber lives in torchcts_schema; these names stay importable from here only
# because bench/bench_evidence.py and older callers import them from this root.
from torchcts_schema import HostIdentity, find_identity, scrub_text

from torchcts_evidence.accept import accept_packet
from torchcts_evidence.archive import BuiltArchive, build_archive
from torchcts_evidence.backend_store import (
    PackOptions,
    build_entries,
    pack_run,
    write_index,
)
from torchcts_evidence.crash import (
    Candidate,
    build_packet,
    find_crash_record,
    wrap_repro,
    write_packet,
)
from torchcts_evidence.errors import EvidenceError
from torchcts_evidence.store_check import check_store
from torchcts_evidence.submission_schema import (
    SUBMISSION_FORMAT,
    SUBMISSION_VERSION,
    sha256_of,
)
from torchcts_evidence.summary import (
    format_verification,
    verification_json,
    verification_summary,
)
from torchcts_evidence.verify import Verification, verify_archive
from torchcts_evidence.zipcheck import Limits

__all__ = [
    "SUBMISSION_FORMAT",
    "SUBMISSION_VERSION",
    "BuiltArchive",
    "Candidate",
    "EvidenceError",
    "HostIdentity",
    "Limits",
    "PackOptions",
    "Verification",
    "__version__",
    "accept_packet",
    "build_archive",
    "build_entries",
    "build_packet",
    "check_store",
    "find_crash_record",
    "find_identity",
    "format_verification",
    "pack_run",
    "scrub_text",
    "sha256_of",
    "verification_json",
    "verification_summary",
    "verify_archive",
    "wrap_repro",
    "write_index",
    "write_packet",
]
