# Latency of every token of a run (the paper's Fig. 8, which shows the
# flash latency of OPT-6.7B staying flat over a long generation after a
# slower cold start): I/O, memory management and compute stacked per token,
# x the token's index (the prompt's tokens, then the generated ones), on a
# linear scale so the cold tokens stand at their true height. The cold
# tokens (run.json leaves them out of its summary: column cold = 1) and the
# prompt are shaded; the dashed line is the mean of the other tokens, what
# run.json's summary reports. The cold tokens' totals are also marked with
# points, which stay visible when a long run makes their bars a pixel wide.
# On a device whose memory is not the host's (device = 1: tokens.csv has
# read_ms and h2d_ms) the I/O bar is the reads the token still waited for
# after the device had finished its work (exposed), and two lines beside
# the bars give the reads' whole time (the rest of it overlapped the
# device's work, inside compute) and the device's time in the uploads
# (device time, not a part of the host's total).
# flashbed passes: csv (tokens.csv of flashbed run), plot_title, machine,
# device (0|1), term (pngcairo|svg), outfile. By hand:
#   gnuplot -e "csv='tokens.csv'; term='svg'; outfile='fig8.svg'" plots/fig8_token_latency.gp
if (!exists('plot_title')) plot_title = csv
if (!exists('machine')) machine = ''
if (!exists('device')) device = 0
if (term eq 'svg') {
    set terminal svg size 1000,600 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 1000,600 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','

# From the file alone: tokens, cold tokens, the first generated token and
# the steady-state mean (the assignments run as each row is read).
n_tok = 0; n_cold = 0; first_gen = -1; steady_sum = 0; steady_n = 0
stats csv using (n_tok = n_tok + 1, \
                 n_cold = n_cold + column('cold'), \
                 first_gen = (first_gen < 0 && strcol('phase') eq 'generated') ? column('index') : first_gen, \
                 steady_sum = steady_sum + (column('cold') != 0 ? 0 : column('total_ms')), \
                 steady_n = steady_n + (column('cold') != 0 ? 0 : 1), 0) nooutput
steady = steady_n > 0 ? steady_sum / steady_n : NaN
if (first_gen < 0) first_gen = n_tok

set title sprintf("%s\n%s", plot_title, machine) noenhanced
set xlabel 'token (index: the prompt''s tokens, then the generated ones)'
set ylabel 'latency per token (ms)'
set xrange [-0.5:(n_tok > 0 ? n_tok - 0.5 : 0.5)]
set yrange [0:*]
set offsets 0, 0, graph 0.4, 0   # room above the bars for the key
set grid ytics
set key top right opaque box samplen 2
set style fill solid 0.9 noborder
set boxwidth 1 absolute

# Shaded spans, behind the bars: the prompt, then over it the cold tokens.
if (first_gen > 0) {
    set object 1 rect from -0.5, graph 0 to first_gen - 0.5, graph 1 behind fc rgb '#e8e8e8' fs solid 1.0 noborder
}
if (n_cold > 0) {
    set object 2 rect from -0.5, graph 0 to n_cold - 0.5, graph 1 behind fc rgb '#f6d0c8' fs solid 1.0 noborder
}

# Stacked: each bar is drawn from 0 to its cumulative height, tallest first.
if (device) {
plot csv using 'index':(column('io_ms') + column('mem_ms') + column('compute_ms')) with boxes lc rgb '#2ca02c' title 'compute (host: enqueue and waits)', \
     ''  using 'index':(column('io_ms') + column('mem_ms')) with boxes lc rgb '#ff7f0e' title 'memory management', \
     ''  using 'index':'io_ms' with boxes lc rgb '#1f77b4' title 'I/O exposed (flash)', \
     ''  using 'index':'read_ms' with linespoints pt 4 ps 0.5 lw 1.5 lc rgb '#17becf' title 'reads in flight (overlapping the device)', \
     ''  using 'index':'h2d_ms' with linespoints pt 6 ps 0.5 lw 1.5 lc rgb '#9467bd' title 'host-to-device copies (device time)', \
     steady with lines dt 2 lw 2 lc rgb 'black' title sprintf('mean after the cold tokens: %.2f ms', steady), \
     ''  using 'index':(column('cold') != 0 ? column('total_ms') : NaN) with points pt 7 ps 0.8 lc rgb '#d62728' \
         title sprintf('cold (shaded): the first %d tokens, left out of the summary', n_cold), \
     NaN with boxes lc rgb '#e8e8e8' title sprintf('prompt: %d tokens', first_gen)
} else {
plot csv using 'index':(column('io_ms') + column('mem_ms') + column('compute_ms')) with boxes lc rgb '#2ca02c' title 'compute', \
     ''  using 'index':(column('io_ms') + column('mem_ms')) with boxes lc rgb '#ff7f0e' title 'memory management', \
     ''  using 'index':'io_ms' with boxes lc rgb '#1f77b4' title 'I/O (flash)', \
     steady with lines dt 2 lw 2 lc rgb 'black' title sprintf('mean after the cold tokens: %.2f ms', steady), \
     ''  using 'index':(column('cold') != 0 ? column('total_ms') : NaN) with points pt 7 ps 0.8 lc rgb '#d62728' \
         title sprintf('cold (shaded): the first %d tokens, left out of the summary', n_cold), \
     NaN with boxes lc rgb '#e8e8e8' title sprintf('prompt: %d tokens', first_gen)
}
