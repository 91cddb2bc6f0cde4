#!/usr/bin/env bash
# Set-up and the main job: installs what is missing, builds flashbed, and
# runs the paper's study at the quick tier (flashbed reproduce --quick:
# Fig. 2b beside fio, this machine's profile, traces, the policy study and
# Table 3's CPU rows measured beside the cost model) into
# results/reproduce-quick/, then prints where REPORT.md is. Run it again to
# resume after an interruption: finished steps are not run twice.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
out=results/reproduce-quick
build/flashbed reproduce --quick --out "$out"
echo
echo "report: $out/REPORT.md (every table and plot; each result folder beside it has its own provenance)"
