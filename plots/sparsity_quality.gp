# Training-free sparsity: perplexity against the FFN weight bytes a token
# reads, one curve per neuron source, dense as the reference point
# (harness/reproduce_sparsity.c). flashbed passes: csv (a header row, then
# source,ffn_mb_per_token,perplexity per source and setting), sources (the
# sources' names, space-separated, the first "dense"), plot_title, term,
# outfile.
if (term eq 'svg') {
    set terminal svg size 900,600 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 900,600 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','
set title plot_title noenhanced
set xlabel 'FFN weights read per token (MB)'
set ylabel 'perplexity'
set grid
set key top right
set xrange [0:*]
# perplexity spans orders of magnitude from the dense point to the sparsest settings
set logscale y
# dense is one point; each other source a curve over its settings
pick(name, v) = (strcol('source') eq name ? v : NaN)
plot for [i=1:words(sources)] csv using (pick(word(sources, i), column('ffn_mb_per_token'))):'perplexity' \
     with linespoints lw 2 pt (i == 1 ? 3 : 5 + 2*i) ps (i == 1 ? 2.5 : 1.2) title word(sources, i)
