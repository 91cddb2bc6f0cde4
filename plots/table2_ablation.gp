# The paper's Table 2 ablation as bars: one model, each mode (naive,
# hybrid, predictor, window, all) measured on this machine (the median over
# the rounds; neurons from the trace, and from the trained predictor where
# it ran) beside the cost model's price of it, each bar stacked I/O,
# memory, compute in ms per token; on OPT-6.7B the paper's Table 2 I/O
# (M1 Max) beside them.
# flashbed passes: csv (runs/<model>/ablation.csv of flashbed reproduce:
# bar,io_ms,mem_ms,compute_ms,total_ms), plot_title, term (pngcairo|svg),
# outfile. By hand:
#   gnuplot -e "csv='ablation.csv'; term='svg'; outfile='ablation.svg'" plots/table2_ablation.gp
if (!exists('plot_title')) plot_title = 'Table 2, measured'
if (term eq 'svg') {
    set terminal svg size 1100,700 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 1100,700 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','
set datafile missing ''
set title plot_title noenhanced
set ylabel 'ms per token'
set grid ytics
set key top right noenhanced
set yrange [0:*]
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.75
set xtics rotate by 35 right noenhanced nomirror
set bmargin 10
set lmargin 14

plot csv using 'io_ms':xtic(strcol('bar')) lc 2 title 'I/O', \
     '' using 'mem_ms' lc 3 title 'memory management', \
     '' using 'compute_ms' lc 4 title 'compute'
