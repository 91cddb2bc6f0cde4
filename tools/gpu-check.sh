#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU (issue 30): checks the cuda
# backend where CI cannot (CI only compiles it: no GPU there).
#
#   1. configures and builds build-cuda (FLASHBED_CUDA=ON, nvcc -Werror);
#   2. runs the backend tests on cuda: every test binary whose name has
#      "cuda" in it, test_backend_ops with the argument cuda where that test
#      exists, and CTest's label "backend"; a test that skips (77) here
#      fails: this machine has a GPU, so nothing may skip;
#   3. runs compute-sanitizer's memcheck, racecheck and synccheck over the
#      cuda test binaries;
#   4. decodes stories260K (../shared/data, or $FLASHBED_DATA) greedily with
#      `flashbed generate --backend cuda` and `--backend cpu`: the tokens
#      must be equal, and both decode rates are reported;
#   5. Table 3's GPU rows (issue 31): calibrates the device (`calibrate
#      --backend cuda`, which also measures this machine's disk), makes
#      OPT-6.7B's shape (synthetic f16 weights, `model make`) and runs naive
#      and all at the paper's budget (half the model) with --backend cuda,
#      then the same on OPT-1.3B, each beside `predict` on the calibrated
#      profile and the paper's 2218 ms (naive) and 84 ms (all, RTX 4090);
#   6. writes results/gpu-check/report.md: what passed, what failed, the
#      rates, the GPU rows, the GPU, driver and toolkit.
#
# Without a GPU, steps 5 and 6 run alone on another backend and tiny
# shapes, to check the script itself (ctest -L gpu-check):
#   GPU_CHECK_BACKEND=sim|opencl  the backend (default cuda: every step)
#   GPU_CHECK_TINY=1              opt-tiny in place of OPT-6.7B and -1.3B,
#                                 an 8 MiB disk sweep, few tokens
#   GPU_CHECK_FLASHBED=PATH       the flashbed to run (default build/flashbed)
#   GPU_CHECK_OUT=DIR             the report's folder (default results/gpu-check)
#   GPU_CHECK_SHAPES="A B"        step 5's shapes, in order (default "opt-1.3b
#                                 opt-6.7b": the small one first, so that a
#                                 machine lent for minutes measures it; the
#                                 whole check did not finish in 8 minutes on
#                                 an H200: it was still on OPT-6.7B's runs)
#
# Exit status: 0 when everything passed, 1 when anything failed, 77 (with
# one line saying so) where there is no GPU: nvidia-smi absent or listing
# none, or the CUDA runtime counting no device (backend cuda only).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)
backend=${GPU_CHECK_BACKEND:-cuda}
tiny=${GPU_CHECK_TINY:-0}
out=${GPU_CHECK_OUT:-results/gpu-check}
build="build-cuda"
data=${FLASHBED_DATA:-$root/../shared/data}
jobs=$(nproc)
fb=${GPU_CHECK_FLASHBED:-$root/build/flashbed}
[ "$backend" = cuda ] && fb="$root/$build/flashbed"
case $backend in cuda | opencl | sim) ;; *) echo "gpu-check: GPU_CHECK_BACKEND: cuda, opencl or sim, not '$backend'"; exit 2 ;; esac

if [ "$backend" = cuda ] && { ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
    echo "gpu-check: no NVIDIA GPU here (nvidia-smi absent or listing none); nothing checked"
    exit 77
fi
if ! command -v nvcc >/dev/null 2>&1; then
    [ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
fi
sanitizer=$(command -v compute-sanitizer || true)
[ -z "$sanitizer" ] && [ -x "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/compute-sanitizer" ] &&
    sanitizer="$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/compute-sanitizer"

mkdir -p "$out"
out=$(cd "$out" && pwd)
log="$out/log.txt"
: >"$log"
rows=()   # "| check | result |" lines of the report
failed=0

# step NAME COMMAND...: runs it (output to the log), records PASS/FAIL.
step() {
    local name=$1
    shift
    echo "== $name ($(date -u +%T)): $*" >>"$log"
    if "$@" >>"$log" 2>&1; then
        rows+=("| $name | pass |")
        echo "gpu-check: $name: pass"
    else
        local rc=$?
        rows+=("| $name | **FAIL** (exit $rc) |")
        echo "gpu-check: $name: FAIL (exit $rc; see $log)"
        failed=1
    fi
}

# A test that must run here: exit 77 (skipped) is a failure on a GPU.
must_run() {
    "$@"
    local rc=$?
    [ $rc -eq 77 ] && echo "skipped on a machine with a GPU: counted as a failure"
    return $rc
}

# The generated token ids of two generate --json files: equal, not empty.
same_tokens() {
    local ids='import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(str(t["id"]) for t in d["tokens"]))'
    local a b
    a=$(python3 -c "$ids" "$1") && b=$(python3 -c "$ids" "$2") || return 1
    echo "cpu:  $a"
    echo "cuda: $b"
    [ -n "$a" ] && [ "$a" = "$b" ]
}

source "$root/tools/gpu-rows.sh"
rates=()
if [ "$backend" = cuda ]; then
step "configure build-cuda (FLASHBED_CUDA=ON)" \
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHBED_CUDA=ON
step "build build-cuda (nvcc --Werror all-warnings)" cmake --build "$build" -j"$jobs"

# The device, as the CUDA runtime sees it: no device is a skip, not a failure.
if [ -x "$build/tests/test_backend_cuda" ]; then
    probe=$("$build/tests/test_backend_cuda" 2>&1)
    if [ $? -eq 77 ]; then
        echo "gpu-check: the CUDA runtime sees no device: ${probe#*skipped: }"
        exit 77
    fi
fi

cuda_tests=()
for t in "$build"/tests/*cuda*; do
    [ -x "$t" ] && [ -f "$t" ] && cuda_tests+=("$t")
done
for t in "${cuda_tests[@]}"; do
    step "test $(basename "$t")" must_run "$t"
done
if [ -x "$build/tests/test_backend_ops" ]; then
    step "test_backend_ops cuda" must_run "$build/tests/test_backend_ops" cuda
    sanitized=("${cuda_tests[@]}" "$build/tests/test_backend_ops cuda")
else
    rows+=("| test_backend_ops cuda | absent from this tree: not run |")
    sanitized=("${cuda_tests[@]}")
fi
step "ctest -L backend" bash -c "cd '$build' && ctest --output-on-failure -L backend"

if [ -z "$sanitizer" ]; then
    rows+=("| compute-sanitizer | **FAIL**: not found (CUDA toolkit's bin/) |")
    failed=1
else
    for tool in memcheck racecheck synccheck; do
        extra=()
        [ $tool = memcheck ] && extra=(--leak-check full)
        for t in "${sanitized[@]}"; do
            read -r -a cmd <<<"$t"
            name="$(basename "${cmd[0]}")${cmd[1]:+ ${cmd[*]:1}}"
            step "compute-sanitizer $tool $name" "$sanitizer" --tool $tool "${extra[@]}" --error-exitcode 99 "${cmd[@]}"
        done
    done
fi

# Decode: greedy tokens on cuda equal cpu's, and the rates of both.
src="$data/models/stories260K"
rates=()
if [ -f "$src/stories260K.bin" ] && [ -f "$src/tok512.bin" ]; then
    m="$build/gpu-check/s260"
    rm -rf "$m"
    step "convert stories260K" "$build/flashbed" convert "$src/stories260K.bin" --tokenizer "$src/tok512.bin" --out "$m"
    for be in cpu cuda; do
        step "generate --backend $be" "$build/flashbed" generate --model "$m" --backend $be --prompt "Once upon a time" \
            --temperature 0 -n 200 --json "$out/generate-$be.json"
    done
    step "greedy tokens: cuda equals cpu" same_tokens "$out/generate-cpu.json" "$out/generate-cuda.json"
    for be in cpu cuda; do
        r=$(python3 -c 'import json,sys; print("%.1f" % json.load(open(sys.argv[1]))["summary"]["generation_tokens_per_second"])' \
            "$out/generate-$be.json" 2>/dev/null || echo "n/a")
        rates+=("| $be | $r |")
    done
else
    rows+=("| decode stories260K | **FAIL**: not found under $data/models/stories260K |")
    failed=1
fi

fi
gpu_rows

{
    echo "# gpu-check"
    echo
    echo "- when: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "- tree: $(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)"
    if [ "$backend" = cuda ]; then
        echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
        echo "- nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo unknown)"
        echo "- compute-sanitizer: ${sanitizer:-not found}"
    else
        echo "- backend: $backend (GPU_CHECK_BACKEND), tiny shapes: $tiny (GPU_CHECK_TINY): a check of this script, no GPU"
    fi
    echo
    echo "| check | result |"
    echo "|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    if [ "$backend" = cuda ]; then
        echo "## Decode rate: stories260K, greedy, 200 tokens (generation tokens/s)"
        echo
        echo "| backend | tokens/s |"
        echo "|---|---|"
        [ ${#rates[@]} -gt 0 ] && printf '%s\n' "${rates[@]}"
        echo
    fi
    [ -f "$out/gpu-rows.md" ] && cat "$out/gpu-rows.md"
    echo "Overall: $([ $failed -eq 0 ] && echo "all passed" || echo "FAILURES (details in log.txt)")"
} >"$out/report.md"
echo "gpu-check: report in $out/report.md"
exit $failed
