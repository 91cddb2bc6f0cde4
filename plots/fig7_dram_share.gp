# Latency per token against the share of the model held in DRAM (the
# paper's Fig. 7, modelled). flashbed passes: csv, plot_title (the model,
# dtype and profile), term, outfile.
if (!exists('plot_title')) plot_title = 'OPT-6.7B, bf16, rtx4090-gpu profile (modelled)'
if (term eq 'svg') {
    set terminal svg size 900,600 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 900,600 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','
set title plot_title noenhanced
set xlabel 'DRAM share of the model (%)'
set ylabel 'latency per token (ms)'
set grid
set key top right
set yrange [0:*]
plot csv using (100*column('dram_share')):'total_ms' with linespoints lw 2 pt 7 title 'total', \
     csv using (100*column('dram_share')):'io_ms' with linespoints lw 2 pt 5 title 'I/O', \
     csv using (100*column('dram_share')):'mem_ms' with linespoints lw 2 pt 9 title 'memory management', \
     csv using (100*column('dram_share')):'compute_ms' with linespoints lw 2 pt 13 title 'compute'
