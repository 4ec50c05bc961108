"""The per-case coverage trace: what a case reaches, a resumable and incremental
build, a cache that is never trusted blindly, and surfaces looked up for records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchcts_cases import (
    case_surfaces,
    coverage_trace,
    get_case,
    index,
    surface_lookup,
)
from torchcts_cases.spec import CaseSpec
from torchcts_cases.trace_store import StoredTrace, encode, read_trace
from torchcts_schema import ExpectedSource

KEY = {"torch": "test", "index_version": 0, "opinfo": "x", "trace_version": 0}


def _spec(case_id: str, surfaces: tuple[str, ...] = ()) -> CaseSpec:
    suite, op, variant, *_ = case_id.split("/")
    return CaseSpec(
        case_id,
        suite,
        op,
        variant,
        "float32",
        int(case_id.rsplit("/", 1)[1]) if case_id[-1].isdigit() else None,
        1,
        ExpectedSource("cpu_reference"),
        variant,
        surfaces,
    )


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The trace cache in a temporary file, no seed, a fixed key, flush per case."""
    path = tmp_path / "trace.json"
    monkeypatch.setattr(coverage_trace, "trace_path", lambda: path)
    monkeypatch.setattr(coverage_trace, "seed_path", lambda: tmp_path / "no-seed")
    monkeypatch.setattr(coverage_trace, "trace_key", lambda: KEY)
    monkeypatch.setattr(coverage_trace, "FLUSH_SECONDS", 0.0)
    yield path
    surface_lookup.forget()


def test_a_case_records_the_overloads_its_call_dispatches() -> None:
    """add's forward case reaches add.Tensor; its out= case reaches add.out and not
    the functional reference, and neither counts the ops that built its inputs."""
    cpu = coverage_trace._manifest()
    forward = coverage_trace.reached_by(get_case("opinfo/add/forward/float32/0"), cpu)
    out = coverage_trace.reached_by(get_case("opinfo/add/out/float32/0"), cpu)
    assert "aten::add.Tensor" in forward
    assert "aten::add.out" in out and "aten::add.Tensor" not in out
    assert not any("rand" in n or "uniform" in n for n in forward | out)


def test_build_resumes_after_an_interruption_and_tops_up_new_cases(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted build keeps what it traced; the next traces only the rest; a
    grown catalog traces only its new ids; a current trace lists nothing."""
    cases = [_spec(f"opinfo/op{i}/forward/float32/0", ("aten::x",)) for i in range(3)]
    traced: list[str] = []
    stop_at = {"n": 2}

    def reached(spec: CaseSpec, manifest: object) -> set[str]:
        if len(traced) + 1 == stop_at["n"]:
            stop_at["n"] = -1
            raise KeyboardInterrupt
        traced.append(spec.case_id)
        return {f"aten::{spec.op}.Tensor"}

    monkeypatch.setattr(coverage_trace, "universe", lambda: list(cases))
    monkeypatch.setattr(coverage_trace, "reached_by", reached)
    monkeypatch.setattr(coverage_trace, "catalog_digest", lambda: "one")
    with pytest.raises(KeyboardInterrupt):
        coverage_trace.build(progress=lambda line: None)
    partial = read_trace(cache, KEY)
    assert partial is not None and not partial.complete
    assert [c for c, _ in partial.traced()] == ["opinfo/op0/forward/float32/0"]

    trace = coverage_trace.build(progress=lambda line: None)
    assert trace.complete and traced == [c.case_id for c in cases]
    assert trace.reached("opinfo/op2/forward/float32/0") == ("aten::op2.Tensor",)

    cases.append(_spec("views/new/check/-/-"))
    monkeypatch.setattr(coverage_trace, "catalog_digest", lambda: "two")
    coverage_trace.build(progress=lambda line: None)
    assert traced[3:] == ["views/new/check/-/-"]

    monkeypatch.setattr(coverage_trace, "universe", lambda: pytest.fail("listed"))
    assert coverage_trace.build().reached("views/new/check/-/-") == (
        "aten::new.Tensor",
    )


def test_a_damaged_or_foreign_trace_reads_as_absent(tmp_path: Path) -> None:
    """Junk, another key, and a position out of range are never trusted."""
    good = StoredTrace(key=KEY, complete=True)
    good.put("opinfo/add/forward/float32/0", ["aten::add.Tensor"])
    path = tmp_path / "t.json"
    path.write_bytes(encode(good, compress=True))
    assert read_trace(path, KEY) is not None
    assert read_trace(path, {**KEY, "torch": "other"}) is None
    damaged = [
        ("groups", "opinfo/add/forward/float32/", [7]),  # past the last set
        ("groups", "opinfo/add/forward/float32/", [-2]),  # below NOT_TRACED
        ("groups", "opinfo/add/forward/float32/", [True]),  # a bool is no position
        ("groups", "opinfo/add/forward/float32/", [0.0]),
        ("groups", "opinfo/add/forward/float32/", "0"),
        ("cases", "views/t/check", 1),
        ("declared", "views/t/check", "0"),
    ]
    for table, key, value in damaged:
        data = json.loads(encode(good))
        data[table][key] = value
        path.write_text(json.dumps(data))
        assert read_trace(path, KEY) is None, (table, value)
    data = json.loads(encode(good))
    data["cases"] = [0]
    path.write_text(json.dumps(data))
    assert read_trace(path, KEY) is None
    path.write_text("{not json")
    assert read_trace(path, KEY) is None


def test_records_name_the_reached_overloads_else_the_declared_surfaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """case_surfaces reads the trace: an overload list for a traced case, the
    spec's own surfaces for one the trace does not hold."""
    trace = StoredTrace(key=KEY, complete=True)
    trace.put("opinfo/add/forward/float32/3", ["aten::add.Tensor", "aten::detach"])
    monkeypatch.setattr(coverage_trace, "load", lambda: trace)
    surface_lookup.forget()
    traced = _spec("opinfo/add/forward/float32/3", ("aten::add",))
    untraced = _spec("opinfo/add/forward/float32/4", ("aten::add",))
    assert surface_lookup.case_surfaces(traced) == ("aten::add.Tensor", "aten::detach")
    assert surface_lookup.case_surfaces(untraced) == ("aten::add",)
    surface_lookup.forget()


def test_an_overload_cases_inputs_are_built_outside_the_trace() -> None:
    """A generated overload case reaches its overload; the draws that built its
    schema-built inputs (aten::rand.generator) are not what it reaches."""
    spec = get_case("aten/_add_relu.Tensor/call/float32/0")
    seen = coverage_trace.reached_by(spec, coverage_trace._manifest())
    assert "aten::_add_relu.Tensor" in seen
    assert "aten::rand.generator" not in seen


SURFACES_WITHOUT_TORCH = """
import sys
from torchcts_cases import case_surfaces, get_case
print(",".join(case_surfaces(get_case("opinfo/add/forward/float32/0"))))
print("torch imported" if "torch" in sys.modules else "torch not imported")
"""


def test_surfaces_are_looked_up_without_torch() -> None:
    """The xdist controller names a crashed case's overloads from the trace: reading
    it (key, cache or packaged seed) never imports torch, and the overloads are the
    ones a process with torch loaded reads."""
    surface_lookup.forget()  # this process reads the real trace too
    index.shard("float32")  # the index this process uses, built before the child
    out = subprocess.run(
        [sys.executable, "-c", SURFACES_WITHOUT_TORCH],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    ).stdout.splitlines()
    here = case_surfaces(get_case("opinfo/add/forward/float32/0"))
    assert "aten::add.Tensor" in here
    assert out == [",".join(here), "torch not imported"]
