# Random-read throughput against chunk size, one curve per thread count
# (the paper's Fig. 2b). flashbed passes: csv, threads ('1 4 16'), has_fio,
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
set ylabel 'throughput (GiB/s)'
set logscale x 2
set format x '%.0b %BB'
set grid
set key top left
set yrange [0:*]

# Keep only the rows of thread count t; others become NaN and are skipped.
pick(t, v) = (column('threads') == t ? v : NaN)

# Lines connect each thread count's points in chunk order (sweep.csv is sorted
# by threads, then chunk); fio's points sit on the same colours as crosses.
if (has_fio) {
    plot for [i=1:words(threads)] csv using (pick(word(threads,i)+0, column('chunk_bytes'))):(column('bw_bytes')/2**30) \
             with linespoints lw 2 pt 7 lc i title sprintf('%s thread%s', word(threads,i), word(threads,i) eq '1' ? '' : 's'), \
         for [i=1:words(threads)] csv using (pick(word(threads,i)+0, column('chunk_bytes'))):(column('fio_bw_bytes')/2**30) \
             with points pt 2 ps 1.5 lc i title sprintf('fio, %s thread%s', word(threads,i), word(threads,i) eq '1' ? '' : 's')
} else {
    plot for [i=1:words(threads)] csv using (pick(word(threads,i)+0, column('chunk_bytes'))):(column('bw_bytes')/2**30) \
             with linespoints lw 2 pt 7 lc i title sprintf('%s thread%s', word(threads,i), word(threads,i) eq '1' ? '' : 's')
}
