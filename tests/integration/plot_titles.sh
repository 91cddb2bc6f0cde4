#!/usr/bin/env bash
# Every plot is titled (issue 47: fig4a.png had no title): each gnuplot
# script in plots/ sets one, with `set title` or a multiplot's title.
source "$(dirname "$0")/lib.sh"
n=0
for gp in "$FLASHBED_SOURCE"/plots/*.gp; do
    n=$((n + 1))
    check "$(basename "$gp") sets a title" grep -Eq '^[[:space:]]*set (title|multiplot.* title) ' "$gp"
done
check "the scripts were found" test "$n" -gt 0
finish
