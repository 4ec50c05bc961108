"""A record's crash and tolerance blocks: their JSON form names every field."""

from __future__ import annotations

from dataclasses import fields

from torchcts_schema import CrashKind, ToleranceSource
from torchcts_schema.records import CrashInfo, ToleranceUsed


def test_each_block_writes_every_field_and_reads_back() -> None:
    """The spelled-out to_dict forms hold each dataclass field with its value (a
    field added later cannot be dropped silently) and from_dict inverts them."""
    blocks = [
        CrashInfo(
            kind=CrashKind.SIGNAL,
            signal="SIGSEGV",
            exit_code=-11,
            detail="segfault in \udcff",
            evidence="crashes/x.json",
        ),
        ToleranceUsed(
            dtype="float16",
            atol=1e-3,
            rtol=0.5,
            source=ToleranceSource.MANIFEST_OP,
            override_needed=True,
        ),
    ]
    for block in blocks:
        data = block.to_dict()
        assert data == {f.name: getattr(block, f.name) for f in fields(block)}
        assert type(block).from_dict(data) == block
