"""The device module and what hangs off it: ``torch.<device>`` (is_available,
device_count, current_device, set_device, synchronize), device properties, streams and
events, ``torch.Generator(device=...)``, and copies between device indices.

Every function is looked up on ``torch.get_device_module(device)``; one the claimed
capability needs and the module lacks is unsupported, naming it. Properties are
written by hand (True, or the sentence saying how it broke); the generator cases are
judged against the same check on CPU (CPU semantics: a state is a CPU byte tensor, a
seed replays its stream); synchronize's values against CPU; copies between indices
against values written by hand.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torchcts_schema import ExpectedSource

from torchcts_cases.suites.base import all_hold, case, device_function, holds
from torchcts_cases.suites.limits import run_limits

SUITE = "device_api"
_STREAM_METHODS = ("wait_stream", "synchronize", "query")
_EVENT_METHODS = ("record", "synchronize", "query", "elapsed_time")


def _landed(device: str, index: int) -> str | None:
    """None when a tensor asked for on device `index` is there and holds its values,
    else what happened. The CPU has no device index: a cpu:0 tensor reports cpu."""
    where = f"{device}:{index}"
    want = None if device == "cpu" else index
    try:
        t = torch.full((4,), index + 1, dtype=torch.int32, device=where)
        values = t.to("cpu").tolist()
    except RuntimeError as exc:
        return f"{where} raised {type(exc).__name__}: {str(exc)[:120]}"
    if t.device.index != want:
        return f"a tensor made on {where} landed on {t.device}"
    if values != [index + 1] * 4:
        return f"a tensor filled with {index + 1} on {where} holds {values}"
    return None


@case(
    SUITE,
    "module_basics",
    1,
    expected=all_hold("is_available", "device_count", "counted_devices_work"),
)
def module_basics(device: str, dtype: str | None) -> dict[str, Any]:
    """is_available() is True; device_count() covers the manifest's DEVICE_COUNT and
    every device it counts takes a tensor."""
    available = device_function(device, "is_available", SUITE)()
    count = device_function(device, "device_count", SUITE)()
    declared = max(run_limits().device_count, 1)
    counted = count if isinstance(count, int) else 0
    broken = [b for b in (_landed(device, i) for i in range(counted)) if b]
    return {
        "is_available": holds(
            available is True, f"torch.{device}.is_available() returned {available!r}"
        ),
        "device_count": holds(
            isinstance(count, int) and count >= declared,
            f"torch.{device}.device_count() returned {count!r}; the manifest's "
            f"DEVICE_COUNT is {declared}",
        ),
        "counted_devices_work": holds(
            not broken, f"device_count() is {count} but {broken[0] if broken else ''}"
        ),
    }


@case(SUITE, "synchronize", 1, source=ExpectedSource.CPU_REFERENCE)
def synchronize(device: str, dtype: str | None) -> dict[str, Any]:
    """synchronize() and synchronize(device) return None after queued work, whose
    values then match CPU."""
    sync = device_function(device, "synchronize", SUITE)
    a = torch.arange(64 * 64, dtype=torch.float32).reshape(64, 64).div_(64).to(device)
    product = a @ a.T
    first = sync()
    second = sync(torch.device(device))
    return {"product": product, "returns_none": first is None and second is None}


@case(
    SUITE,
    "current_device",
    2,
    needs_other_device=True,  # the CPU has no index: torch.cpu.current_device() is "cpu"
    expected=all_hold("index_in_range", "set_device_keeps", "tensors_land_there"),
)
def current_device(device: str, dtype: str | None) -> dict[str, Any]:
    """current_device() is an index below device_count(); set_device(it) keeps it;
    a tensor made on the bare device type lands there."""
    current = device_function(device, "current_device", SUITE)
    count = device_function(device, "device_count", SUITE)()
    index = current()
    device_function(device, "set_device", SUITE)(index)
    still = current()
    t = torch.empty(1, device=device)
    return {
        "index_in_range": holds(
            isinstance(index, int) and 0 <= index < count,
            f"current_device() returned {index!r} with device_count() {count}",
        ),
        "set_device_keeps": holds(
            still == index, f"set_device({index!r}) then current_device() is {still!r}"
        ),
        "tensors_land_there": holds(
            t.device.index == index,
            f"torch.empty(1, device={device!r}) landed on {t.device}; current_device() "
            f"is {index!r}",
        ),
    }


@case(
    SUITE,
    "set_device_switches",
    3,
    min_devices=2,
    expected=all_hold("switched", "tensors_follow", "switched_back"),
)
def set_device_switches(device: str, dtype: str | None) -> dict[str, Any]:
    """set_device(1) makes device 1 current (bare-type tensors land there);
    set_device(0) switches back."""
    current = device_function(device, "current_device", SUITE)
    set_device = device_function(device, "set_device", SUITE)
    start = current()
    try:
        set_device(1)
        on_one = current()
        t = torch.empty(1, device=device)
        set_device(0)
        on_zero = current()
    finally:
        set_device(start)
    return {
        "switched": holds(on_one == 1, f"set_device(1) then current_device() {on_one}"),
        "tensors_follow": holds(
            t.device.index == 1, f"after set_device(1) a tensor landed on {t.device}"
        ),
        "switched_back": holds(
            on_zero == 0, f"set_device(0) then current_device() {on_zero}"
        ),
    }


def _between_devices(dtype: str | None) -> dict[str, Any]:
    values = torch.arange(6, dtype=torch.float32)
    return {"index": 1, "moved": values, "copied": values * 2, "back": values * 2}


@case(
    SUITE,
    "copy_between_devices",
    3,
    min_devices=2,
    source=ExpectedSource.REVIEWED_REFERENCE,
    expected=_between_devices,
)
def copy_between_devices(device: str, dtype: str | None) -> dict[str, Any]:
    """.to(device:1), copy_ from device:0 into device:1 and a non-blocking copy back
    keep the values."""
    a = torch.arange(6, dtype=torch.float32).to(f"{device}:0")
    moved = a.to(f"{device}:1")
    copied = torch.empty(6, device=f"{device}:1").copy_(a * 2)
    back = copied.to(f"{device}:0", non_blocking=True)
    device_function(device, "synchronize", SUITE)()
    return {"index": moved.device.index, "moved": moved, "copied": copied, "back": back}


@case(
    SUITE,
    "device_properties",
    2,
    capability="device_properties",
    expected=all_hold("name", "total_memory", "names_agree"),
)
def device_properties(device: str, dtype: str | None) -> dict[str, Any]:
    """get_device_properties names the device and its total memory; get_device_name
    says the same name."""
    index = torch.empty(0, device=device).device.index or 0
    props = device_function(device, "get_device_properties", "device_properties")(index)
    named = device_function(device, "get_device_name", "device_properties")(index)
    name, total = getattr(props, "name", None), getattr(props, "total_memory", None)
    return {
        "name": holds(
            isinstance(name, str) and bool(name.strip()),
            f"get_device_properties({index}).name is {name!r}",
        ),
        "total_memory": holds(
            isinstance(total, int) and total > 0,
            f"get_device_properties({index}).total_memory is {total!r}",
        ),
        "names_agree": holds(
            named == name,
            f"get_device_name({index}) is {named!r}, get_device_properties says "
            f"{name!r}",
        ),
    }


def _methods(obj: Any, what: str, capability: str, *names: str) -> None:
    """NotImplementedError naming the first of `names` that `obj` lacks."""
    for name in names:
        if not callable(getattr(obj, name, None)):
            raise NotImplementedError(
                f"{what}.{name} is missing: {capability} is claimed, which needs it"
            )


def _exact_square(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A 256x256 matrix of small integers on `device` and its exact square on CPU
    (sums below 2**24: exact in float32 whatever the kernel's order)."""
    host = torch.arange(256 * 256, dtype=torch.float32).reshape(256, 256).remainder(7)
    return host.to(device), host @ host


@case(
    SUITE,
    "streams",
    3,
    capability="streams",
    expected=all_hold("context_sets", "context_restores", "ordered", "query"),
)
def streams(device: str, dtype: str | None) -> dict[str, Any]:
    """Work on a side stream (after wait_stream on the default one) is read right on
    the default stream after it waits back; stream() sets and restores the current
    stream; query() is True after synchronize()."""
    make = device_function(device, "Stream", "streams")
    current_stream = device_function(device, "current_stream", "streams")
    within = device_function(device, "stream", "streams")
    a, exact = _exact_square(device)
    default = current_stream()
    side = make()
    _methods(side, f"torch.{device}.Stream()", "streams", *_STREAM_METHODS)
    side.wait_stream(default)
    with within(side):
        inside = current_stream()
        product = a @ a
    outside = current_stream()
    default.wait_stream(side)
    seen = (product + 0).to("cpu")
    side.synchronize()
    idle = side.query()
    return {
        "context_sets": holds(inside == side, f"inside stream(s) current is {inside}"),
        "context_restores": holds(
            outside == default, f"after stream(s) current is {outside}, not {default}"
        ),
        "ordered": holds(
            torch.equal(seen, exact),
            "a product made on a side stream, read on the default stream after "
            f"wait_stream, is off by {float((seen - exact).abs().max())}",
        ),
        "query": holds(idle is True, f"query() {idle!r} after synchronize()"),
    }


@case(
    SUITE,
    "events",
    3,
    capability="events",
    expected=all_hold("query", "elapsed_time", "elapsed_grows", "values"),
)
def events(device: str, dtype: str | None) -> dict[str, Any]:
    """Timing events around work: synchronize() then query() is True, elapsed_time
    is finite, >= 0 and grows with a later event; the work's values are exact."""
    make = device_function(device, "Event", "events")
    a, exact = _exact_square(device)
    try:
        start, end, later = (make(enable_timing=True) for _ in range(3))
    except TypeError as exc:  # an Event class without timing
        raise NotImplementedError(
            f"torch.{device}.Event(enable_timing=True) is missing ({exc}): events is "
            "claimed, which needs timing events"
        ) from None
    _methods(start, f"torch.{device}.Event()", "events", *_EVENT_METHODS)
    start.record()
    product = a @ a
    end.record()
    (product @ a).sum()
    later.record()
    later.synchronize()
    done = end.query()
    first, second = start.elapsed_time(end), start.elapsed_time(later)
    seen = product.to("cpu")
    return {
        "query": holds(done is True, f"query() {done!r} after a later synchronize()"),
        "elapsed_time": holds(
            isinstance(first, float) and math.isfinite(first) and first >= 0,
            f"elapsed_time returned {first!r}; expected finite milliseconds >= 0",
        ),
        "elapsed_grows": holds(
            isinstance(second, float) and second >= first,
            f"elapsed_time to a later event {second!r} < to an earlier one {first!r}",
        ),
        "values": holds(torch.equal(seen, exact), "timed work gave wrong values"),
    }


def _draw(g: torch.Generator, device: str) -> torch.Tensor:
    return torch.randn(512, generator=g, device=device).to("cpu")


@case(SUITE, "generator_seeded", 2, capability="device_generator")
def generator_seeded(device: str, dtype: str | None) -> dict[str, Any]:
    """A device Generator: the same seed replays its stream, another seed differs,
    initial_seed() reports the seed, and drawing from it leaves the default
    generator's stream alone (judged against CPU)."""
    g = torch.Generator(device=device)
    a = _draw(g.manual_seed(1234), device)
    b = _draw(g.manual_seed(1234), device)
    c = _draw(g.manual_seed(4321), device)
    torch.manual_seed(7)
    plain = torch.randn(64, device=device).to("cpu")
    torch.manual_seed(7)
    _draw(g, device)
    after = torch.randn(64, device=device).to("cpu")
    return {
        "on_device": holds(
            g.device.type == torch.device(device).type, f"generator on {g.device}"
        ),
        "same_seed_replays": holds(
            torch.equal(a, b), "seed 1234 twice: streams differ"
        ),
        "seeds_differ": holds(not torch.equal(a, c), "seeds 1234 and 4321: same"),
        "initial_seed": g.initial_seed(),
        "default_untouched": holds(
            torch.equal(plain, after),
            "drawing from a Generator moved the default generator's stream",
        ),
    }


@case(SUITE, "generator_state", 3, capability="device_generator")
def generator_state(device: str, dtype: str | None) -> dict[str, Any]:
    """get_state() then set_state() replays randn, rand, randint and randperm, also
    on a fresh Generator; the state is what CPU's is (a CPU uint8 tensor)."""

    def draws(g: torch.Generator) -> list[torch.Tensor]:
        return [
            t.to("cpu")
            for t in (
                torch.randn(300, generator=g, device=device),
                torch.rand(300, generator=g, device=device),
                torch.randint(0, 1000, (300,), generator=g, device=device),
                torch.randperm(200, generator=g, device=device),
            )
        ]

    g = torch.Generator(device=device).manual_seed(99)
    torch.rand(10, generator=g, device=device)
    state = g.get_state()
    first = draws(g)
    g.set_state(state)
    again = draws(g)
    fresh = torch.Generator(device=device)
    fresh.set_state(state)
    other = draws(fresh)
    return {
        "state_dtype": str(state.dtype),
        "state_device": state.device.type,
        "replays": holds(
            all(torch.equal(x, y) for x, y in zip(first, again, strict=True)),
            "set_state(get_state()) did not replay randn/rand/randint/randperm",
        ),
        "fresh_replays": holds(
            all(torch.equal(x, y) for x, y in zip(first, other, strict=True)),
            "a fresh Generator given the state did not replay the draws",
        ),
    }


CASES = (
    module_basics,
    synchronize,
    current_device,
    set_device_switches,
    copy_between_devices,
    device_properties,
    streams,
    events,
    generator_seeded,
    generator_state,
)
