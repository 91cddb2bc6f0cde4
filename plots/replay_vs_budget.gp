# One per-token quantity of flashbed replay against the DRAM budget: a line
# per policy (colour) and layout (dash type), filled markers where the
# budget holds what the policy needs, open ones where it does not
# (infeasible: drawn, not dropped); with one budget, a marker per
# configuration side by side instead. flashbed passes: csv (replay.csv),
# ycol (a column of it: bytes_per_token, total_ms, reads_per_token),
# yscale (ycol is multiplied by it), ylabel_text, plot_title,
# plot_subtitle, term (pngcairo|svg), outfile. Re-run by hand with e.g.
#   gnuplot -e "csv='replay.csv'; ycol='total_ms'; yscale=1; ylabel_text='ms'; \
#     plot_title='t'; plot_subtitle=''; term='svg'; outfile='x.svg'" plots/replay_vs_budget.gp
if (term eq 'svg') {
    set terminal svg size 1100,680 dynamic enhanced font 'sans,12'
} else {
    set terminal pngcairo size 1100,680 enhanced font 'sans,11'
}
set output outfile
set datafile separator ','
set title plot_title.' against the DRAM budget'."\n".plot_subtitle."\ncolour: policy; dash: layout; open markers: infeasible (the budget cannot hold a token's rows)" noenhanced
set xlabel 'DRAM budget for the FFN cache (% of the FFN)'
# Naive and hybrid read tens of times what the sparse policies read: a log
# scale keeps both readable, unless some row reads nothing (hybrid with the
# whole FFN resident), which a log scale could not show.
stats csv using (column(ycol)) nooutput
if (STATS_min > 0) {
    set logscale y
    set ylabel ylabel_text.' (log scale)'
} else {
    set ylabel ylabel_text
    set yrange [0:*]
}
set offsets graph 0.03, graph 0.03, 0, 0
set grid
set key outside right top noenhanced

# The distinct values of a named column, in order of first appearance.
distinct(name) = system(sprintf("awk -F, 'NR==1 {for (i = 1; i <= NF; i++) if ($i == \"%s\") c = i; next} !seen[$c]++ {printf \"%%s \", $c}' '%s'", name, csv))
policies = distinct('policy')
layouts = distinct('layout')

# window:K keeps the last K tokens: the paper's k = K - 1.
label(p) = (strstrt(p, 'window:') == 1 ? sprintf('%s (k = %d)', p, int(p[8:] + 0) - 1) : p)
is(p, l) = strcol('policy') eq p && strcol('layout') eq l
# y of the rows of policy p and layout l, NaN (skipped: datafile missing)
# for the others
set datafile missing NaN
pick(p, l) = is(p, l) ? column(ycol) * yscale : NaN
marker(dummy) = strcol('feasible') eq 'true' ? 7 : 6
xcol = 'dram_budget_share'

# One budget (the x axis would hold a single stack of markers): a marker
# per configuration instead, side by side, each named under the axis.
budgets = distinct('dram_budget')
if (words(budgets) == 1) {
    policy_index(p) = sum [i=1:words(policies)] (word(policies, i) eq p ? i : 0)
    set datafile columnheaders  # the header names the columns: not a configuration to label
    set title plot_title.' at a DRAM budget of '.word(budgets, 1)."\n".plot_subtitle."\ncolour: policy; open markers: infeasible (the budget cannot hold a token's rows)" noenhanced
    set xlabel 'policy, layout'
    set xtics rotate by -35 left noenhanced
    set xrange [-0.7:*]
    set offsets 0, 0.7, 0, 0
    set bmargin 9
    set key outside right top noenhanced
    plot csv using 0:(column(ycol) * yscale):(policy_index(strcol('policy'))):xtic(label(strcol('policy')).', '.strcol('layout')) \
             with impulses lc variable lw 3 notitle, \
         csv using 0:(column(ycol) * yscale):(marker(0)):(policy_index(strcol('policy'))) \
             with points pt variable lc variable ps 2 notitle, \
         NaN with points lc 'black' pt 7 title 'feasible', \
         NaN with points lc 'black' pt 6 title 'infeasible'
} else {
    plot for [i=1:words(policies)] for [j=1:words(layouts)] \
             csv using (100 * column(xcol)):(pick(word(policies, i), word(layouts, j))) smooth unique \
             with lines lc i dt j lw 2 title sprintf('%s, %s', label(word(policies, i)), word(layouts, j)), \
         for [i=1:words(policies)] for [j=1:words(layouts)] \
             csv using (100 * column(xcol)):(pick(word(policies, i), word(layouts, j))):(marker(0)) \
             with points lc i pt variable ps 1.3 notitle, \
         NaN with points lc 'black' pt 7 title 'feasible', \
         NaN with points lc 'black' pt 6 title 'infeasible'
}
