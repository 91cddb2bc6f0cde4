#!/usr/bin/env bash
# The layering rule (top CMakeLists.txt): a file in one layer includes
# headers of its own layer and the layers below it only. Reads every
# #include "layer/..." of every source and header and names each violation.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
layers=(common io traces cache sim
        engine/tokenizer engine/model engine/import engine/compute engine/predictor
        engine/ffn engine/forward engine/run engine/training harness cli)
rank() {
    local i
    for i in "${!layers[@]}"; do
        [ "${layers[$i]}" = "$1" ] && { echo "$i"; return; }
    done
    echo -1
}
bad=0
checked=0
for layer in "${layers[@]}"; do
    mine=$(rank "$layer")
    for f in "$root/$layer"/*.[ch]; do
        [ -e "$f" ] || continue
        checked=$((checked + 1))
        while IFS=: read -r line inc; do
            dep=${inc#*\"}
            dep=${dep%/*} # the folder: engine/ has sub-libraries, one more level
            theirs=$(rank "$dep")
            [ "$theirs" -lt 0 ] && dep=${dep%%/*}
            theirs=$(rank "$dep")
            [ "$theirs" -lt 0 ] && continue # not a layer: a system or local header
            if [ "$theirs" -gt "$mine" ]; then
                echo "layer violation: $layer/${f##*/}:$line includes $dep/ (a higher layer)"
                bad=$((bad + 1))
            fi
        done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/' "$f")
    done
done
# engine/ itself holds only its sub-libraries: a source directly in it has no layer.
for f in "$root/engine"/*.[ch]; do
    [ -e "$f" ] || continue
    echo "layer violation: engine/${f##*/} is in no sub-library of engine/"
    bad=$((bad + 1))
done
echo "check_layers: $checked files, $bad violations"
[ "$bad" -eq 0 ]
