#!/usr/bin/env bash
# Regenerate the committed sample result sets in results/samples/ (see its README).
#
# Two runs on simdev with the demo fault profile, from the repository root so that every
# path the runner records is relative:
#   focused/     a focused development run: a few ops and dtypes a developer is fixing
#   regression/  a broader regression run: the simdev manifest's whole level-1 selection
# Each keeps its canonical history artifact, the latest reference, the reports, the
# runlog, crash records and diagnostics; the journal (the in-run durability layer, the
# same cases again) is dropped to keep the repository small. The script refuses to
# finish when a file names this host, user or checkout path.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
RUN="$VENV/bin/torchcts-run"
REPORT="$VENV/bin/python -m torchcts_report"
MANIFEST=${MANIFEST:-manifests/simdev.py}
SAMPLES=results/samples
export TORCHCTS_SIMDEV_PROFILE=demo

sample_run() {
    local name=$1
    shift
    local out="$SAMPLES/$name"
    rm -rf "$out"
    mkdir -p "$out"
    # case failures are data: pytest exits 1 when any case failed; 2+ is a real error
    local rc=0
    "$RUN" --manifest "$MANIFEST" --results "$out" --quiet "$@" || rc=$?
    if [ "$rc" -gt 1 ]; then
        echo "make_samples: the $name run failed with exit code $rc" >&2
        exit "$rc"
    fi
    # the probe table is a cache of this machine's backend build, not a result
    rm -f "$out"/.*_probes.json
    # a filtered run writes its own folder, selections/<name>/ (so it never replaces
    # a full run's files); a sample set is that one folder, moved up to $out
    if [ -d "$out/selections" ]; then
        local run_dir
        run_dir=$(ls -d "$out"/selections/*/)
        mv "$run_dir"* "$out"/
        rm -rf "$out/selections"
    fi
    rm -f "$out"/*_journal.jsonl
    rm -rf "$out"/.*_scratch "$out"/.*_probes.json "$out"/.torchcts.lock
    # render again with the current renderer so the committed reports match it exactly
    $REPORT render "$out" >/dev/null
}

want=${1:-all}  # all | focused | regression
if [ "$want" = all ] || [ "$want" = focused ]; then
    sample_run focused --op cos --op exp --op abs --op sum --op where \
        --dtype float32 --dtype int64
fi
if [ "$want" = all ] || [ "$want" = regression ]; then
    sample_run regression --level 1
fi

# nothing that identifies this machine may be committed
leaks=0
for needle in "$PWD" "$HOME" "$(hostname)" "/home/" "/Users/"; do
    if [ -n "$needle" ] && grep -rIlF --exclude=README.md -- "$needle" "$SAMPLES"; then
        echo "make_samples: the files above contain '$needle'" >&2
        leaks=1
    fi
done
user=$(id -un)
if [ "$user" != "root" ] && grep -rIlw --exclude=README.md -- "$user" "$SAMPLES"; then
    echo "make_samples: the files above contain the user name" >&2
    leaks=1
fi
exit "$leaks"
