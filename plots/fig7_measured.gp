# The paper's Fig. 7 measured: latency per token against the share of the
# model held in DRAM, the sliding window growing with the budget
# (window:auto). Solid lines: measured on this machine (medians over the
# rounds; the total's bars span min to max); dashed: the cost model's
# price of the same points on this machine's profile; grey, right axis:
# the paper's own Fig. 7 as `flashbed predict --paper fig7` models it
# (OPT-6.7B on the paper's RTX 4090: another model and machine, so on an
# axis of its own, for its shape only).
# flashbed passes: csv (fig7/fig7.csv of flashbed reproduce), paper_csv
# (paper-fig7/fig7.csv, or '' when there is none), plot_title, term
# (pngcairo|svg), outfile. By hand:
#   gnuplot -e "csv='fig7.csv'; paper_csv=''; term='svg'; outfile='fig7.svg'" plots/fig7_measured.gp
if (!exists('plot_title')) plot_title = 'Fig. 7, measured'
if (!exists('paper_csv')) paper_csv = ''
if (term eq 'svg') {
    set terminal svg size 1000,700 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 1000,700 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','
set datafile missing ''
set title plot_title noenhanced
set xlabel 'DRAM share of the model (%)'
set ylabel 'ms per token, this machine'
set grid
set key below horizontal maxcols 3 noenhanced
set yrange [0:*]
set ytics nomirror
set offsets 2, 2, 0, 0
set bmargin 9

mine = "csv using 'share':'measured_total':'measured_min':'measured_max' with yerrorlines lw 2 pt 7 lc 1 title 'measured total (min-max)', \
 csv using 'share':'measured_io' with linespoints lw 2 pt 5 lc 2 title 'measured I/O', \
 csv using 'share':'measured_mem' with linespoints lw 2 pt 9 lc 3 title 'measured memory', \
 csv using 'share':'measured_compute' with linespoints lw 2 pt 13 lc 4 title 'measured compute', \
 csv using 'share':'modelled_total' with linespoints lw 2 dt 2 pt 6 lc 1 title 'modelled total', \
 csv using 'share':'modelled_io' with linespoints lw 1 dt 2 pt 4 lc 2 title 'modelled I/O', \
 csv using 'share':'modelled_mem' with linespoints lw 1 dt 2 pt 8 lc 3 title 'modelled memory', \
 csv using 'share':'modelled_compute' with linespoints lw 1 dt 2 pt 12 lc 4 title 'modelled compute'"

paper = ''
if (strlen(paper_csv) > 0) {
    set y2label "ms per token, the paper's OPT-6.7B on an RTX 4090 (modelled)"
    set y2range [0:*]
    set y2tics
    set title sprintf("%s\ngrey, right axis: the paper's Fig. 7 as the cost model gives it, OPT-6.7B on an RTX 4090 (another model and machine)", plot_title) noenhanced
    paper = ", paper_csv using (100*column('dram_share')):'total_ms' axes x1y2 with linespoints lw 3 pt 1 lc rgb 'gray50' title \"paper's Fig. 7, modelled (right axis)\""
}
eval('plot ' . mine . paper)
