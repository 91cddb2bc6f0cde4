#!/usr/bin/env bash
# Issue 45's measures of the architecture, counted the same way before and
# after: run it at two commits (tools/arch-counts.sh [COMMIT]; default the
# work tree) and compare. Counts library and program sources (common io
# traces cache sim engine harness cli), not tests.
#   bytes-from-element-size: lines that price bytes from a per-element size
#       (dtype_size(, the kernels' fb_dtype_size(, sim's dtype_bytes(, the
#       trace header's bytes_per_weight, cache's vec_bytes, harness's half)
#   unit-size-formulas: lines working out a bundle's parts (glu ? 3 : 2)
#   transposed-branches: lines that branch on transposed / has_channels
#       (an if, ?:, && or ||) in files whose name is not the unit's own
#   ffn_flash.c-lines: engine/ffn/ffn_flash.c's length
#   neuron-source-sites: lines naming one neuron source (an enumerator of
#       the former enum neuron_source, or a source's ops table source_x)
#       outside its own file engine/ffn/source_x.c and sources.def
#   files-naming-the-type: files naming fb_dtype, DTYPE_ or dtype_
set -euo pipefail
cd "$(dirname "$0")/.."
dirs="common io traces cache sim engine harness cli"
if [ $# -ge 1 ]; then
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    git archive "$1" $dirs | tar -x -C "$tmp"
    cd "$tmp"
fi
src() { find $dirs -type f \( -name '*.c' -o -name '*.h' -o -name '*.kern' -o -name '*.cu' -o -name '*.def' \) | sort; }
count() { src | xargs grep -E -h "$1" 2>/dev/null | wc -l; }
files() { src | xargs grep -E -l "$1" 2>/dev/null | wc -l; }
printf '%-28s %s\n' measure count
printf '%-28s %s\n' bytes-from-element-size \
    "$(count '\bdtype_size *\(|fb_dtype_size *\(|\bdtype_bytes *\(|bytes_per_weight|\bvec_bytes\b|\bint half[,)]')"
printf '%-28s %s\n' unit-size-formulas "$(count '\? *3 *: *2\b')"
n=$(src | grep -v transposed | xargs grep -E -h '\b(transposed|has_channels)\b' 2>/dev/null |
    grep -E '\bif *\(|\?|&&|\|\|' | wc -l)
printf '%-28s %s\n' transposed-branches "$n"
printf '%-28s %s\n' ffn_flash.c-lines "$(wc -l <engine/ffn/ffn_flash.c)"
n=$(src | grep -v -E '^engine/ffn/(source_[a-z]+\.c|sources\.def)$' |
    xargs grep -E -h '\bSOURCE_(ORACLE|PREDICTOR|GATE|TRACE|TEAL)\b|\bsource_(oracle|predictor|gate|trace|teal)\b' 2>/dev/null |
    wc -l)
printf '%-28s %s\n' neuron-source-sites "$n"
printf '%-28s %s\n' files-naming-the-type "$(files '\bfb_dtype\b|\bDTYPE_|\bdtype_')"
