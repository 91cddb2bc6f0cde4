# Training-free sparsity on the fixtures' shapes (random weights) beside
# stories260K: the FFN weight bytes a token reads (top row) and its ms
# (bottom row) against the target sparsity S, one panel per neuron source,
# one curve per model, dense at S = 0 (harness/reproduce_sparsity_shapes.c).
# flashbed passes: csv (for each source, for each model, a block of rows
# S, FFN KB per token, ms per token; two blank lines between blocks),
# sources and models (the blocks' names, space-separated), plot_title,
# term, outfile.
if (term eq 'svg') {
    set terminal svg size 1500,800 dynamic enhanced font 'sans,11'
} else {
    set terminal pngcairo size 1500,800 enhanced font 'sans,10'
}
set output outfile
set datafile separator ','
set grid
set xrange [0:1]
set xlabel 'target sparsity S'
ns = words(sources)
nm = words(models)
set multiplot layout 2, ns title plot_title noenhanced
do for [row = 1:2] {
    do for [k = 1:ns] {
        set title word(sources, k) noenhanced
        set ylabel (row == 1 ? 'FFN KB read per token' : 'ms per token')
        # the key once, in the first panel: the same models everywhere
        if (row == 1 && k == 1) { set key top right } else { unset key }
        plot for [m = 1:nm] csv index ((k - 1) * nm + m - 1) using 1:(column(row + 1)) \
             with linespoints lw 2 pt (4 + m) title word(models, m) noenhanced
    }
}
unset multiplot
