#!/usr/bin/env bash
# Library code returns an error and a message to its caller; only cli/
# prints (issue 12). Names every place in the library layers that prints
# to the terminal (fb_error, fb_warn, fb_info, printf, puts, perror, or
# stdout/stderr at all) or includes the logger (common/log.h), outside the
# files allowed below. Writing to a FILE * the caller passes is fine.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
layers=(common io traces cache sim
        engine/tokenizer engine/model engine/import engine/compute engine/predictor
        engine/ffn engine/forward engine/run engine/training harness)

# Allowed, each with its reason.
allowed=(
    common/log.c        # the logger itself, which cli/ prints through
    common/log.h        # its declarations
)

is_allowed() {
    local a
    for a in "${allowed[@]}"; do
        [ "$a" = "$1" ] && return 0
    done
    return 1
}

prints='\b(fb_error|fb_warn|fb_info|printf|vprintf|puts|perror)[[:space:]]*\(|\b(stdout|stderr)\b'
logger='^[[:space:]]*#[[:space:]]*include[[:space:]]*"common/log\.h"'
bad=0
checked=0
for layer in "${layers[@]}"; do
    for f in "$root/$layer"/*.[ch]; do
        [ -e "$f" ] || continue
        rel=$layer/${f##*/}
        is_allowed "$rel" && continue
        checked=$((checked + 1))
        # comment lines ("/* ...", " * ...", "// ...") may name stderr
        while IFS= read -r hit; do
            echo "prints in a library: $rel:$hit"
            bad=$((bad + 1))
        done < <(grep -nE "$prints|$logger" "$f" | grep -vE '^[0-9]+:[[:space:]]*(/\*|\*|//)')
    done
done
echo "check_lib_output: $checked files, $bad violations"
[ "$bad" -eq 0 ]
