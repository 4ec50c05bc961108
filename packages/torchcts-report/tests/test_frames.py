"""Crash text: harness frames dropped, the crash's own frames kept, one block if equal."""

from __future__ import annotations

import json

from torchcts_report import load_input, render_markdown
from torchcts_report.frames import backend_lines, same_text

HARNESS = [
    '  File ".nox/lib/python3.11/site-packages/_pytest/runner.py", line 184 in call',
    '  File ".nox/lib/python3.11/site-packages/pluggy/_manager.py", line 183 in _hook',
    '  File ".nox/lib/python3.11/site-packages/execnet/gateway_base.py", line 1 in run',
    '  File ".nox/lib/python3.11/site-packages/xdist/remote.py", line 227 in run_one',
]
DUMP = "\n".join(
    [
        "Fatal Python error: Segmentation fault",
        "",
        "Current thread 0x00007f (most recent call first):",
        '  File "packages/torchcts-simdev/src/torchcts_simdev/faults.py", line 70 in x',
        '  File "packages/torchcts-runner/src/torchcts_runner/execute.py", line 9 in y',
        *(HARNESS * 10),
    ]
)


def test_faulthandler_dump_keeps_the_backend_frames():
    """40 harness frames after two backend frames: the backend frames are shown."""
    shown = backend_lines(DUMP, 32)
    assert shown.splitlines() == [
        "[40 pytest, pluggy, execnet or xdist frame(s) left out]",
        *DUMP.splitlines()[:5],
    ]


def test_long_dump_keeps_the_crashing_thread_first_frames():
    """Over the line limit, the fault line and the crashing thread's frames stay."""
    other = ["Thread 0x1 (most recent call first):"] + [
        f'  File "worker.py", line {i} in wait' for i in range(50)
    ]
    text = "\n".join(["Fatal Python error: Aborted", *other, *DUMP.splitlines()[2:]])
    shown = backend_lines(text, 5).splitlines()
    assert shown[2:] == [
        "Fatal Python error: Aborted",
        "Current thread 0x00007f (most recent call first):",
        '  File "packages/torchcts-simdev/src/torchcts_simdev/faults.py", line 70 in x',
        '  File "packages/torchcts-runner/src/torchcts_runner/execute.py", line 9 in y',
    ]
    assert shown[1] == "[51 other line(s) left out]"


def test_python_traceback_keeps_its_last_lines_and_drops_harness_source():
    """A most-recent-call-last traceback keeps the exception; harness code lines go."""
    frames = []
    for i in range(10):
        frames += [f'  File "case.py", line {i}, in f{i}', f"    f{i + 1}()"]
    pytest_frame = [
        '  File "/venv/site-packages/_pytest/python.py", line 1, in call',
        "    return hook(item)",
    ]
    text = "\n".join(
        ["Traceback (most recent call last):", *pytest_frame, *frames, "E: boom"]
    )
    shown = backend_lines(text, 3).splitlines()
    assert shown == [
        "[1 pytest, pluggy, execnet or xdist frame(s) left out]",
        "[19 other line(s) left out]",
        '  File "case.py", line 9, in f9',
        "    f10()",
        "E: boom",
    ]


def test_same_text_means_one_holds_the_other():
    """Equal or contained texts are the same block; different ones are not."""
    assert same_text("a\nb\n", "a\nb")
    assert same_text("x\na\nb", "a\nb")
    assert not same_text("a", "b")
    assert not same_text("", "a")


def _crash_record(tmp_path, syn, stderr, traceback):  # type: ignore[no-untyped-def]
    syn.write(tmp_path, syn.artifact())
    crashes = tmp_path / "simdev_x86-64-2cpu_crashes"
    crashes.mkdir()
    record = {
        "case_id": "opinfo/sum/forward/float32/0",
        "stderr_tail": stderr,
        "traceback": traceback,
    }
    (crashes / "sum.json").write_text(json.dumps(record))
    text = render_markdown(load_input(tmp_path))
    return text[text.index("### Crash of") :]


def test_identical_stderr_and_traceback_show_once(tmp_path, syn):
    """The same text in both fields is one block, not two copies."""
    detail = _crash_record(tmp_path, syn, DUMP, DUMP)
    assert detail.count("faults.py") == 1
    assert "Stderr tail and traceback (the same text, shown once):" in detail
    assert "pluggy/_manager" not in detail


def test_different_stderr_and_traceback_show_both(tmp_path, syn):
    """Different texts are two blocks, each with its own title."""
    detail = _crash_record(tmp_path, syn, "warning: low memory", DUMP)
    assert "Stderr tail:" in detail and "Traceback:" in detail
    assert "warning: low memory" in detail and "faults.py" in detail
