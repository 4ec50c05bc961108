"""Live generator passes: continuing a pass gives exactly the samples a fresh pass gives."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import numpy
import pytest
import torch
from torchcts_cases import opinfo_source
from torchcts_cases.opinfo_source import SAMPLE_STREAMS, OracleUnavailable
from torchcts_cases.sample_stream import PassExhausted, SampleStreams

# (op segment, variant, dtype, how many samples to request); the first two draw sizes
# or masks at random inside the generator, the others do not
STREAMS = [
    ("masked.var", "forward", torch.float32, 57),
    ("nn.functional.max_unpool2d.grad", "backward", torch.float32, 22),
    ("add", "forward", torch.float32, 11),
    ("matmul", "backward", torch.float32, 15),
    ("sum", "forward", torch.float32, 20),
    ("cat", "error_inputs", None, 0),  # 0: all of them
]
ORDERS = ["increasing", "random", "every_other"]


def _count(op: Any, variant: str, dtype: torch.dtype | None) -> int:
    if variant == "error_inputs":
        return opinfo_source.error_count(op)[0]
    return opinfo_source.variant_counts(op, dtype)[0][variant]  # type: ignore[arg-type]


def _fresh(op: Any, variant: str, dtype: torch.dtype | None, count: int) -> list[Any]:
    """The first samples of one uninterrupted pass, as the index counts them."""
    if variant == "error_inputs":
        items: Iterator[Any] = opinfo_source._errors(op)
    else:
        assert dtype is not None
        items = opinfo_source._samples(op, dtype, requires_grad=variant == "backward")
    return list(itertools.islice(items, count))


def _leaves(item: Any) -> list[Any]:
    """Every value a case reads from a sample or error input, in a fixed order."""
    extra: list[Any] = []
    if hasattr(item, "sample_input"):  # ErrorInput
        extra = [item.error_type, item.error_regex]
        item = item.sample_input
    out: list[Any] = []

    def walk(obj: Any) -> None:
        if isinstance(obj, list | tuple):
            out.append(type(obj))
            for o in obj:
                walk(o)
        elif isinstance(obj, dict):
            for key in sorted(obj, key=str):
                out.append(key)
                walk(obj[key])
        else:
            out.append(obj)

    walk([item.input, item.args, item.kwargs])
    return out + extra


def _assert_same(got: Any, want: Any) -> None:
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for a, b in zip(got_leaves, want_leaves, strict=True):
        if isinstance(b, torch.Tensor):
            assert isinstance(a, torch.Tensor)
            assert a.requires_grad == b.requires_grad
            assert a.layout == b.layout
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
            assert a.stride() == b.stride() or a.layout != torch.strided
        elif callable(b) and not isinstance(b, type):
            assert type(a) is type(b)
        else:
            assert a == b or (a != a and b != b)  # NaN scalars


def _disturb(rng: random.Random, other: Any) -> None:
    """What cases do between two requests: draw from every global RNG, use a pass."""
    torch.randn(rng.randrange(1, 50))
    torch.randn(3)  # leaves a cached normal sample in some generators
    random.random()
    random.gauss(0, 1)
    numpy.random.rand(rng.randrange(1, 5))
    opinfo_source.build_sample(other, "forward", torch.float32, rng.randrange(9), 5)


def _indices(order: str, count: int) -> list[int]:
    indices = list(range(count))
    if order == "random":  # restarts cost a pass each: a dozen is enough
        indices = indices[:12]
        random.Random(count).shuffle(indices)
    if order == "every_other":
        indices = indices[::2]
    return indices


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(("name", "variant", "dtype", "limit"), STREAMS)
def test_live_pass_gives_the_samples_of_a_fresh_pass(
    name: str, variant: str, dtype: torch.dtype | None, limit: int, order: str
) -> None:
    """Samples asked in any order, with RNG draws and other passes in between, equal
    tensor for tensor (requires_grad included) the same samples from a fresh pass."""
    op = opinfo_source.find_op(name)
    other = opinfo_source.find_op("mul")
    count = min(limit or 10**9, _count(op, variant, dtype))
    assert count > 3
    SAMPLE_STREAMS.clear()
    rng = random.Random(0)
    built = {}
    for index in _indices(order, count):
        _disturb(rng, other)
        built[index] = opinfo_source.build_sample(op, variant, dtype, index, seed=11)
    fresh = _fresh(op, variant, dtype, count)
    for index, item in built.items():
        _assert_same(item, fresh[index])


def test_a_continued_pass_starts_the_generator_once() -> None:
    """Increasing requests of one pass continue it: the generator starts once, not per
    sample (what makes running every sample of an op linear)."""
    starts = []

    def start() -> Iterator[int]:
        starts.append(1)
        return iter(range(100))

    streams = SampleStreams(capacity=2)
    assert [streams.item("k", start, i) for i in (0, 1, 5, 6, 50)] == [0, 1, 5, 6, 50]
    assert len(starts) == 1
    assert streams.item("k", start, 50) == 50  # already handed out: starts again
    assert len(starts) == 2


def test_the_same_index_twice_gives_two_objects() -> None:
    """Two requests of one sample never share a SampleInput or its tensors."""
    op = opinfo_source.find_op("add")
    first = opinfo_source.build_sample(op, "forward", torch.float32, 3, seed=1)
    second = opinfo_source.build_sample(op, "forward", torch.float32, 3, seed=1)
    assert first is not second and first.input is not second.input
    _assert_same(first, second)


def test_case_draws_depend_on_the_case_seed_only() -> None:
    """After a sample is built from a live pass, the global RNGs hold the case seed."""
    op = opinfo_source.find_op("masked.var")
    opinfo_source.build_sample(op, "forward", torch.float32, 0, seed=99)
    torch.randn(5)
    opinfo_source.build_sample(op, "forward", torch.float32, 4, seed=99)
    drawn = (torch.rand(4), random.random(), numpy.random.rand())
    opinfo_source.seed_everything(99)
    assert torch.equal(drawn[0], torch.rand(4))
    assert drawn[1:] == (random.random(), numpy.random.rand())


def test_lru_keeps_the_last_passes() -> None:
    """Beyond its capacity the least recently used pass is dropped and starts again."""
    starts: list[str] = []

    def starter(key: str) -> Any:
        return lambda: starts.append(key) or iter(range(10))

    streams = SampleStreams(capacity=2)
    for key in ("a", "b", "c"):
        streams.item(key, starter(key), 0)
    assert len(streams) == 2
    streams.item("c", starter("c"), 1)
    streams.item("a", starter("a"), 1)
    assert starts == ["a", "b", "c", "a"]


def test_generator_errors_drop_the_pass_and_name_the_sample() -> None:
    """An exception inside the generator becomes OracleUnavailable, and the pass is not
    kept; a pass that ends early says the sample does not exist."""

    class Broken:
        name, variant_test_name = "broken_op", ""

        @staticmethod
        def sample_inputs_func(*_: Any) -> Iterator[Any]:
            yield "zero"
            yield "one"
            raise ValueError("generator bug")

    op = Broken()
    before = len(SAMPLE_STREAMS)
    SAMPLE_STREAMS.clear()
    assert opinfo_source.build_sample(op, "forward", torch.float32, 0, 1) == "zero"
    assert len(SAMPLE_STREAMS) == 1
    with pytest.raises(OracleUnavailable, match="sample 2 of broken_op: ValueError"):
        opinfo_source.build_sample(op, "forward", torch.float32, 2, 1)
    assert len(SAMPLE_STREAMS) == 0 <= before
    streams = SampleStreams()
    with pytest.raises(PassExhausted):
        streams.item("short", lambda: iter(range(2)), 2)
    assert len(streams) == 0


def test_a_pass_suspended_inside_a_mode_is_not_kept() -> None:
    """A generator that yields inside no_grad is closed at once, as a fresh pass is, so
    the cases never run with grad mode turned off by it."""

    def start() -> Iterator[int]:
        with torch.no_grad():
            yield from range(5)

    streams = SampleStreams()
    assert streams.item("no_grad", start, 1) == 1
    assert torch.is_grad_enabled()
    assert len(streams) == 0


def test_seed_everything_matches_manual_seed_and_seeds_the_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Same CPU/random/numpy streams as torch.manual_seed; a PrivateUse1 backend too."""
    import random as pyrandom
    import types

    import numpy
    import torch
    from torchcts_cases.opinfo_source import seed_everything

    seeded: list[int] = []
    backend = types.SimpleNamespace(
        manual_seed_all=seeded.append, _is_in_bad_fork=lambda: False
    )
    monkeypatch.setattr(torch, "fakedev", backend, raising=False)
    monkeypatch.setattr(torch._C, "_get_privateuse1_backend_name", lambda: "fakedev")
    seed_everything(1234)
    ours = (torch.randn(4), pyrandom.random(), numpy.random.rand())
    torch.manual_seed(1234)
    pyrandom.seed(1234)
    numpy.random.seed(1234)
    theirs = (torch.randn(4), pyrandom.random(), numpy.random.rand())
    assert torch.equal(ours[0], theirs[0]) and ours[1:] == theirs[1:]
    assert seeded[0] == 1234


EXIT_SCRIPT = textwrap.dedent(
    """
    import atexit, sys

    passes = []

    @atexit.register  # registered before the streams' own handler: runs after it
    def report():
        alive = sum(1 for g in passes if g.gi_frame is not None)
        print(f"passes alive at exit: {alive}", file=sys.stderr)

    import torch
    from torchcts_cases import opinfo_source

    opinfo_source.build_sample(opinfo_source.find_op("sum"), "forward", torch.float32, 1, 0)
    passes.extend(p.items for p in opinfo_source.SAMPLE_STREAMS._passes.values())
    assert passes and all(g.gi_frame is not None for g in passes)
    """
)


def test_live_passes_are_closed_at_exit_before_teardown() -> None:
    """A process that exits holding live passes closes them in its atexit handlers,
    while torch is whole, and prints no "Exception ignored" on its way out."""
    ended = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ended.returncode == 0, ended.stderr
    assert "passes alive at exit: 0" in ended.stderr, ended.stderr
    assert "Exception ignored" not in ended.stderr, ended.stderr
