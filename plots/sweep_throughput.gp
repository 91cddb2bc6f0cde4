# Random-read throughput against chunk size, one curve per thread count
# (the paper's Fig. 2b). flashbed passes: csv, threads ('1 4 16'), has_fio,
# rounds (over 1: each point is the median of its rounds, drawn with error
# bars from their min to their max: sweep.csv's *_min and *_max columns),
# plot_title, term (pngcairo|svg), outfile.
if (term eq 'svg') {
    set terminal svg size 900,600 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 900,600 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','
set title plot_title noenhanced
set xlabel 'chunk size'
set ylabel (rounds > 1 ? sprintf('throughput (GiB/s): median of %d rounds, bars min to max', rounds) : 'throughput (GiB/s)')
set logscale x 2
set format x '%.0b %BB'
set grid
set key top left
set yrange [0:*]
# room beside the smallest and largest chunk, so their bars do not sit on the border
set offsets graph 0.04, graph 0.04, 0, 0

# Keep only the rows of thread count t; others become NaN and are skipped.
pick(t, v) = (column('threads') == t ? v : NaN)

# Lines connect each thread count's points in chunk order (sweep.csv is sorted
# by threads, then chunk); fio's points sit on the same colours as crosses.
# With rounds each point is the rounds' median and its bar spans their
# min-max, so the disk's curve can be told from the noise of a run.
label(i) = sprintf('%s thread%s', word(threads,i), word(threads,i) eq '1' ? '' : 's')
x(i) = pick(word(threads,i)+0, column('chunk_bytes'))
gib(key) = column(key)/2**30
if (rounds > 1 && has_fio) {
    plot for [i=1:words(threads)] csv using (x(i)):(gib('bw_bytes')):(gib('bw_bytes_min')):(gib('bw_bytes_max')) \
             with yerrorlines lw 2 pt 7 lc i title label(i), \
         for [i=1:words(threads)] csv using (x(i)):(gib('fio_bw_bytes')):(gib('fio_bw_bytes_min')):(gib('fio_bw_bytes_max')) \
             with yerrorbars pt 2 ps 1.5 lc i title 'fio, '.label(i)
} else {
if (rounds > 1) {
    plot for [i=1:words(threads)] csv using (x(i)):(gib('bw_bytes')):(gib('bw_bytes_min')):(gib('bw_bytes_max')) \
             with yerrorlines lw 2 pt 7 lc i title label(i)
} else {
if (has_fio) {
    plot for [i=1:words(threads)] csv using (x(i)):(gib('bw_bytes')) with linespoints lw 2 pt 7 lc i title label(i), \
         for [i=1:words(threads)] csv using (x(i)):(gib('fio_bw_bytes')) with points pt 2 ps 1.5 lc i title 'fio, '.label(i)
} else {
    plot for [i=1:words(threads)] csv using (x(i)):(gib('bw_bytes')) with linespoints lw 2 pt 7 lc i title label(i)
}
}
}
