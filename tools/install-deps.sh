#!/usr/bin/env bash
# Installs the Debian packages flashbed needs, only those missing.
# Used by run-default.sh and run-tests.sh; safe to run again.
set -euo pipefail

packages=(build-essential cmake pkg-config git libcjson-dev liburing-dev gnuplot-nox fio python3)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3 may come from elsewhere (pyenv); any python3 on PATH will do.
if command -v python3 >/dev/null; then
    missing=("${missing[@]/python3}")
fi
want=()
for p in "${missing[@]}"; do [ -n "$p" ] && want+=("$p"); done
[ ${#want[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${want[*]}" >&2
sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y -q "${want[@]}" </dev/null; then
    "${sudo[@]}" apt-get update -q </dev/null
    "${sudo[@]}" apt-get install -y -q "${want[@]}" </dev/null
fi
