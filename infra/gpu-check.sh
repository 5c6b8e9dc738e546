#!/bin/bash
# What this repository checks on a machine with an NVIDIA GPU, in one run (CI has none; see
# docs/debugging.md, "On a GPU"). Needs python3 with torch (CUDA build), numpy, psutil, httpx,
# rich and typer, pytest and nvidia-ml-py; nothing else of the suite (no services, no .venv).
#
#   bash infra/gpu-check.sh OUT [BEFORE]
#
# OUT receives env.txt (the GPU, driver, torch) and, by part (PARTS, default all of them):
#   record   record.log and h200_run.tar.gz: a run recorded by tests/data/cuda/record_h200_run.py
#   tests    pytest.log: tests/sdk/test_watch_gpu.py on the GPU
#   reduce   reduce.txt: benchmarks/bench_gpu_reduce.py (the reductions and hooks, kernel by kernel)
#   bench    bench.txt: benchmarks/bench_debug_overhead.py --device cuda; with BEFORE (another
#            checkout's services/ folder, e.g. main's) also bench-before.txt, that code's figures
# Each part has its own time limit and runs whatever the others did.
set -u
OUT=${1:?usage: bash infra/gpu-check.sh OUT [BEFORE]}
BEFORE=${2:-}
PARTS=${PARTS:-record tests reduce bench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$ROOT/services:$ROOT/workers:$ROOT" PROFILERHUB_URL=
{ nvidia-smi; python3 -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'; } > "$OUT/env.txt" 2>&1
echo "env rc=$?"
part() { [[ " $PARTS " == *" $1 "* ]]; }
if part record; then
    rm -rf /tmp/gpu-record && timeout 120 python3 tests/data/cuda/record_h200_run.py /tmp/gpu-record > "$OUT/record.log" 2>&1
    echo "record rc=$?"
    cp /tmp/gpu-record/h200_run.tar.gz "$OUT/" 2>/dev/null
fi
if part tests; then
    timeout 150 python3 -m pytest --noconftest -p no:cacheprovider -q -W default -rA tests/sdk/test_watch_gpu.py > "$OUT/pytest.log" 2>&1
    echo "pytest rc=$?"
fi
if part reduce; then
    timeout 120 python3 benchmarks/bench_gpu_reduce.py > "$OUT/reduce.txt" 2>&1
    echo "reduce rc=$?"
fi
if part bench; then
    BENCH=(benchmarks/bench_debug_overhead.py --device cuda --steps 10 --rounds 3 --paired 500)
    timeout 100 python3 "${BENCH[@]}" > "$OUT/bench.txt" 2>&1
    echo "bench rc=$?"
    if [ -n "$BEFORE" ]; then
        PYTHONPATH="$BEFORE:$ROOT/workers:$ROOT" timeout 100 python3 "${BENCH[@]}" > "$OUT/bench-before.txt" 2>&1
        echo "bench-before rc=$?"
    fi
fi
tail -n 4 "$OUT"/*.log "$OUT"/*.txt
