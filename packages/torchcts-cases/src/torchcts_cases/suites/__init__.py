"""Hand-written suites: what OpInfo does not express (aliasing, mutation, out=
semantics, memory formats, copies, factories, RNG, serialization, device mismatch; the
autograd engine, training, model workloads, torch.compile, edge shapes and scale;
casts and ops in the less common dtypes; device memory and the device module's API)
and reviewed references. Each suite is one small module with a ``CASES`` tuple.
"""

from __future__ import annotations

import functools

from torchcts_cases.suites.base import HandCase

SUITE_MODULES = (
    "views",
    "mutation",
    "storage_ops",
    "out_semantics",
    "memory_formats",
    "copies",
    "device_hooks",
    "factories",
    "factories_out",
    "rng",
    "rng_continuous",
    "rng_discrete",
    "rng_overloads",
    "rng_generators",
    "serialization",
    "device_mismatch",
    "reviewed",
    "autograd",
    "training",
    "training_precision",
    "workloads",
    "compile",
    "stress",
    "stress_scale",
    "dtypes",
    "dtypes_ops",
    "dtypes_quantized",
    "memory",
    "device_api",
)


@functools.cache
def all_hand_cases() -> dict[str, HandCase]:
    """Every hand-written case by case id, in a stable order."""
    import importlib

    out: dict[str, HandCase] = {}
    for name in SUITE_MODULES:
        module = importlib.import_module(f"torchcts_cases.suites.{name}")
        for case in module.CASES:
            for spec_case in case.expand():
                if spec_case.spec.case_id in out:
                    raise RuntimeError(f"duplicate case id {spec_case.spec.case_id}")
                out[spec_case.spec.case_id] = spec_case
    return out


def hand_case(case_id: str) -> HandCase:
    """The hand-written case of an id; KeyError when there is none."""
    try:
        return all_hand_cases()[case_id]
    except KeyError:
        raise KeyError(f"no hand-written case {case_id!r}") from None


__all__ = ["HandCase", "all_hand_cases", "hand_case"]
