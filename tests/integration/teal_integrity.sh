#!/usr/bin/env bash
# ffn_t.bin's checksums (issue 34): model transpose writes ffn_t.crc32c (one
# CRC-32C per channel bundle and row of down) and records it beside
# ffn_t.bin in model.json; model verify checks every unit; run --active teal
# checks every row it reads before it is used or kept: one flipped byte
# stops the run (exit 1, results kept) naming the file, the layer, the
# channel or row and its byte offset, after one read again; --verify off
# runs on; an ffn_t.bin without checksums runs, reported as unchecked. Then
# the fault engine under the teal path: every injected fault retried and
# counted, or the run stopped naming the offset; nothing counted as read
# that was not.
source "$(dirname "$0")/lib.sh"

words=(the a cat dog sat on mat ran to park and saw big small red blue bird tree house girl boy mom dad happy day)
RANDOM=7
for i in $(seq 900); do printf '%s ' "${words[RANDOM % ${#words[@]}]}"; done >"$WORK/text.txt"
P="the cat sat on the mat and the dog"
M="$WORK/m"
check "model make" "$FLASHBED" model make --arch llama --shape llama-tiny --seed 5 --dtype f16 --out "$WORK/hf"
check "convert" "$FLASHBED" convert "$WORK/hf" --out "$M"
check "calibrate" "$FLASHBED" sparsify calibrate --model "$M" --text "$WORK/text.txt" --sparsity 0.5 --tokens 300 \
    --threads 1 --kind both
check "transpose" "$FLASHBED" model transpose "$M"

rec() { json_get "$1/model.json" "d['ffn_transposed']$2"; }
LB=$(rec "$M" "['layer_bytes']")
CS=$(rec "$M" "['chan_stride']")
DS=$(rec "$M" "['down_stride']")
DM=$(json_get "$M/model.json" 'd["d_model"]')
units=$(json_get "$M/model.json" 'd["n_layers"] * (d["d_model"] + d["d_ff"])')
check "ffn_t.crc32c: 4 bytes per channel bundle and row of down" test "$(stat -c %s "$M/ffn_t.crc32c")" -eq $((4 * units))
check "the record names the algorithm and the file" test "$(rec "$M" "['checksums']['algorithm']") $(rec "$M" "['checksums']['file']")" = "crc32c ffn_t.crc32c"
out=$("$FLASHBED" model verify "$M")
check "verify: intact, exit 0" test $? -eq 0
check "verify: ffn_t.bin's units checked" grep -q "^ffn_t.bin: 128 channel bundles and 344 rows of down checked against their CRC-32C and for finite values$" <<<"$out"

damage() { # folder, file, byte offset, bytes (printf format)
    printf "$4" | dd of="$1/$2" bs=1 seek="$3" conv=notrunc status=none
}
summary() { json_get "$1/run.json" "d['summary']$2"; }
trun() { # model, out, extra args
    local m=$1 out=$2
    shift 2
    "$FLASHBED" run --model "$m" --active teal --policy lru --dram-budget 2m --prompt "$P" -n 4 --ignore-eos --threads 1 \
        --io-threads 1 --quiet --out "$WORK/$out" "$@" 2>"$WORK/$out.err" >/dev/null
}
toks() { json_get "$WORK/$1/run.json" "[t['id'] for t in d['tokens']]"; }
sumt() { json_get "$WORK/$1/run.json" "int(sum(t['$2'] for t in d['tokens']))"; }

# ---- intact: every row read is checked
check "run teal, intact" trun "$M" ok
check "every row read checked: rows verified = channel reads + down reads" test "$(summary "$WORK/ok" "['verify']['rows_verified']")" = \
    "$(( $(sumt ok chan_reads) + $(sumt ok down_reads) ))"
check "says it checked against ffn_t.crc32c" test "$(summary "$WORK/ok" "['verify']['reads']")" = "checked against ffn_t.crc32c"
check "bytes read = the rows read x their strides" test "$(sumt ok bytes_read)" = \
    "$(( $(sumt ok chan_reads) * CS + $(sumt ok down_reads) * DS ))"

# ---- one flipped byte in layer 1's channel 5 (read by the first token)
cp -r "$M" "$WORK/d"
coff=$((LB + 5 * CS))
damage "$WORK/d" ffn_t.bin $((coff + 7)) '\x01'
out=$("$FLASHBED" model verify "$WORK/d")
check "verify damaged: exit 1" test $? -eq 1
check "verify: the channel by layer and offset" grep -q "^damaged: ffn_t.bin: layer 1 channel 5 (byte offset $coff): checksum mismatch$" <<<"$out"
trun "$WORK/d" bad
check "run teal, damaged: exit 1" test $? -eq 1
check "run teal, damaged: the message names file, layer, channel, offset" grep -q \
    "error: run: .*d/ffn_t.bin: layer 1 channel 5 (byte offset $coff, [0-9]* bytes) does not match its checksum in ffn_t.crc32c" "$WORK/bad.err"
check "run teal, damaged: results kept, failed, read again once" test \
    "$(summary "$WORK/bad" "['status']") $(summary "$WORK/bad" "['verify']['verify_retries']") $(json_get "$WORK/bad/run.json" 'len(d["tokens"])')" = "failed 1 1"
check "run teal, damaged: the failed batch's rows left the cache" test "$(sumt bad cache_rows)" -lt "$(sumt bad rows_inserted)"
check "run teal, damaged: run.md says it" grep -q "^- \*\*failed\*\*: .*layer 1 channel 5 (byte offset $coff" "$WORK/bad/run.md"
check "--verify off: the damaged file runs to the end" trun "$WORK/d" off --verify off
check "--verify off: nothing checked, said so" test "$(summary "$WORK/off" "['verify']['rows_verified']") $(summary "$WORK/off" "['verify']['reads']")" = \
    "0 not checked (--verify off)"

# a row of down: layer 0's row 3
cp -r "$M" "$WORK/e"
doff=$((DM * CS + 3 * DS))
damage "$WORK/e" ffn_t.bin $((doff + 100)) '\xff\xff'
out=$("$FLASHBED" model verify "$WORK/e")
check "verify: the row of down, its NaN" test "$(grep -c -e "^damaged: ffn_t.bin: layer 0 row of down 3 (byte offset $doff): checksum mismatch$" \
    -e "^damaged: ffn_t.bin: layer 0 row of down 3 (byte offset $doff): 1 value NaN or infinite (the first at byte $((doff + 100)))$" <<<"$out")" = 2

# the checksums file damaged: refused, naming it
cp -r "$M" "$WORK/c"
damage "$WORK/c" ffn_t.crc32c 8 '\x01'
trun "$WORK/c" badsums
check "a damaged ffn_t.crc32c: refused naming it" test "$? $(grep -c "ffn_t.crc32c: its CRC-32C differs from model.json" "$WORK/badsums.err")" = "1 1"
check "--verify off does not read it" trun "$WORK/c" badsums-off --verify off

# an ffn_t.bin from before checksums: runs, unchecked
cp -r "$M" "$WORK/old"
rm "$WORK/old/ffn_t.crc32c"
python3 - "$WORK/old/model.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["ffn_transposed"]["checksums"]
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
check "no checksums: runs" trun "$WORK/old" old
check "no checksums: reported unchecked" test "$(summary "$WORK/old" "['verify']['reads']") $(summary "$WORK/old" "['verify']['rows_verified']")" = \
    "not checked (ffn_t.bin has no checksums) 0"
check "no checksums: the same tokens" test "$(toks old)" = "$(toks ok)"
out=$("$FLASHBED" model verify "$WORK/old")
check "verify: ffn_t.bin unchecked, said so" grep -q "^ffn_t.bin: 128 channel bundles and 344 rows of down checked for finite values (unchecked" <<<"$out"
check "transpose --force adds them" "$FLASHBED" model transpose "$WORK/old" --force
check "now checked" test "$(rec "$WORK/old" "['checksums']['file']")" = ffn_t.crc32c -a -s "$WORK/old/ffn_t.crc32c"

# ---- the fault engine under the teal path
trun "$M" eio1 --io-engine fault --fault eio:1
check "eio:1: exit 1, failed at the first token" test "$? $(summary "$WORK/eio1" "['status']") $(json_get "$WORK/eio1/run.json" 'len(d["tokens"])')" = "1 failed 1"
check "eio:1: nothing counted as read" test "$(sumt eio1 bytes_read) $(sumt eio1 chan_reads) $(sumt eio1 down_reads) $(summary "$WORK/eio1" "['verify']['rows_verified']")" = "0 0 0 0"
check "eio:1: the caches hold none of the rows the step decided to keep" test \
    "$(sumt eio1 cache_rows) $(( $(sumt eio1 rows_inserted) > 0 ))" = "0 1"
check "eio:1: 1 retry, 2 EIO injected" test "$(summary "$WORK/eio1" "['read_retries']") $(summary "$WORK/eio1" "['faults']['eio']")" = "1 2"
check "eio:1: the error names ffn_t.bin, the offset, the layer and channel" grep -q \
    "error: run: fault read of .* at offset [0-9]* of .*ffn_t.bin failed: Input/output error (tried 2 times) (layer 0, channel [0-9]*)" "$WORK/eio1.err"
X=$(summary "$WORK/eio1" "['error']" | sed 's/.*at offset \([0-9]*\) .*/\1/')
for kind in eio short; do
    check "$kind@X: completes" trun "$M" $kind --io-engine fault --fault $kind@$X
    check "$kind@X: 1 retry, 1 injected, the clean run's tokens and bytes" test \
        "$(summary "$WORK/$kind" "['read_retries']") $(summary "$WORK/$kind" "['faults']['$kind']") $(toks $kind) $(sumt $kind bytes_read)" = \
        "1 1 $(toks ok) $(sumt ok bytes_read)"
done
if trun "$M" uclean --io-engine io_uring --iodepth 4; then
    check "io_uring base, eio@X: completes" trun "$M" ueio --io-engine fault --fault-engine io_uring --iodepth 4 --fault eio@$X
    check "io_uring base, eio@X: 1 retry, 1 injected, the clean run's tokens and bytes" test \
        "$(summary "$WORK/ueio" "['read_retries']") $(summary "$WORK/ueio" "['faults']['eio']") $(toks ueio) $(sumt ueio bytes_read)" = \
        "1 1 $(toks ok) $(sumt ok bytes_read)"
else
    echo "skipped: the fault engine over io_uring (io_uring not built or refused here)"
fi
trun "$M" twice --io-engine fault --fault short@$X/2
check "short@X/2: exit 1, the short read named with its offset" test "$? $(grep -c "error: run: .*at offset $X of .*ffn_t.bin.*short read.*tried 2 times.*(layer 0, channel" "$WORK/twice.err")" = "1 1"
check "short@X/2: nothing counted as read for the failed batch" test "$(sumt twice chan_reads)" -lt "$(json_get "$WORK/ok/run.json" "int(d['tokens'][0]['chan_reads'])")"
# at rates, over seeds: each injected fault retried and counted, or its read's
# second failure stopped the run (one reader thread: nothing else in flight);
# the rows counted are those whose batch completed (a failed batch's reads
# that completed count as bytes only)
for seed in 1 2 3 4 5 6; do
    trun "$M" rate$seed --io-engine fault --fault eio:0.01,short:0.01 --fault-seed $seed
    rc=$?
    st=$(summary "$WORK/rate$seed" "['status']")
    cmp='=='; [ "$st" = failed ] && cmp='>='
    res=$(json_get "$WORK/rate$seed/run.json" "(d['summary']['read_retries'] + (d['summary']['status'] == 'failed') == \
        d['summary']['faults']['eio'] + d['summary']['faults']['short'], sum(x['bytes_read'] for x in d['tokens']) $cmp \
        sum(x['chan_reads'] * $CS + x['down_reads'] * $DS for x in d['tokens']))")
    check "seed $seed ($st): faults = retries (+1 when stopped); bytes $cmp rows read" test "$res" = "(True, True)"
    if [ "$st" = complete ]; then
        check "seed $seed: complete, exit 0, the clean run's tokens" test "$rc $(toks rate$seed)" = "0 $(toks ok)"
    else
        check "seed $seed: stopped, exit 1, the offset named" test "$rc $(grep -c "error: run: .*at offset [0-9]* of .*ffn_t.bin" "$WORK/rate$seed.err")" = "1 1"
    fi
done
finish
