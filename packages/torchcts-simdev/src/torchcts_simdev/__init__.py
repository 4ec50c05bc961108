"""simdev: a pure-Python PrivateUse1 reference backend with fault injection.

``import torchcts_simdev`` registers the ``simdev`` device once per process; every aten
op on it runs on CPU payloads through one Python kernel (registered per overload, and
as the backend fallback for the overloads a profile takes away), which can inject the
faults a JSON profile names. The environment variable ``TORCHCTS_SIMDEV_PROFILE`` (a
shipped profile name or a JSON path) wins over whatever ``configure`` is given.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from torchcts_simdev.device import set_device_faults
from torchcts_simdev.profile import (
    CRASH_KINDS,
    DEVICE_FAULTS,
    FAULT_KINDS,
    SHIPPED,
    FaultProfile,
    FaultRule,
    ProfileError,
    load_profile,
)
from torchcts_simdev.registration import DEVICE, register

__version__ = "0.1.0"
__all__ = [
    "CRASH_KINDS",
    "DEVICE",
    "DEVICE_FAULTS",
    "ENV_VAR",
    "FAULT_KINDS",
    "SHIPPED",
    "FaultProfile",
    "FaultRule",
    "ProfileError",
    "active_profile",
    "configure",
    "describe",
    "load_profile",
    "torchcts_configure",
]

ENV_VAR = "TORCHCTS_SIMDEV_PROFILE"
OPTION_KEYS = ("fault_profile",)


_FALLBACK = register()


def configure(
    profile: str | Path | dict[str, Any] | FaultProfile = "clean",
) -> FaultProfile:
    """Activate a fault profile (name, path, dict or loaded); the env var wins if set.

    The argument is validated even when the environment variable overrides it, so a
    broken manifest option is reported rather than hidden by the override.
    """
    chosen = profile if isinstance(profile, FaultProfile) else load_profile(profile)
    override = os.environ.get(ENV_VAR)
    if override:
        chosen = load_profile(override)
    _FALLBACK.set_profile(chosen)
    set_device_faults(chosen.device_faults)
    return chosen


def torchcts_configure(options: dict[str, Any]) -> None:
    """The backend hook the runner calls with the manifest's ``BACKEND_OPTIONS``."""
    if not isinstance(options, dict):
        raise ProfileError(f"BACKEND_OPTIONS must be a dict, not {options!r}")
    unknown = sorted(set(options) - set(OPTION_KEYS))
    if unknown:
        raise ProfileError(
            f"BACKEND_OPTIONS: unknown simdev option {unknown[0]!r} "
            f"(known: {', '.join(OPTION_KEYS)})"
        )
    spec = options.get("fault_profile", "clean")
    if not isinstance(spec, str | dict):
        raise ProfileError(
            "BACKEND_OPTIONS['fault_profile'] must be a profile name or a JSON path, "
            f"not {spec!r}"
        )
    configure(spec)


def active_profile() -> FaultProfile:
    """The profile the fallback is injecting now."""
    profile: FaultProfile = _FALLBACK.profile
    return profile


def describe() -> str:
    """One line for a run's header: the backend and the profile it injects."""
    profile = active_profile()
    return (
        f"simdev (pure-Python PrivateUse1 backend) with fault profile {profile.name!r} "
        f"({len(profile.rules)} rules)"
    )


if os.environ.get(ENV_VAR):
    configure()
