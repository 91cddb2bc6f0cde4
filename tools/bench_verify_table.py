"""The on/off statistics of tools/bench-verify.sh and tools/bench-verify-teal.sh.

Each round runs --verify on and off; a table shows the medians of the
rounds' ms per token, so its on / off is the ratio of those two medians
(the row's own figures), and the rounds' own ratios, paired round by
round, are given beside it as what they are: their median and range.
(Issue 47: the table gave the median of the rounds' ratios, 1.030, under
"on / off" beside medians whose ratio is 0.965.)

    python3 tools/bench_verify_table.py ROWS.json   # prints the two cells, for a test
"""
import json
import statistics
import sys


def summarize(rows):
    """Medians of every key over the rounds, plus the two on/off figures."""
    m = {k: statistics.median(x[k] for x in rows) for k in rows[0]}
    ratios = [x["on_ms"] / x["off_ms"] for x in rows]
    m["ratio"] = m["on_ms"] / m["off_ms"]
    m["round_ratio_median"] = statistics.median(ratios)
    m["round_ratio_min"], m["round_ratio_max"] = min(ratios), max(ratios)
    return m


def on_off_cell(m):
    """The ratio of the medians shown beside it: '0.965 (-3.5%)'."""
    return f"{m['ratio']:.3f} ({100 * (m['ratio'] - 1):+.1f}%)"


def rounds_cell(m):
    """The rounds' paired ratios: '1.030 (0.912 to 1.204)'."""
    return f"{m['round_ratio_median']:.3f} ({m['round_ratio_min']:.3f} to {m['round_ratio_max']:.3f})"


HEADER_CELLS = "on / off (of the medians) | rounds' on / off: median (range)"

if __name__ == "__main__":
    m = summarize(json.load(open(sys.argv[1])))
    print(f"{on_off_cell(m)} | {rounds_cell(m)}")
