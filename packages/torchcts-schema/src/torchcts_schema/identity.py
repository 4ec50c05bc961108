"""Case ids, pytest node ids and run keys: stable names that never carry host identity.

A case id is ``<suite>/<op>/<variant>/<dtype>/<sample>``; the same torch gives the same
ids on every machine. Its pytest node id is ``torchcts::<case id>``, a bijection, so a
crashed node id from pytest-xdist maps straight back to the case.
"""

from __future__ import annotations

import hashlib
import re

NODE_PREFIX = "torchcts::"
NO_DTYPE = "-"
_SLUG_BAD = re.compile(r"[^a-z0-9]+")
_SEGMENT_OK = re.compile(r"^[A-Za-z0-9_.+\-]+$")


def make_case_id(
    suite: str, op: str, variant: str, dtype: str | None, sample: int | None
) -> str:
    """Build the canonical case id; every segment must be a plain token without '/'."""
    parts = [
        suite,
        op,
        variant,
        dtype or NO_DTYPE,
        NO_DTYPE if sample is None else str(sample),
    ]
    for part in parts:
        if not _SEGMENT_OK.match(part):
            raise ValueError(
                f"case id segment {part!r} has characters outside [A-Za-z0-9_.+-]"
            )
    return "/".join(parts)


def is_case_id_segment(text: object) -> bool:
    """Whether `text` may stand as one segment of a case id."""
    return isinstance(text, str) and bool(_SEGMENT_OK.match(text))


def split_case_id(case_id: str) -> tuple[str, str, str, str | None, int | None]:
    """Inverse of `make_case_id`: (suite, op, variant, dtype, sample)."""
    parts = case_id.split("/")
    if len(parts) != 5:
        raise ValueError(f"case id {case_id!r} does not have 5 '/'-separated segments")
    suite, op, variant, dtype, sample = parts
    return (
        suite,
        op,
        variant,
        None if dtype == NO_DTYPE else dtype,
        None if sample == NO_DTYPE else int(sample),
    )


def node_id_for_case(case_id: str) -> str:
    """The pytest node id of a case."""
    return NODE_PREFIX + case_id


def case_id_for_node(node_id: str) -> str | None:
    """The case id behind a pytest node id, or None for a node that is not a case."""
    return node_id[len(NODE_PREFIX) :] if node_id.startswith(NODE_PREFIX) else None


def slug(text: str) -> str:
    """Lower-case, hyphen-joined token safe in a file name on every OS."""
    return _SLUG_BAD.sub("-", text.lower()).strip("-") or "unknown"


def make_run_key(device_type: str, hardware_key: str) -> str:
    """``<device type>_<hardware key>``, e.g. ``cuda_nvidia-h200-141gb``.

    The hardware key comes from device properties (model, memory, core count), never
    from the host name, user name or a path.
    """
    return f"{slug(device_type)}_{slug(hardware_key)}"


def in_shard(case_id: str, shard: tuple[int, int] | None) -> bool:
    """Whether shard (I, N) holds the case: a stable partition by a hash of its id (the
    same on every machine); None holds every case."""
    if shard is None:
        return True
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shard[1] == shard[0] - 1
