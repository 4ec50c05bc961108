"""Diagnostic probes: can the backend import, create, copy and add in each declared
dtype, and does each declared capability work at its simplest?

They run in a child interpreter (``python -m torchcts_runner.probes``), so a probe that
crashes the backend cannot take the run with it. On a device torch itself provides
(no backend to import: cpu, meta) they run in the run's own process instead
(`LocalProbes`), which has torch loaded already for selection: a child would import
torch only to add a few tiny tensors (about 3 CPU-s beside the run's own start-up,
on the same cores). Probes are diagnostic only: they
never change which cases run. Failures go to
``<key>_harness_probe_failures_<pid>.jsonl``; pass, fail and total counts go to the run
metadata; a table with columns kind, probe, status, note is printed.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchcts_schema import JsonDict, ResultsLayout

PROBE_TIMEOUT_S = 120.0
PROBES_KIND = "probes"  # an isolation payload that asks for the probe table


def _row(kind: str, probe: str, check: Callable[[], str | None]) -> JsonDict:
    try:
        problem = check()
    except Exception as exc:  # a probe failure is data, never a harness crash
        problem = (
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        )
    status = "pass" if problem is None else "fail"
    return {"kind": kind, "probe": probe, "status": status, "note": problem or ""}


def _capability_checks(
    torch: Any, dev: str, meta: bool
) -> dict[str, Callable[[], str | None]]:
    def same(observed: Any, expected: Any) -> str | None:
        if observed.shape != expected.shape or observed.dtype != expected.dtype:
            return f"got {tuple(observed.shape)} {observed.dtype}"
        if meta or torch.equal(observed.cpu(), expected):
            return None
        return "values differ from CPU"

    # every probe builds its own tensors: on cpu `.to(dev)` returns the same tensor,
    # so sharing inputs would let one probe's mutation fail the next
    a, b = torch.arange(6.0).reshape(2, 3), torch.ones(2, 3)

    def on_dev(t: Any) -> Any:
        return t.clone().to(dev)

    def inplace() -> str | None:
        x = on_dev(a)
        x.add_(on_dev(b))
        return same(x, a + b)

    def out() -> str | None:
        o = torch.empty(2, 3, device=dev)
        torch.add(on_dev(a), on_dev(b), out=o)
        return same(o, a + b)

    def backward() -> str | None:
        x = on_dev(a).requires_grad_()
        (x * x).sum().backward()
        return same(x.grad, 2 * a)

    def error_inputs() -> str | None:
        try:
            torch.add(torch.ones(2, device=dev), torch.ones(3, device=dev))
        except RuntimeError:
            return None
        return "mismatched shapes did not raise"

    def nonfinite() -> str | None:
        x = torch.tensor([float("nan"), float("inf"), float("-inf"), 1.0])
        got = on_dev(x) * 2
        if meta:
            return None if got.shape == x.shape else f"got {tuple(got.shape)}"
        if torch.allclose(got.cpu(), x * 2, equal_nan=True):
            return None
        return f"NaN and Inf times 2 gave {got.cpu().tolist()}"

    def views() -> str | None:
        x = torch.zeros(6, device=dev)
        v = x.view(2, 3)
        return None if v._base is x else "view() does not alias its base"

    def mutation() -> str | None:
        x = on_dev(a)
        x.view(-1).add_(1)
        return same(x, a + 1)

    def rng() -> str | None:
        torch.manual_seed(0)
        first = torch.rand(4, device=dev)
        torch.manual_seed(0)
        return same(torch.rand(4, device=dev), first.cpu()) if not meta else None

    def serialization() -> str | None:
        buffer = io.BytesIO()
        torch.save(on_dev(a), buffer)
        buffer.seek(0)
        return same(torch.load(buffer), a)

    def device_mismatch() -> str | None:
        if dev == "cpu":
            return None
        try:
            torch.add(on_dev(a), b)
        except RuntimeError:
            return None
        return "mixing a cpu and a device tensor did not raise"

    return {
        "forward": lambda: same(torch.add(on_dev(a), on_dev(b)), a + b),
        "method": lambda: same(on_dev(a).add(on_dev(b)), a + b),
        "inplace": inplace,
        "out": out,
        "backward": backward,
        "error_inputs": error_inputs,
        "noncontiguous": lambda: same(on_dev(a).t().contiguous(), a.t().contiguous()),
        "nonfinite": nonfinite,
        "views": views,
        "mutation": mutation,
        "out_semantics": out,
        "memory_formats": lambda: same(
            torch.ones(1, 2, 2, 2)
            .to(dev)
            .contiguous(memory_format=torch.channels_last),
            torch.ones(1, 2, 2, 2).contiguous(memory_format=torch.channels_last),
        ),
        "copies": lambda: same(torch.empty(2, 3, device=dev).copy_(on_dev(a)), a),
        "factories": lambda: same(torch.zeros(2, 3, device=dev), torch.zeros(2, 3)),
        "rng": rng,
        "serialization": serialization,
        "device_mismatch": device_mismatch,
    }


def dtype_round_trip(torch: Any, device: str, dtype: Any, meta: bool) -> str | None:
    """Create ones of `dtype`, copy them to the device and back, add them there; None
    when every step gives what it should, else what went wrong.

    The expected values are made without CPU arithmetic and compared bit for bit, so
    a dtype the CPU cannot add or compare (float8: no ``equal``; uint16-64: no
    ``add``) is judged on what the device did, never failed by the host's side."""
    host = torch.ones(4, dtype=dtype)
    back = host.to(device).cpu() if not meta else host.to(device)
    if back.dtype != dtype or back.shape != host.shape:
        return f"round trip gave {back.dtype} {tuple(back.shape)}"
    if not meta and not _same_bits(torch, back, host):
        return "copy to the device and back changed the values"
    x = host.to(device)
    total = (x + x) if dtype is not torch.bool else (x | x)
    expected = torch.full((4,), 2 if dtype is not torch.bool else 1, dtype=dtype)
    if not meta and not _same_bits(torch, total.cpu(), expected):
        return "create, copy and add gave wrong values"
    return None


def _same_bits(torch: Any, a: Any, b: Any) -> bool:
    """Equal dtype, shape and bytes (through an integer view of the same width)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_complex():
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    if a.dtype is torch.bool:
        a, b = a.view(torch.uint8), b.view(torch.uint8)
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    bits = width[a.element_size()]
    return bool(torch.equal(a.contiguous().view(bits), b.contiguous().view(bits)))


def run_probes(manifest_path: str, device: str) -> list[JsonDict]:
    """Every probe, in this process (the child)."""
    from torchcts_schema import load_manifest

    from torchcts_runner.backend import ensure_backend

    manifest = load_manifest(manifest_path)
    rows = []
    problem = ensure_backend(manifest.backend_import, manifest.backend_options)
    name = manifest.backend_import or "(none)"
    rows.append(_row("import", f"backend {name}", lambda: problem))
    if problem is not None:
        return rows
    import torch

    meta = device == "meta"
    rows.append(
        _row(
            "device",
            f"create on {device}",
            lambda: (torch.empty(2, device=device), None)[1],
        )
    )
    for dtype_name, support in sorted(manifest.dtypes.items()):
        if support is False:
            continue
        dtype = getattr(torch, dtype_name, None)

        def check(dtype: Any = dtype) -> str | None:
            if dtype is None:
                return "this PyTorch has no such dtype"
            return dtype_round_trip(torch, device, dtype, meta)

        rows.append(_row("dtype", f"{dtype_name} create/copy/add", check))
    checks = _capability_checks(torch, device, meta)
    for capability in manifest.capabilities:
        check_fn = checks.get(capability)
        if check_fn is not None:
            rows.append(_row("capability", capability, check_fn))
    return rows


class ProbeRun:
    """The probe child, started once the run's first case has ended (`start`) and
    collected when the table is needed.

    Started with the run, it imported torch and the backend beside the controller
    and the xdist workers, on the same cores, while they imported theirs (simdev's
    level-1 run on 2 cores: four interpreters importing torch before the first
    case). Its table is read only at the session's end, so it waits for the workers
    to be running cases.
    """

    def __init__(
        self, manifest: Path, device: str, env: dict[str, str] | None = None
    ) -> None:
        self._command = [
            sys.executable,
            "-m",
            "torchcts_runner.probes",
            str(manifest),
            device,
        ]
        self._env = env
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        """Start the child, once."""
        if self._proc is None:
            self._proc = subprocess.Popen(
                self._command,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=self._env,
            )

    def result(self, timeout_s: float = PROBE_TIMEOUT_S) -> list[JsonDict]:
        """The probe rows (the child is started now if it was not); a crashed or
        hung probe child is itself a failed probe."""
        self.start()
        assert self._proc is not None
        try:
            out, err = self._proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.communicate()
            return [_failed_child(f"the probe process hung for {timeout_s:g}s")]
        if self._proc.returncode != 0:
            tail = (err.strip().splitlines() or [""])[-1]
            return [
                _failed_child(
                    f"the probe process exited with {self._proc.returncode}: {tail}"
                )
            ]
        try:
            rows = json.loads(out.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return [_failed_child("the probe process printed no result")]
        return list(rows)

    def kill(self) -> None:
        """Stop the child if it is still running."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.communicate()


def probes_beside_cases(manifest_path: str, device: str) -> list[JsonDict]:
    """Every probe, in a process that runs cases too: the CPU generator's state is
    restored after them (the rng probe seeds it), so the cases see the generator
    exactly as they would have."""
    import torch

    with torch.random.fork_rng(devices=[]):
        return run_probes(manifest_path, device)


class LocalProbes:
    """The probes run in this process, at once: `ProbeRun`'s interface, no child.

    For a device torch itself provides, in a process that has torch loaded
    (`probes_beside_cases`).
    """

    def __init__(self, manifest: Path, device: str) -> None:
        self._rows = probes_beside_cases(str(manifest), device)

    def start(self) -> None:
        """Nothing to start: they ran when this was made."""

    def result(self) -> list[JsonDict]:
        """The rows computed at start."""
        return list(self._rows)

    def kill(self) -> None:
        """Nothing runs."""


class PooledProbes:
    """The probes as one payload of the warm pool of ``--isolate all``: its child has
    torch and the backend loaded already, where a probe child would import them
    again on the same cores as the cases (1.8 CPU-s on the 2-core machine).

    `ProbeRun`'s interface; `run` returns the rows, or why the pool's child did not
    (a probe that crashed it is a failed probe, as a crashed probe child is)."""

    def __init__(self, run: Callable[[], list[JsonDict] | str]) -> None:
        self._run = run
        self._rows: list[JsonDict] | None = None

    def start(self) -> None:
        """Run the probes now (once), in the pool's child."""
        if self._rows is None:
            got = self._run()
            self._rows = (
                got
                if isinstance(got, list)
                else [_failed_child(f"the probe payload did not return: {got}")]
            )

    def result(self) -> list[JsonDict]:
        """The rows (run now if they were not)."""
        self.start()
        assert self._rows is not None
        return list(self._rows)

    def kill(self) -> None:
        """Nothing of its own runs."""


def _failed_child(note: str) -> JsonDict:
    return {"kind": "harness", "probe": "probe process", "status": "fail", "note": note}


def probe_counts(rows: list[JsonDict]) -> dict[str, int]:
    """``{"pass": n, "fail": m, "total": n + m}``."""
    passed = sum(1 for r in rows if r["status"] == "pass")
    return {"pass": passed, "fail": len(rows) - passed, "total": len(rows)}


def format_table(rows: list[JsonDict]) -> list[str]:
    """The printed table: kind, probe, status, note."""
    head = {"kind": "kind", "probe": "probe", "status": "status", "note": "note"}
    cols = ("kind", "probe", "status", "note")
    widths = {c: max(len(str(r[c])) for r in [head, *rows]) for c in cols[:3]}
    return [
        "  ".join(str(r[c]).ljust(widths[c]) for c in cols[:3])
        + "  "
        + str(r["note"])[:100]
        for r in [head, *rows]
    ]


def write_failures(
    results_dir: Path, run_key: str, pid: int, rows: list[JsonDict]
) -> Path | None:
    """Failure-only records, one JSON line each; None when every probe passed."""
    failures = [r for r in rows if r["status"] != "pass"]
    if not failures:
        return None
    path = ResultsLayout(results_dir, run_key).probe_failures(pid)
    with open(path, "a", encoding="utf-8") as fh:
        for row in failures:
            fh.write(
                json.dumps({"type": "harness_probe", **row}, sort_keys=True) + "\n"
            )
    return path


def main(argv: list[str]) -> int:
    """Child entry: ``python -m torchcts_runner.probes MANIFEST DEVICE``; prints JSON."""
    rows = run_probes(argv[0], argv[1])
    sys.stdout.write("\n" + json.dumps(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
