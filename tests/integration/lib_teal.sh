# The engine of input sparsity checked against the replay (issue 33),
# sourced after lib.sh by teal_record.sh and teal_record_stories.sh.
#
# teal_crosscheck MODEL TAG POLICY BUDGET PROMPT N [RUN OPTIONS...]: runs
# MODEL with --active teal, POLICY and BUDGET ("" for none), recording its
# trace, then replays the trace with layout transposed, the same policy, at
# the engine's strides (--row-stride aligned: both streams padded to 4096
# bytes as ffn_t.bin is, --read-align the run's summary.read_align) and the
# run's cache budget (summary.transposed.cache_budget_bytes: what the
# budget leaves after dram.bin, the KV cache and staging; none without a
# budget). Every token's bytes, reads, hits, needed rows of each stream and
# rows inserted and deleted must be equal. Leaves $WORK/TAG (run.json, replay/) and
# $WORK/TAG.trace; prints one line of the totals per stream.
teal_crosscheck() {
    local model=$1 tag=$2 policy=$3 budget=$4 prompt=$5 n=$6
    shift 6
    local out="$WORK/$tag" rec="$WORK/$tag.trace" b=()
    [ -n "$budget" ] && b=(--dram-budget "$budget")
    check "$tag: run --active teal --record" "$FLASHBED" run --model "$model" --active teal --policy "$policy" "${b[@]}" \
        --prompt "$prompt" -n "$n" --ignore-eos --threads 1 --io-threads 2 --record "$rec" --out "$out" --quiet "$@"
    [ -f "$out/run.json" ] && [ -f "$rec" ] || return 0
    local C A
    C=$(json_get "$out/run.json" "int(d['summary']['transposed']['cache_budget_bytes'])")
    CB="${C}B" # a budget in bytes says its unit
    [ "$C" = 0 ] && C=none && CB=none # the run had no budget: replay's none, not a budget of 0 bytes
    A=$(json_get "$out/run.json" "int(d['summary']['read_align'])")
    check "$tag: replay at the run's strides and cache budget" "$FLASHBED" replay --trace "$rec" --policy "$policy" \
        --layout transposed --dram-budget "$CB" --row-stride aligned --read-align "$A" --use actual \
        --out "$out/replay" --quiet
    [ -f "$out/replay/replay.json" ] || return 0
    local cmp
    cmp=$(python3 - "$out/run.json" "$out/replay/replay.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
res = json.load(open(sys.argv[2]))["results"][0]
pt, toks = res["per_token"], run["tokens"]
engine = {
    "chan_bytes": [t["chan_bytes"] for t in toks], "chan_reads": [t["chan_reads"] for t in toks],
    "down_bytes": [t["down_bytes"] for t in toks], "down_reads": [t["down_reads"] for t in toks],
    "chan_needed": [t["kept_channels"] for t in toks],
    "down_needed": [t["needed"] - t["kept_channels"] for t in toks],
    # a hit is a needed row held: every miss of either stream is one read
    "chan_hits": [t["kept_channels"] - t["chan_reads"] for t in toks],
    "down_hits": [t["needed"] - t["kept_channels"] - t["down_reads"] for t in toks],
    "rows_inserted": [t["rows_inserted"] for t in toks], "rows_deleted": [t["rows_deleted"] for t in toks],
}
bad = [k for k, v in engine.items() if [int(x) for x in v] != [int(x) for x in pt[k]]]
t = {k: int(sum(v)) for k, v in engine.items()}
rows = (res["chan_row_bytes"], res["down_row_bytes"], run["summary"]["transposed"]["chan_row_bytes"],
        run["summary"]["transposed"]["down_row_bytes"])
if rows[:2] != rows[2:]:
    bad.append("row bytes %s" % (rows,))
if len(toks) != res["tokens"]:
    bad.append("tokens %d recorded %d" % (len(toks), res["tokens"]))
print("MISMATCH " + ", ".join(bad) if bad else
      "tokens %d; channels %d B in %d reads, %d hits of %d; down %d B in %d reads, %d hits of %d; rows in %d" %
      (len(toks), t["chan_bytes"], t["chan_reads"], t["chan_hits"], t["chan_needed"], t["down_bytes"],
       t["down_reads"], t["down_hits"], t["down_needed"], t["rows_inserted"]))
PY
)
    checks=$((checks + 1))
    case "$cmp" in
    tokens*) echo "$tag ($policy, budget ${budget:-none}, cache $C): engine = replay per token: $cmp" ;;
    *) fail "$tag: engine against replay: $cmp" ;;
    esac
}
