#!/usr/bin/env bash
# Set-up and every test: installs what is missing (with, where Debian has
# them, numpy and PyTorch for the Python tests), builds flashbed, runs the
# CTest suite, then builds again with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the tests under it (unit and integration: the harness threads too),
# then once more with the engine's portable loops instead of the host's vector
# kernels (what an Arm or older x86 machine runs), and runs the suite there;
# that build is a Release build (-O3 -DNDEBUG), the type a user picks, whose
# optimizer finds "may be used uninitialized" and truncation warnings the
# others miss (-Werror makes them failures).
# Where nvcc is found (on PATH or in /usr/local/cuda/bin), the first build
# is the CUDA build: it compiles the cuda backend too (FLASHBED_CUDA=ON:
# nvcc with --Werror all-warnings, architectures 80;86;89;90) and runs the
# whole suite (the cuda tests skip, 77, without a GPU; the rest must
# pass); running it on a GPU is tools/gpu-check.sh's. The sanitizer build
# leaves CUDA out (its runtime is not instrumented), the portable build
# too (its concern is the CPU kernels).
# Each run replays every committed fuzz corpus (tests/fuzz: the fuzz_* tests,
# label fuzz); fuzzing itself is a separate clang build (tests/fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh --for-tests
jobs=$(nproc)
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
fi
cuda=OFF
if command -v nvcc >/dev/null 2>&1; then
    cuda=ON
else
    echo "run-tests: no nvcc: the cuda backend is not compiled" >&2
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHBED_CUDA=$cuda >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

# -O1, ASan's usual level: every check stays, and the compute-heavy tests
# (the real models' perplexity and greedy runs) no longer run unoptimized
# (CI's three suites must fit 20 minutes on 2 cores)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DFLASHBED_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
# use_tls=0: LeakSanitizer's scan of dynamic TLS reads a bogus range for
# PoCL's dlopen'd libraries on this glibc ("DTLS 6 at 0x77b-0x80000187d")
# and its tracer dies ("Tracer caught signal 11"), which layout alone
# decides (an opencl run's --out path one character longer); without it
# leaks are still found, only TLS is not a root.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=use_tls=0 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j"$jobs")

cmake -S . -B build-portable -DCMAKE_BUILD_TYPE=Release -DFLASHBED_HOT_FLAGS= -DFLASHBED_CUDA=OFF >/dev/null
cmake --build build-portable -j"$jobs"
(cd build-portable && ctest --output-on-failure -j"$jobs")

