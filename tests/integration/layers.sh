#!/usr/bin/env bash
# The layering rule holds for the tree, and the checker catches a violation.
source "$(dirname "$0")/lib.sh"
CHECKER="$FLASHBED_SOURCE/tests/check_layers.sh"
check "the tree keeps its layers" bash "$CHECKER" "$FLASHBED_SOURCE"
mkdir -p "$WORK/fake/common" "$WORK/fake/engine"
printf '#include "engine/model.h"\n' > "$WORK/fake/common/bad.c"
printf '#include "common/log.h"\n' > "$WORK/fake/engine/good.c"
out=$(bash "$CHECKER" "$WORK/fake")
rc=$?
check "a lower layer including a higher one fails" test $rc -ne 0
check "the violation is named" grep -q "common/bad.c:1 includes engine/" <<<"$out"
check "exactly one violation" grep -q "2 files, 1 violations" <<<"$out"
finish
