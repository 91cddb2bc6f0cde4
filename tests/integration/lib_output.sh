#!/usr/bin/env bash
# Only cli/ prints: the library layers hold no print, and the checker
# catches one (and lets the allowed files be).
source "$(dirname "$0")/lib.sh"
CHECKER="$FLASHBED_SOURCE/tests/check_lib_output.sh"
check "the library layers do not print" bash "$CHECKER" "$FLASHBED_SOURCE"
mkdir -p "$WORK/fake/common" "$WORK/fake/engine/ffn" "$WORK/fake/cli"
printf 'void f(void)\n{\n    fprintf(stderr, "x");\n}\n' > "$WORK/fake/engine/ffn/bad.c"
printf '/* to stderr */\nint g(char *e, size_t n) { return snprintf(e, n, "x"); }\n' > "$WORK/fake/engine/ffn/good.c"
printf '#include "common/log.h"\n' > "$WORK/fake/common/uses_log.c"
printf 'void h(void) { fb_error("x"); }\n' > "$WORK/fake/common/log.c"
printf 'void k(void) { fb_error("x"); }\n' > "$WORK/fake/cli/cmd_x.c"
out=$(bash "$CHECKER" "$WORK/fake")
rc=$?
check "a print in a library fails" test $rc -ne 0
check "the print is named" grep -q "engine/ffn/bad.c:3:" <<<"$out"
check "including the logger is named" grep -q "common/uses_log.c:1:" <<<"$out"
check "exactly those two (log.c allowed, cli/ not checked)" grep -q "3 files, 2 violations" <<<"$out"
finish
