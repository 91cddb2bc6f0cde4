#!/usr/bin/env bash
# Set-up and every test: installs what is missing (with, where Debian has
# them, numpy and PyTorch for the Python tests), builds flashbed, runs the
# CTest suite, then builds again with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the tests under it (unit and integration: the harness threads too),
# then once more with the engine's portable loops instead of the host's vector
# kernels (what an Arm or older x86 machine runs), and runs the suite there.
# Each run replays every committed fuzz corpus (tests/fuzz: the fuzz_* tests,
# label fuzz); fuzzing itself is a separate clang build (tests/fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh --for-tests
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFLASHBED_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j"$jobs")

cmake -S . -B build-portable -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHBED_HOT_FLAGS= >/dev/null
cmake --build build-portable -j"$jobs"
(cd build-portable && ctest --output-on-failure -j"$jobs")
