#!/usr/bin/env bash
# Every source file a comment names exists in the tree, and the checker
# catches one that does not: a path from the root or from the commenting
# file's folder, a bare name anywhere; a name in a string or in code is not
# a comment's.
source "$(dirname "$0")/lib.sh"
CHECKER="$FLASHBED_SOURCE/tests/check_comment_paths.sh"
check "the tree's comments name files that exist" bash "$CHECKER" "$FLASHBED_SOURCE"
mkdir -p "$WORK/fake/cache" "$WORK/fake/engine/compute/kernels" "$WORK/fake/sim"
printf 'int x;\n' > "$WORK/fake/cache/real.c"
printf 'k\n' > "$WORK/fake/engine/compute/kernels/ops.kern"
cat > "$WORK/fake/cache/policy.h" <<'C'
/* The request path (cache/request.h) beside cache/real.c, real.c and
 * llama2.c (outside the tree, on purpose). */
static const char *name = "model.layers.0.h"; /* a string's: not a comment's */
C
cat > "$WORK/fake/engine/compute/backend.c" <<'C'
// its source, kernels/ops.kern, from this folder; gone.c is not anywhere
int y;
C
out=$(bash "$CHECKER" "$WORK/fake")
rc=$?
check "a stale name fails" test $rc -ne 0
check "the stale path is named with its place" grep -q "cache/policy.h:1 names cache/request.h" <<<"$out"
check "a stale bare name is named" grep -q "engine/compute/backend.c:1 names gone.c" <<<"$out"
check "exactly those two, of the names in comments" grep -q "4 files, 6 file names in comments, 2 stale" <<<"$out"
finish
