#!/usr/bin/env bash
# Fuzzes harnesses one after another, each for SECONDS, under nice, in one
# process each (the machine is shared): new inputs go to WORK/<harness>/,
# crashes to WORK/<harness>-crash-*; one line per harness is appended to
# WORK/summary.tsv (harness, seconds it ran (less than SECONDS when it
# crashed), date, executions, crash files) for
# tests/fuzz/README.md's table.
#   tests/fuzz/fuzz_all.sh build-fuzz 300 /tmp/flashbed-fuzz [harness...]
set -uo pipefail
build=$1 seconds=$2 work=$3
shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(safetensors gguf hf_config tokenizer_sp tokenizer_bytelevel tokenizer_bin tokenizer_spm
                                          llama2c model_json trace hw_profile sweep_results options parse)
max_len() {
    case $1 in
        options|parse) echo 1024 ;;
        tokenizer_*|model_json|llama2c|sweep_results|hw_profile) echo 16384 ;;
        *) echo 8192 ;;
    esac
}
dict() {
    case $1 in
        safetensors|hf_config|tokenizer_sp|tokenizer_bytelevel|model_json|hw_profile|sweep_results)
            echo "-dict=$root/tests/fuzz/json.dict" ;;
        gguf) echo "-dict=$root/tests/fuzz/gguf.dict" ;;
    esac
}
mkdir -p "$work"
for h in "${harnesses[@]}"; do
    mkdir -p "$work/$h"
    start=$(date -u +%FT%TZ) t0=$(date +%s)
    # a session of its own, whose scheduling group gets nice 19 too: with
    # the kernel's autogroups, nice alone does not yield to other sessions
    setsid -w nice -n 19 "$build/tests/fuzz/fuzz_$h" "$work/$h" "$root/tests/fuzz/corpus/$h" \
        -max_total_time="$seconds" -max_len="$(max_len "$h")" -rss_limit_mb=2048 -timeout=10 $(dict "$h") \
        -print_final_stats=1 -artifact_prefix="$work/$h-" >"$work/$h.log" 2>&1 &
    pid=$!
    for _ in $(seq 50); do # once setsid has made the new session: never renice ours
        [ "$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$pid" ] && { echo 19 >"/proc/$pid/autogroup"; break; } 2>/dev/null
        sleep 0.1
    done
    wait "$pid"
    rc=$? elapsed=$(($(date +%s) - t0))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$h.log" | grep -o '[0-9]*$')
    crashes=$(cd "$work" && ls -d "$h"-crash-* "$h"-leak-* "$h"-timeout-* "$h"-oom-* 2>/dev/null | tr '\n' ' ')
    printf '%s\t%s\t%s\t%s\trc %s\t%s\n' "$h" "$elapsed" "$start" "${execs:-?}" "$rc" "${crashes:-none}" \
        | tee -a "$work/summary.tsv"
done
