#!/usr/bin/env python3
"""Every verdict README.md and docs/ show agrees with the table shown beside
it (issue 47): the verdict's figures are recomputed from the table and must
match to the precision both print.

    python3 tests/check_shown_verdicts.py [FILE.md ...]   (default: README.md docs/*.md)

Verdicts checked, each against the first table of its kind shown in the same
section (between two '## ' headings outside code blocks) of the same file:
- sweep's '- Peak:' / '- The smallest reads at best:' / '- Beside fio' lines
  against its point table (| chunk | threads | ... | GiB/s | ... | ours / fio |);
- replay's '- B (...): best P with L, ...; Y MB in Z reads per token; feasible'
  and its runner-up lines against its table (| budget | policy | layout | ...);
- predict --compare's 'Verdict: the cost model holds|misses' against its
  component table.
A verdict whose table is not shown is not checked (and says nothing a table
contradicts). Exit status 1 with every disagreement listed.
"""
import glob
import itertools
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKED = {"sweep": 0, "replay": 0, "compare": 0}  # verdict lines checked, by kind


def sections(path):
    """(heading, text lines) per '## ' section, headings inside fences skipped."""
    out, head, body, fence = [], "", [], False
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("## "):
            out.append((head, body))
            head, body = line, []
        else:
            body.append(line)
    out.append((head, body))
    return out


def tables(lines):
    """Markdown tables as lists of dicts keyed by header cell."""
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|$", lines[i + 1]):
            head = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            # sweep's "min–max" columns are each the range of the column before
            head = [f"{head[j - 1]} {h}" if h == "min–max" and j else h for j, h in enumerate(head)]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(dict(zip(head, [c.strip() for c in lines[i].strip().strip("|").split("|")])))
                i += 1
            found.append((head, rows))
        else:
            i += 1
    return found


def table_with(lines, *columns):
    return next((rows for head, rows in tables(lines) if all(c in head for c in columns)), None)


def close_sig(shown, exact, sig):
    """shown is exact printed with `sig` significant digits"""
    return float(f"{exact:.{sig}g}") == shown


def close_dec(shown, exact, decimals):
    """shown is exact printed with `decimals` decimals"""
    return abs(shown - exact) <= 0.5 * 10 ** -decimals + 1e-12


def check_sweep(lines, errors):
    rows = table_with(lines, "chunk", "threads", "GiB/s")
    if rows is None:
        return
    chunk_bytes = lambda c: float(c[:-1]) * {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[c[-1]] if c[-1] in "kmg" else float(c)
    gib = lambda r: float(r["GiB/s"].split()[0])
    threads = lambda t: f"{t} thread" + ("" if t == "1" else "s")
    for line in lines:
        m = re.match(r"- Peak: ([\d.]+) GiB/s .* with (\S+) reads from (\d+) threads?", line)
        if m:
            CHECKED["sweep"] += 1
            best = max(rows, key=gib)
            if not (close_sig(float(m[1]), gib(best), 3) and (m[2], m[3]) == (best["chunk"], best["threads"])):
                errors.append(f"sweep peak '{m[0]}' but the table's peak is {gib(best)} with {best['chunk']} reads from {threads(best['threads'])}")
        m = re.match(r"- The smallest reads at best: ([\d.]+) GiB/s .* with (\S+) reads from (\d+) threads?", line)
        if m:
            small = min(chunk_bytes(r["chunk"]) for r in rows)
            best = max((r for r in rows if chunk_bytes(r["chunk"]) == small), key=gib)
            if not (close_sig(float(m[1]), gib(best), 3) and (m[2], m[3]) == (best["chunk"], best["threads"])):
                errors.append(f"sweep smallest reads '{m[0]}' but the table's best is {gib(best)} with {best['chunk']} from {threads(best['threads'])}")
        if line.startswith("- Beside fio"):
            check_fio(line, [r for r in rows if r.get("ours / fio", "-") not in ("-", "")], errors)


def fio_kind(med, rr, ours, fio, band):
    """harness/sweep_verdict.c's fio_agreement_of on the printed figures."""
    wide = lambda sp: sp is not None and sp[1] > (1 + band) * sp[0]
    if 1 - band <= med <= 1 + band:
        return "within"
    if rr[0] <= 1 <= rr[1]:
        return "covers"
    return "noisy" if wide(ours) or wide(fio) else "differs"


def fio_kinds(rows, band=0.10, eps=0.0015):
    """Each point's kind from the table's figures, and how many points a
    rounding of the printed figures (eps either way) could move to another
    kind."""
    rng = lambda r, col: tuple(float(x) for x in r[col].split("–")) if r.get(col, "-") not in ("", "-") else None
    kinds, unsure = [], 0
    for r in rows:
        med = float(r["ours / fio"].split()[0])
        rr = rng(r, "ours / fio min–max") or (med, med)
        ours, fio = rng(r, "GiB/s min–max"), rng(r, "fio GiB/s min–max")
        seen = set()
        for d in itertools.product((-eps, eps), repeat=5):
            o = ours and (ours[0], ours[1] + d[3])
            f = fio and (fio[0], fio[1] + d[4])
            seen.add(fio_kind(med + d[0], (rr[0] + d[1], rr[1] + d[2]), o, f, band))
        kinds.append(fio_kind(med, rr, ours, fio, band))
        unsure += len(seen) > 1
    return kinds, unsure


def check_fio(line, rows, errors):
    kinds, unsure = fio_kinds(rows)
    agree = sum(k in ("within", "covers") for k in kinds)
    close_count = lambda said, real: abs(said - real) <= unsure
    m = re.search(r"agree within (\d+)% at all (\d+) points", line)
    if m and not (int(m[2]) == len(kinds) and close_count(len(kinds), agree)):
        errors.append(f"sweep claims agreement at all {m[2]} points but the table's {len(kinds)} points have {agree} agreeing")
    m = re.search(r"agree at (\d+) of (\d+) points", line)
    if m and not (int(m[2]) == len(kinds) and close_count(int(m[1]), agree)):
        errors.append(f"sweep says '{m[0]}' but the table's {len(kinds)} points have {agree} agreeing")
    m = re.search(r"; (\d+) differ by more than", line)
    if m and not close_count(int(m[1]), kinds.count("differs")):
        errors.append(f"sweep says {m[1]} differ but the table has {kinds.count('differs')}")
    m = re.search(r"; (\d+) noisy", line)
    if m and not close_count(int(m[1]), kinds.count("noisy")):
        errors.append(f"sweep says {m[1]} noisy but the table has {kinds.count('noisy')}")
    m = re.search(r"ours / fio ([\d.]+), the median of (\d+) points \(([\d.]+) to ([\d.]+)\): the two agree within (\d+)%", line)
    if m and agree != len(kinds):  # the verdict before rounds: agreement claimed from the median alone
        errors.append(f"sweep claims agreement within {m[5]}% but {len(kinds) - agree} of {len(kinds)} points are outside")


def check_replay(lines, errors):
    rows = table_with(lines, "budget", "policy", "layout", "reads per token", "feasible")
    if rows is None:
        return
    budget = None
    for line in lines:
        m = re.match(r"- (\S+) \(.*?\): best (\S+) with (\S+), ([\d.e-]+) ms per token .*?; ([\d.e-]+) MB in ([\d.e-]+) reads per token; (\w+)", line)
        if m:
            CHECKED["replay"] += 1
            budget = m[1]
            row = check_replay_row(rows, budget, m[2], m[3], float(m[5]), float(m[6]), m[0], errors)
            if row and m[7] == "feasible" and not row["feasible"].startswith("yes"):
                errors.append(f"replay verdict '{m[0]}' says feasible but its row says {row['feasible']}")
        m = re.match(r"\s+Runner-up: (\S+) with (\S+), [\d.e-]+ ms \(.*?\); ([\d.e-]+) MB in ([\d.e-]+) reads per token", line)
        if m and budget:
            check_replay_row(rows, budget, m[1], m[2], float(m[3]), float(m[4]), m[0], errors)


def row_of(rows, budget, policy, layout, errors, said):
    found = [r for r in rows if (r["budget"], r["policy"], r["layout"]) == (budget, policy, layout)]
    if len(found) != 1:
        errors.append(f"replay verdict '{said}' names a row the table does not have ({budget}, {policy}, {layout})")
        return None
    return found[0]


def check_replay_row(rows, budget, policy, layout, mb, reads, said, errors):
    row = row_of(rows, budget, policy, layout, errors, said)
    if row is None:
        return None
    mb_col = next(k for k in row if k.startswith("flash→DRAM per token"))
    if not (close_dec(float(row[mb_col]), mb, 2) and close_dec(float(row["reads per token"]), reads, 0)):
        errors.append(f"replay verdict '{said}' but its row reads {row[mb_col]} MB in {row['reads per token']} reads per token")
    return row


def check_compare(lines, errors):
    rows = table_with(lines, "component", "predicted ms", "measured ms")
    if rows is None:
        return
    by = {r["component"]: (float(r["predicted ms"]), float(r["measured ms"])) for r in rows}
    for line in lines:
        m = re.match(r"Verdict: the cost model (holds|misses) on this run: ([\d.e-]+) ms a token predicted against ([\d.e-]+) measured \(([+-]\d+)%, (within|beyond) ±(\d+)%\)\. The largest gap is (\S+): ([\d.e-]+) against ([\d.e-]+) ms", line)
        if not m:
            continue
        CHECKED["compare"] += 1
        p, q = by["total"]
        if not (close_dec(p, float(m[2]), 2) and close_dec(q, float(m[3]), 2)):
            errors.append(f"compare verdict says {m[2]} against {m[3]} ms but the table's total row is {p} against {q}")
        holds = abs(float(m[4])) <= float(m[6])
        if (m[1] == "holds") != holds:
            errors.append(f"compare verdict says '{m[1]}' at {m[4]}% with a ±{m[6]}% band")
        names = {"I/O": "io_ms", "memory": "mem_ms", "compute": "compute_ms"}
        gaps = {k: abs(by[v][0] - by[v][1]) for k, v in names.items() if v in by}
        worst = max(gaps, key=gaps.get)
        if m[7] in names and gaps[m[7]] + 0.01 < gaps[worst]:
            errors.append(f"compare verdict's largest gap is {m[7]} but the table's is {worst}")


def check_file(path):
    errors = []
    for head, lines in sections(path):
        for check in (check_sweep, check_replay, check_compare):
            check(lines, errors)
    return [f"{os.path.relpath(path, ROOT)}: {e}" for e in errors]


def main():
    files = sys.argv[1:] or [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    errors = [e for f in files for e in check_file(f)]
    for e in errors:
        print(e)
    print(f"check_shown_verdicts: {len(files)} files; verdicts checked: "
          + ", ".join(f"{k} {n}" for k, n in CHECKED.items()) + f"; {len(errors)} disagreements")
    if not sys.argv[1:] and 0 in CHECKED.values():
        errors.append("README.md shows each kind of verdict: one kind was not found (a changed format?)")
        print(errors[-1])
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
