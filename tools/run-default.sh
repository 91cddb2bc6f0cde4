#!/usr/bin/env bash
# Set-up and the main job on a built-in default: installs what is missing,
# builds flashbed, and runs a short random-read sweep of a scratch file in
# results/, beside fio, with its plot.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
mkdir -p results
out="results/sweep-default-$(date -u +%Y%m%d-%H%M%S)"
build/flashbed sweep --file results/scratch.bin --size 1G \
    --chunks 4k,16k,64k,256k,1m --threads 1,4,16 --runtime 1 --ramp 0.25 \
    --compare-fio --plot --out "$out"
cat "$out/sweep.md"
echo
echo "results: $out/ (sweep.json, sweep.csv, sweep.md, throughput.png, throughput.svg)"
