#!/usr/bin/env bash
# The layering rule holds for the tree, and the checker catches a violation.
source "$(dirname "$0")/lib.sh"
CHECKER="$FLASHBED_SOURCE/tests/check_layers.sh"
check "the tree keeps its layers" bash "$CHECKER" "$FLASHBED_SOURCE"
mkdir -p "$WORK/fake/common" "$WORK/fake/engine/model" "$WORK/fake/engine/ffn"
printf '#include "engine/model/model.h"\n' > "$WORK/fake/common/bad.c"
printf '#include "common/log.h"\n#include "engine/model/model.h"\n' > "$WORK/fake/engine/ffn/good.c"
printf '#include "engine/ffn/ffn.h"\n' > "$WORK/fake/engine/model/up.c"
out=$(bash "$CHECKER" "$WORK/fake")
rc=$?
check "a lower layer including a higher one fails" test $rc -ne 0
check "the violation is named" grep -q "common/bad.c:1 includes engine/model/" <<<"$out"
check "a lower engine sub-library including a higher one is named" \
    grep -q "engine/model/up.c:1 includes engine/ffn/" <<<"$out"
check "exactly those two" grep -q "3 files, 2 violations" <<<"$out"
printf 'int x;\n' > "$WORK/fake/engine/loose.c"
out=$(bash "$CHECKER" "$WORK/fake")
check "a source outside engine/'s sub-libraries is named" \
    grep -q "engine/loose.c is in no sub-library" <<<"$out"
finish
