#!/usr/bin/env bash
# The quantized dot products on AArch64, without an Arm machine: cross-builds
# the unit tests test_quant_dot and test_quant_dot_rows (and the few sources
# they need: no libcjson, no liburing) with aarch64-linux-gnu-gcc, statically,
# in three variants, and runs each under qemu-aarch64-static -cpu max:
#
#   neon          -march=armv8-a           NEON, widening multiplies
#   neon+dotprod  -march=armv8.2-a+dotprod NEON with the dot-product instructions
#   portable      -march=armv8-a+nosimd    no Advanced SIMD: the plain C forms
#
# Each test prints the form its library compiled (quant_dot_form) with its
# count of results bit-identical to the portable form; a variant passes when
# both tests pass and both name the form that variant targets (so a NEON
# variant that silently built the portable form fails).
#
# The flags are the build's: C11 (which keeps -ffp-contract=off: no fused
# multiply-adds, the same f32 steps in every form), -Wall -Wextra -Werror
# -Wswitch-enum, -O3 for the hot files (engine/CMakeLists.txt), -O2 for the
# rest. The two test files get -fno-tree-vectorize besides: gcc 12.2's
# aarch64 vectoriser stops with an internal compiler error on
# test_quant_dot.c (vect_transform_reduction); the library is built as usual.
#
# Usage: tools/check-arm.sh [WORK_DIR]   (default: a temporary folder, removed)
#   ARM_CC, ARM_QEMU   the cross compiler and emulator to use
# Exit status: 0 all passed, 1 something failed, 77 (with a line saying so)
# where the cross compiler or the emulator is not installed
# (tools/install-deps.sh: gcc-aarch64-linux-gnu, qemu-user-static).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cc=${ARM_CC:-aarch64-linux-gnu-gcc}
qemu=${ARM_QEMU:-qemu-aarch64-static}
if ! command -v "$cc" >/dev/null || ! command -v "$qemu" >/dev/null; then
    echo "skipped: aarch64-linux-gnu-gcc / qemu-aarch64-static not installed"
    exit 77
fi

if [ $# -ge 1 ]; then
    work=$1
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi

cflags=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wswitch-enum -I"$root" -I"$root/tests/unit")
hot=(engine/compute/quant_dot.c engine/compute/quant_dot_k8.c engine/compute/quant_act.c
     engine/model/dtype_quant.c engine/compute/cpu_kernels.c engine/compute/membw.c)
rest=(engine/model/dtype.c common/wtype.c engine/compute/threadpool.c common/settings.c
      common/cpu_pin.c common/errbuf.c)
rows_needs=(quant_dot quant_dot_k8 quant_act dtype_quant dtype wtype)

# compile DIR FLAGS... SOURCE: SOURCE's object into DIR
compile() {
    local dir=$1 src=${*: -1}
    "$cc" "${cflags[@]}" "${@:2:$#-2}" -c "$root/$src" -o "$dir/$(basename "${src%.c}").o"
}

# build VARIANT MARCH: the two test binaries into $work/VARIANT
build() {
    local dir=$work/$1 march=$2 src o lib=() rows_lib=()
    mkdir -p "$dir"
    for src in "${hot[@]}"; do compile "$dir" -O3 -march="$march" "$src" || return 1; done
    for src in "${rest[@]}"; do compile "$dir" -O2 -march="$march" "$src" || return 1; done
    for src in tests/unit/test_quant_dot.c tests/unit/test_quant_dot_rows.c; do
        compile "$dir" -O2 -fno-tree-vectorize -march="$march" "$src" || return 1
    done
    for src in "${hot[@]}" "${rest[@]}"; do lib+=("$dir/$(basename "${src%.c}").o"); done
    for o in "${rows_needs[@]}"; do rows_lib+=("$dir/$o.o"); done
    "$cc" -static -o "$dir/test_quant_dot" "$dir/test_quant_dot.o" "${lib[@]}" -lm -lpthread &&
        "$cc" -static -o "$dir/test_quant_dot_rows" "$dir/test_quant_dot_rows.o" "${rows_lib[@]}" -lm
}

# run VARIANT TEST: prints the test's form and count lines and its summary;
# 0 where it passed and named the form VARIANT
run_one() {
    local variant=$1 test=$2 out status=0
    out=$("$qemu" -cpu max "$work/$variant/$test" 2>&1) || status=$?
    printf '%s\n' "$out" | grep -E '^quant_dot form:|checks, ' | sed "s/^/  $variant $test: /"
    if [ "$status" -ne 0 ]; then
        echo "  $variant $test: FAILED (exit status $status)"
        printf '%s\n' "$out" | tail -20 | sed 's/^/    /'
        return 1
    fi
    if ! grep -q "^quant_dot form: $variant;" <<<"$out"; then
        echo "  $variant $test: FAILED: its library did not compile the $variant form"
        return 1
    fi
}

failed=0
variants=("neon armv8-a" "neon+dotprod armv8.2-a+dotprod" "portable armv8-a+nosimd")
for v in "${variants[@]}"; do
    read -r name march <<<"$v"
    echo "check-arm: $name (-march=$march)"
    if ! build "$name" "$march"; then
        echo "  $name: FAILED to build"
        failed=1
        continue
    fi
    run_one "$name" test_quant_dot || failed=1
    run_one "$name" test_quant_dot_rows || failed=1
done
if [ "$failed" -ne 0 ]; then
    echo "check-arm: FAILED"
    exit 1
fi
echo "check-arm: all three variants passed"
