# Flash bytes per token against the sliding window's size, one line per
# layout. flashbed passes: csv (window_sweep.csv: k,window,layout,
# bytes_per_token,...,dram_budget), plot_title, plot_subtitle (the budget
# it is drawn at and why that one), term (pngcairo|svg), outfile.
# k is the paper's k: tokens kept besides the current one (window:k+1).
if (term eq 'svg') {
    set terminal svg size 800,560 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 800,560 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','
if (!exists('plot_subtitle')) { plot_subtitle = '' }
set title plot_title."\n".plot_subtitle noenhanced
set xlabel 'window size k (tokens kept besides the current one)'
set ylabel 'flash → DRAM per token (MB)'
set xrange [-0.5:16.5]
set yrange [0:*]
set grid
set key top right
layouts = system(sprintf("awk -F, 'NR>1 && !seen[$3]++ {printf \"%%s \", $3}' '%s'", csv))
pick(name, v) = (strcol('layout') eq name ? v : NaN)
plot for [i=1:words(layouts)] csv using (pick(word(layouts,i), column('k'))):(column('bytes_per_token')/1e6) \
     with linespoints lw 2 pt 7 title word(layouts,i)
