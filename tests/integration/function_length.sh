#!/usr/bin/env bash
# No function over 60 lines in the tree, and the checker catches one.
source "$(dirname "$0")/lib.sh"
CHECKER="$FLASHBED_SOURCE/tests/check_function_length.sh"
check "no function over 60 lines" bash "$CHECKER" "$FLASHBED_SOURCE"
mkdir -p "$WORK/fake/sim"
{
    printf 'static int short_one(void)\n{\n    return 0;\n}\n\n'
    printf 'int long_one(int x)\n{\n'
    for i in $(seq 1 59); do printf '    x += %d;\n' "$i"; done
    printf '    return x;\n}\n'
} > "$WORK/fake/sim/long.c"
out=$(bash "$CHECKER" "$WORK/fake")
rc=$?
check "a function of 63 lines fails" test $rc -ne 0
check "it is named with its length and place" grep -q "63 .*sim/long.c:6 *long_one" <<<"$out"
check "the short one is not listed" bash -c '! grep -q short_one <<<"$1"' _ "$out"
finish
