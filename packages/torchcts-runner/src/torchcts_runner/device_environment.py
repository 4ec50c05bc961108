"""The environment a run records: what configures the backend under test, in force
now, and the labels of what changes its behaviour (runtime modifications).

By convention a backend reads ``TORCHCTS_<DEVICE>_*`` (simdev's fault profile is
``TORCHCTS_SIMDEV_PROFILE``), and PyTorch reads ``PYTORCH_*`` (the MPS CPU fallback,
allocator settings); each device family adds the variables it reads
(``CUDA_LAUNCH_BLOCKING``, ``ZE_AFFINITY_MASK``, an out-of-tree backend's
``<NAME>_*``; see `DeviceAdapter.environment`). Other variables (a CI job's, a
harness's own) do not change what a case means and are not recorded, so they never
block a resume. A value that is a file path keeps only its name and a digest of its
content, so the record says which profile (and --resume sees an edited one) without
saying where it lives.
"""

from __future__ import annotations

import hashlib
import os

from torchcts_runner.device_families import adapter_for

ENV_PREFIX = "TORCHCTS_"


def run_environment(device: str) -> dict[str, str]:
    """The recorded environment of a run on `device` (module docstring)."""
    prefixes = (f"{ENV_PREFIX}{device.upper()}_", "PYTORCH_")
    found = {n: v for n, v in os.environ.items() if n.startswith(prefixes)}
    found.update(adapter_for(device).environment(os.environ))
    return {name: _describe_value(found[name]) for name in sorted(found)}


def runtime_modifications(device: str) -> list[str]:
    """``NAME=value`` labels of the set variables that change how the backend
    behaves (the evidence store's runtime modifications)."""
    return adapter_for(device).runtime_modifications(os.environ)


def prepare_environment(device: str) -> None:
    """Set the family's defaults in this process's environment (inherited by its
    workers and children) before any of them initialises the device."""
    adapter_for(device).prepare_environment(os.environ)


def _describe_value(value: str) -> str:
    if os.sep not in value:
        return value
    try:
        with open(value, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()[:12]
    except OSError:
        return os.path.basename(value)
    return f"{os.path.basename(value)}@sha256:{digest}"


__all__ = ["prepare_environment", "run_environment", "runtime_modifications"]
