#!/usr/bin/env bash
# No function longer than 60 lines anywhere (issue 29): a function that long
# no longer reads at once. Lists each one (tools/long-functions.py) and
# fails when any is found in the tree's C sources.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
here=$(cd "$(dirname "$0")/.." && pwd)
python3 "$here/tools/long-functions.py" -n "${FLASHBED_MAX_FUNCTION_LINES:-60}" "$root"
