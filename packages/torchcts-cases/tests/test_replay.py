"""Saved inputs: a case replayed from its capsule builds the same sample and reaches
the same results as the case built from OpInfo; anything else is never replayed."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torchcts_cases import Selection, get_case, prepare, select_cases, use_inputs_from
from torchcts_cases.replay import capture, load, name_of, resolve
from torchcts_schema import CAPABILITY_NAMES, Manifest

MakeManifest = Callable[..., Manifest]
# one case per variant, and samples with kwargs, several tensors and python numbers
CASES = (
    "opinfo/mul/forward/int64/0",
    "opinfo/add/method/float32/2",
    "opinfo/add/inplace/float32/1",
    "opinfo/add/out/float32/0",
    "opinfo/mul/backward/float32/1",
    "opinfo/cat/error_inputs/-/1",
    "opinfo/add/noncontiguous/float32/0",
    "opinfo/softmax/nonfinite/float32/5",  # NaN placed again on the sample read back
    "opinfo/clamp/forward/float32/3",
    "opinfo/index_select/forward/float32/0",
)


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """Every capability, float32 and int64."""
    caps = list(CAPABILITY_NAMES)
    return make_manifest(DTYPES={"float32": True, "int64": True}, CAPABILITIES=caps)


@pytest.fixture
def capsules(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """case id -> capsule file; the finder the runner would install reads it."""
    found: dict[str, Path] = {}
    use_inputs_from(found.get)
    yield found
    use_inputs_from(None)


def _save(tmp_path: Path, case_id: str, data: bytes | None) -> Path:
    assert data is not None, f"{case_id}: no capsule"
    path = tmp_path / (case_id.replace("/", "~") + ".pt")
    path.write_bytes(data)
    return path


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.stride() == b.stride()
            and torch.equal(a.nan_to_num(0.5), b.nan_to_num(0.5))
        )
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b) or repr(a) == repr(b)


@pytest.mark.parametrize("case_id", CASES)
def test_a_replayed_case_runs_and_judges_like_the_opinfo_case(
    case_id: str, manifest: Manifest, capsules: dict[str, Path], tmp_path: Path
) -> None:
    """Same sample, same CPU reference, same device run, same verdict."""
    spec = get_case(case_id)
    built = prepare(spec, manifest)
    expected = built.reference()
    observed = built.run_on("cpu")
    capsules[case_id] = _save(tmp_path, case_id, built.saved_inputs())  # type: ignore[attr-defined]
    use_inputs_from(capsules.get)  # what was looked up before the file existed is gone

    replayed = prepare(spec, manifest)
    assert replayed._replay is not None  # type: ignore[attr-defined]
    assert _equal(built.inputs(), replayed.inputs())
    again = replayed.reference()
    assert _equal(expected, again)
    assert _equal(observed, replayed.run_on("cpu"))
    assert replayed.judge(again, observed) == built.judge(expected, observed)


def test_callables_are_named_exactly() -> None:
    """A name resolves to the very object, in a known namespace only."""
    for target in (
        torch.mul,
        torch.Tensor.mul_,
        torch.nn.functional.relu,
        torch.fft.fft,
    ):
        name = name_of(target)
        assert name is not None and resolve(name) is target
    assert name_of(lambda x: x) is None
    assert name_of(torch.Tensor.mul) == "torch.Tensor:mul"  # not torch.mul
    for bad in ("os:system", "torch:__class__x", "builtins:eval", 3, "torch"):
        with pytest.raises(LookupError):
            resolve(bad)


def test_no_capsule_where_it_would_not_be_exact(manifest: Manifest) -> None:
    """A lambda variant or a view among the inputs: nothing is saved."""
    spec = get_case("opinfo/mul/forward/float32/1")
    case = prepare(spec, manifest)
    info = case.op  # type: ignore[attr-defined]
    item = case.item()  # type: ignore[attr-defined]

    class Lambdas:
        name, variant_test_name = info.name, info.variant_test_name
        method_variant = inplace_variant = None

        @staticmethod
        def op(*args: Any, **kwargs: Any) -> Any:
            return torch.mul(*args, **kwargs)

    assert capture(spec, Lambdas, item) is None
    base = torch.arange(6.0)
    viewed = type(item)(base[1:4], args=(torch.ones(3),))
    assert capture(spec, info, viewed) is None
    where = prepare(get_case("opinfo/where/forward/float32/0"), manifest)
    assert where.saved_inputs() is None  # type: ignore[attr-defined]  # OpInfo's op is a lambda


def test_damaged_stale_and_crafted_capsules_are_ignored(
    manifest: Manifest, capsules: dict[str, Path], tmp_path: Path
) -> None:
    """None of these replays: the case builds from OpInfo, and no code runs."""
    spec = get_case("opinfo/mul/forward/int64/0")
    good = prepare(spec, manifest).saved_inputs()  # type: ignore[attr-defined]
    data = torch.load(io.BytesIO(good), weights_only=True)
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self) -> tuple[Any, ...]:
            return (Path.touch, (marker,))

    variants = {
        "garbage": b"\x00not a capsule",
        "other case": _saved({**data, "case_id": "opinfo/mul/forward/int64/1"}),
        "other torch": _saved({**data, "torch": "1.0.0"}),
        "unknown callable": _saved({**data, "callables": {"op": "os:system"}}),
        "code": pickle.dumps({"format": 1, "x": Evil()}),
    }
    for label, blob in variants.items():
        path = tmp_path / f"{label}.pt"
        path.write_bytes(blob)
        assert load(path, spec.case_id) is None, label
        capsules[spec.case_id] = path
        use_inputs_from(capsules.get)
        assert prepare(spec, manifest)._replay is None, label  # type: ignore[attr-defined]
    assert not marker.exists()


def _saved(obj: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


WARM = """
import sys
from pathlib import Path
import torchcts_cases as cases
from torchcts_schema import load_manifest
manifest = load_manifest(sys.argv[1])
found = {cid: Path(p) for cid, p in zip(sys.argv[2::2], sys.argv[3::2])}
cases.use_inputs_from(found.get)
specs = [cases.get_case(cid) for cid in ("opinfo/mul/forward/int64/0",) + tuple(sys.argv[4 + len(found) * 2 - 2:])]
cases.warm_up(specs)
case = cases.prepare(specs[0], manifest)
case.judge(case.reference(), case.run_on("cpu"))
print("torch.testing._internal.common_methods_invocations" in sys.modules)
"""


def test_warm_up_skips_opinfo_only_when_every_case_replays(
    make_manifest: MakeManifest, tmp_path: Path
) -> None:
    """All replayed: OpInfo is never imported. One case without: it is, as before."""
    manifest = make_manifest(DTYPES={"int64": True, "float32": True})
    spec = get_case("opinfo/mul/forward/int64/0")
    path = _save(tmp_path, spec.case_id, prepare(spec, manifest).saved_inputs())  # type: ignore[attr-defined]
    script = tmp_path / "warm.py"
    script.write_text(WARM, encoding="utf-8")
    base = [sys.executable, str(script), str(manifest.path), spec.case_id, str(path)]
    alone = subprocess.run(base, capture_output=True, text=True, check=True)
    assert alone.stdout.strip() == "False", alone.stderr
    other = [*base, "opinfo/add/forward/float32/0"]
    mixed = subprocess.run(other, capture_output=True, text=True, check=True)
    assert mixed.stdout.strip() == "True", mixed.stderr


def test_every_selected_variant_of_a_slice_saves_or_refuses_cleanly(
    manifest: Manifest,
) -> None:
    """capture never raises: it returns a capsule or None for whatever OpInfo builds."""
    selected = select_cases(manifest, Selection(op_globs=("add", "cat", "sort")))
    saved = 0
    for spec in selected.runnable[::7]:
        case = prepare(spec, manifest)
        try:
            case.item()  # type: ignore[attr-defined]
        except Exception:
            continue
        saved += case.saved_inputs() is not None  # type: ignore[attr-defined]
    assert saved > 0
