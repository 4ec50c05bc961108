#!/usr/bin/env bash
# The GPU check (README: "Check a GPU machine"):
#   tools/gpu-check.sh OUT [--budget-s 600] [--workers-per-device 4] ...
# runs manifests/cuda.py at level 2 and every hand-written suite it claims on this
# machine's NVIDIA GPUs within the time budget, and leaves scorecards, verified
# submission archives and gpu-check.txt in OUT. tools/gpu_check.py does the work; this
# script only picks the Python to run it with, one whose torch sees a GPU:
#   1. TORCHCTS_GPU_PYTHON, when set (nothing else is tried);
#   2. the project environment, .nox/torchcts (make env), or this check's own,
#      .nox/gpu-check, when its torch sees a GPU;
#   3. python3 on PATH, when its torch sees a GPU: with the TorchCTS packages as it is,
#      else .nox/gpu-check is built on top of it (--system-site-packages, torch pinned
#      to the installed build, so a CUDA torch is used and never replaced by the CPU
#      wheel constraints.txt names).
# Without any, the first Python found says in one line what to do and the check
# exits 6. Exit status: tools/gpu_check.py's docstring (torchcts-run's convention).
set -euo pipefail
root=$(cd -P "$(dirname "$0")/.." && pwd)
cd "$root"
own=.nox/gpu-check

sees_gpu() { "$1" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; }
has_tools() { "$1" -c 'import torchcts_runner, torchcts_report, torchcts_evidence' 2>/dev/null; }

build_own() {  # $1: a Python whose torch sees a GPU
    echo "gpu-check: building $own on $1 and its torch (kept as it is)" >&2
    "$1" -m venv --system-site-packages "$own"
    local version
    version=$("$own/bin/python" -c 'import torch; print(torch.__version__)')
    { grep -v '^torch==' constraints.txt; echo "torch==$version"; } >"$own/constraints.txt"
    local pip=("$own/bin/python" -m pip install -q --disable-pip-version-check)
    "${pip[@]}" -c "$own/constraints.txt" -r requirements-dev.txt
    local p editable=()
    for p in schema isolate cases simdev runner report evidence; do
        editable+=(-e "packages/torchcts-$p")
    done
    "${pip[@]}" --no-build-isolation -c "$own/constraints.txt" "${editable[@]}"
}

pick() {
    if [ -n "${TORCHCTS_GPU_PYTHON:-}" ]; then
        echo "$TORCHCTS_GPU_PYTHON"
        return
    fi
    local py system
    for py in .nox/torchcts/bin/python "$own/bin/python"; do
        if [ -x "$py" ] && sees_gpu "$py" && has_tools "$py"; then
            echo "$py"
            return
        fi
    done
    system=$(command -v python3 || true)
    if [ -n "$system" ] && sees_gpu "$system"; then
        if has_tools "$system"; then
            echo "$system"
        else
            if ! build_own "$system" >&2; then
                echo "gpu-check: building $own failed (pip said why, above); or set" \
                    "TORCHCTS_GPU_PYTHON to a Python with a CUDA torch and TorchCTS" >&2
                exit 3
            fi
            echo "$own/bin/python"
        fi
        return
    fi
    for py in .nox/torchcts/bin/python "$own/bin/python"; do
        if [ -x "$py" ]; then
            echo "$py"  # its torch sees no GPU: gpu_check.py says what to do
            return
        fi
    done
    echo "${system:-python3}"
}

python=$(pick)
exec "$python" tools/gpu_check.py "$@"
