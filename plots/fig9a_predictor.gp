# The paper's Fig. 9a: per layer, the share of FFN neurons per token that
# are active in the model only (the predictor's false negatives), in both,
# and predicted only (false positives), stacked. flashbed passes: csv
# (fig9a.csv: layer,model_only,both,predicted_only, in % of d_ff),
# plot_title, term (pngcairo|svg), outfile.
if (term eq 'svg') {
    set terminal svg size 800,560 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 800,560 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','
set title plot_title noenhanced
set xlabel 'layer'
set ylabel 'neurons per token (% of the FFN)'
set yrange [0:*]
set grid ytics
set key top left
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.75
# every ::1 skips the header row (else it is an empty bar)
plot csv every ::1 using 2:xtic(1) title 'active in model only' lc rgb '#d62728', \
     ''  every ::1 using 3 title 'active in both' lc rgb '#2ca02c', \
     ''  every ::1 using 4 title 'predicted only' lc rgb '#1f77b4'
