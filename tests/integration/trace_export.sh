#!/usr/bin/env bash
# flashbed trace export: csv and npz-friendly hold the same rows, which are
# the trace's own sets (read independently by python/flashbed_trace.py dump)
# and add up to trace info's densities; every bad input: a clear error,
# non-zero exit, no folder and no temporary left behind.
source "$(dirname "$0")/lib.sh"
SRC="${FLASHBED_SOURCE:-$(dirname "$0")/../..}"
PY="$SRC/python/flashbed_trace.py"

T="$WORK/t.trace"
check "synth a trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 20 --seed 1 --out "$T"
check "trace info --out" "$FLASHBED" trace info "$T" --out "$WORK/info" >/dev/null
check "export csv" "$FLASHBED" trace export "$T" --out "$WORK/csv"
check "export npz-friendly" "$FLASHBED" trace export "$T" --format npz-friendly --out "$WORK/npz"
V1="$SRC/tests/data/trace_v1.trace"
check "export a version 1 trace (csv)" "$FLASHBED" trace export "$V1" --out "$WORK/v1csv"
check "export a version 1 trace (npz-friendly)" "$FLASHBED" trace export "$V1" --format npz-friendly \
    --out "$WORK/v1npz"
check "missing parents of --out are made" "$FLASHBED" trace export "$T" --out "$WORK/made/a/b"

# Both formats against each other, the Python reader and trace info.
verify() { # trace, csv folder, npz folder, trace_info.json or ""
    python3 - "$PY" "$@" <<'EOF'
import array, csv, json, os, subprocess, sys
py, trace, cdir, ndir, info = sys.argv[1:6]
fails = []
def expect(ok, what):
    if not ok:
        fails.append(what)
# the sets, read by the independent Python reader
dump = subprocess.run([sys.executable, py, "dump", trace], check=True, capture_output=True, text=True).stdout
want = {"active": [], "predicted": []}
rows_in_order, flags_by_token = [], {}
for line in dump.splitlines():
    f = line.split()
    t, fl, l, kind, ids = int(f[0]), int(f[1]), int(f[2]), f[3], list(map(int, f[4:]))
    kind = "active" if kind == "a" else "predicted"
    flags_by_token[t] = fl
    for n in ids:
        want[kind].append((t, l, n))
        rows_in_order.append((t, l, n, kind))
with open(os.path.join(cdir, "neurons.csv")) as fh:
    r = csv.reader(fh)
    expect(next(r) == ["token", "layer", "neuron", "kind"], "neurons.csv header")
    got = [(int(a), int(b), int(c), d) for a, b, c, d in r]
expect(got == rows_in_order, "neurons.csv rows equal the trace's sets, in token, layer, kind, neuron order")
with open(os.path.join(cdir, "tokens.csv")) as fh:
    r = csv.reader(fh)
    expect(next(r) == ["token", "flags", "generated", "sequence_start"], "tokens.csv header")
    toks = [tuple(map(int, row)) for row in r]
expect(toks == [(t, fl, fl & 1, (fl >> 1) & 1) for t, fl in sorted(flags_by_token.items())], "tokens.csv rows")
ej = json.load(open(os.path.join(ndir, "export.json")))
cj = json.load(open(os.path.join(cdir, "export.json")))
h = ej["header"]
expect(len(toks) == h["n_tokens"], "tokens.csv has n_tokens rows")
expect(cj["header"] == h, "both export.json carry the same header")
for j, fmt in ((cj, "csv"), (ej, "npz-friendly")):
    expect(j["format"] == fmt, fmt + ": format")
    expect("git_commit" in j["provenance"] and j["provenance"]["parameters"]["format"] == fmt,
           fmt + ": provenance with the parameters")
    expect(j["active_rows"] == len(want["active"]) and j["predicted_rows"] == len(want["predicted"]),
           fmt + ": row counts")
expect(h["has_predicted"] == bool(want["predicted"]) or not want["predicted"], "has_predicted")
def load(name, code):
    a = array.array(code)
    with open(os.path.join(ndir, name), "rb") as fh:
        a.frombytes(fh.read())
    if sys.byteorder == "big":
        a.byteswap()
    return a
files = {f["name"]: f for f in ej["files"]}
for kind in ("active", "predicted") if h["has_predicted"] else ("active",):
    cols = [load("%s_%s.u32" % (kind, c), "I") for c in ("token", "layer", "neuron")]
    for c, a in zip(("token", "layer", "neuron"), cols):
        f = files["%s_%s.u32" % (kind, c)]
        expect(f["dtype"] == "<u4" and f["length"] == len(a), "%s_%s.u32: dtype and length" % (kind, c))
        expect(len(a) == sum(1 for row in got if row[3] == kind), "%s_%s.u32: as many as the CSV's rows" % (kind, c))
    expect(list(zip(*cols)) == [row[:3] for row in got if row[3] == kind], kind + " arrays equal the CSV's rows")
if not h["has_predicted"]:
    expect(not any(n.startswith("predicted_") for n in os.listdir(ndir)), "no predicted arrays without predicted sets")
fl = load("tokens_flags.u8", "B")
expect(files["tokens_flags.u8"]["dtype"] == "u1" and len(fl) == h["n_tokens"], "tokens_flags.u8 length")
expect(list(fl) == [t[1] for t in toks], "tokens_flags.u8 equals tokens.csv's flags")
if info:
    ti = json.load(open(info))
    for kind, key in (("active", "density_active"), ("predicted", "density_predicted")):
        if key in ti:
            total = sum(d * ti["d_ff"] * ti["tokens"] for d in ti[key])
            expect(round(total) == len(want[kind]), "%s rows = trace info's %s total (%g)" % (kind, key, total))
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
EOF
}
check "opt-tiny: csv, npz-friendly, the Python reader and trace info agree" \
    verify "$T" "$WORK/csv" "$WORK/npz" "$WORK/info/trace_info.json"
check "opt-tiny has predicted rows" grep -q ",predicted$" "$WORK/csv/neurons.csv"
check "version 1 trace: csv, npz-friendly and the Python reader agree" verify "$V1" "$WORK/v1csv" "$WORK/v1npz" ""
# A trace without predicted sets (written by the Python writer): no
# predicted rows, no predicted_*.u32.
A="$WORK/active.trace"
check "write an active-only trace" python3 "$SRC/python/flashbed_trace.py" copy --active-only "$T" "$A"
check "export active-only (csv)" "$FLASHBED" trace export "$A" --out "$WORK/acsv"
check "export active-only (npz-friendly)" "$FLASHBED" trace export "$A" --format npz-friendly --out "$WORK/anpz"
check "active-only: csv, npz-friendly and the Python reader agree" verify "$A" "$WORK/acsv" "$WORK/anpz" ""
check "active-only: no predicted rows" bash -c "! grep -q ',predicted$' '$WORK/acsv/neurons.csv'"
check "active-only: the same active rows as its source" \
    cmp -s <(grep ',active$' "$WORK/acsv/neurons.csv") <(grep ',active$' "$WORK/csv/neurons.csv")
check "no temporary left by the good runs" bash -c "! ls -d '$WORK'/*.tmp.* '$WORK'/made/a/*.tmp.* 2>/dev/null"

# Bad input: each names the file or option, exits non-zero, leaves nothing.
nothing_left() { # folder
    [ ! -e "$1" ] && ! ls -d "$1".tmp.* >/dev/null 2>&1
}
expect_error "missing trace" "$WORK/none.trace" trace export "$WORK/none.trace" --out "$WORK/bad1"
check "missing trace: nothing left" nothing_left "$WORK/bad1"
D="$WORK/damaged.trace"
cp "$T" "$D"
size=$(stat -c %s "$D")
python3 -c "import sys; p, o = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, 'rb').read()); b[o] ^= 0x10; open(p, 'wb').write(b)" \
    "$D" $((size / 2))
expect_error "damaged trace (csv)" "$D: token" trace export "$D" --out "$WORK/bad2"
check "damaged trace (csv): nothing left" nothing_left "$WORK/bad2"
expect_error "damaged trace (npz-friendly)" "$D: token" trace export "$D" --format npz-friendly --out "$WORK/bad3"
check "damaged trace (npz-friendly): nothing left" nothing_left "$WORK/bad3"
expect_error "damaged trace into missing parents" "$D: token" trace export "$D" --out "$WORK/newparent/bad4"
check "damaged trace: the parents made for --out go again" test ! -e "$WORK/newparent"
EXPECT_RC=2 expect_error "unknown --format" "format" trace export "$T" --format parquet --out "$WORK/bad5"
check "unknown --format: nothing left" nothing_left "$WORK/bad5"
touch "$WORK/afile"
expect_error "--out whose parent cannot exist" "$WORK/afile" trace export "$T" --out "$WORK/afile/sub/bad6"
check "--out whose parent cannot exist: nothing left" nothing_left "$WORK/afile/sub/bad6"
expect_error "--out exists already" "already exists" trace export "$T" --out "$WORK/csv"
check "--out existing: left as it was" test -s "$WORK/csv/neurons.csv"
EXPECT_RC=2 expect_error "no --out" "needs --out" trace export "$T"
EXPECT_RC=2 expect_error "no trace" "needs a trace FILE" trace export --out "$WORK/bad7"
check "no trace: nothing left" nothing_left "$WORK/bad7"

finish
