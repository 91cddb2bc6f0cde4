#!/usr/bin/env bash
# Installs the Debian packages flashbed needs, only those missing.
# Used by run-default.sh and run-tests.sh; safe to run again.
# --for-tests: also, where Debian has them, python3-numpy and python3-torch
# (without recommends), which the Python tests use and skip without, and
# gcc-aarch64-linux-gnu and qemu-user-static, with which tools/check-arm.sh
# (the check_arm test, which skips without them) builds and runs the
# quantized dot products for AArch64; failing to install them is reported,
# not an error.
set -euo pipefail

# The OpenCL headers and ICD loader build the opencl backend; PoCL runs it
# on the CPU where there is no GPU (its test then runs, not skips).
packages=(build-essential cmake pkg-config git libcjson-dev liburing-dev gnuplot-nox fio python3
          ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd)
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

sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
apt_install() { # packages: install, updating the package lists once if that fails
    "${sudo[@]}" apt-get install -y -q "$@" </dev/null ||
        { "${sudo[@]}" apt-get update -q </dev/null && "${sudo[@]}" apt-get install -y -q "$@" </dev/null; }
}

if [ ${#want[@]} -gt 0 ]; then
    echo "install-deps: installing ${want[*]}" >&2
    apt_install "${want[@]}"
fi

if [ "${1:-}" = --for-tests ]; then
    optional=()
    for p in python3-numpy python3-torch; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || optional+=("$p")
    done
    if [ ${#optional[@]} -gt 0 ]; then
        echo "install-deps: installing ${optional[*]} for the Python tests" >&2
        apt_install --no-install-recommends "${optional[@]}" > /dev/null ||
            echo "install-deps: could not install ${optional[*]}: the tests that need them skip" >&2
    fi
    arm=()
    for p in gcc-aarch64-linux-gnu qemu-user-static; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || arm+=("$p")
    done
    if [ ${#arm[@]} -gt 0 ]; then
        echo "install-deps: installing ${arm[*]} for the AArch64 check (tools/check-arm.sh)" >&2
        apt_install --no-install-recommends "${arm[@]}" > /dev/null ||
            echo "install-deps: could not install ${arm[*]}: check_arm skips" >&2
    fi
fi
