# Aggregated neuron usage s_agg(k) over k consecutive tokens (the paper's
# Fig. 4a). flashbed passes: csv (k,sagg_active,sagg_predicted), has_pred,
# plot_subtitle (the trace's shape and tokens), term (pngcairo|svg), outfile.
if (term eq 'svg') {
    set terminal svg size 800,560 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 800,560 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','
if (!exists('plot_subtitle')) { plot_subtitle = '' }
set title "Fig. 4a: s_agg(k), the share of a layer's FFN neurons used by k consecutive tokens\n".plot_subtitle noenhanced
set key autotitle columnhead top left
set xlabel 'k (consecutive tokens)'
set ylabel 'share of the FFN used, s_{agg}(k) (%)'
set xrange [0.5:16.5]
set yrange [0:*]
set grid
if (has_pred) {
    plot csv using 1:(100*$2) with linespoints lw 2 pt 7 title 'active', \
         csv using 1:(100*$3) with linespoints lw 2 pt 5 title 'predicted'
} else {
    plot csv using 1:(100*$2) with linespoints lw 2 pt 7 title 'active'
}
