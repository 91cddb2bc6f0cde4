#!/usr/bin/env bash
# run --device-budget (issue 31): on cpu it is refused in one line (no
# device memory); on sim without it the caches follow --dram-budget, the
# same as cpu's, and run.json records what the plan puts on the device;
# that many device bytes given back as --device-budget size the same
# caches, so the bytes read per token are cpu's at the DRAM budget, and a
# byte less gives a row less per layer (the one rule, cache_capacity_rows);
# a percentage is of the model, as --dram-budget's; a device budget that
# cannot hold the weights and KV cache, or them with a layer's working set,
# and a DRAM budget that cannot hold the host's pinned part beside it, are
# refused naming both numbers; run.md says what the device holds; a device
# failure while the engine starts names the device budget. Skipped (77)
# where this build has no sim backend.
source "$(dirname "$0")/lib.sh"

check "opt-tiny model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --relu-density 0.15 --out "$WORK/opt-hf"
check "convert it" "$FLASHBED" convert "$WORK/opt-hf" --out "$WORK/opt"
RUN=(run --model "$WORK/opt" --prompt "the cat sat" -n 8 --ignore-eos --threads 1 --io-threads 2 --quiet --mode all)
if ! "$FLASHBED" "${RUN[@]}" --backend sim --out "$WORK/probe" >/dev/null 2>"$WORK/sim.err"; then
    echo "skipped: sim does not run here ($(cat "$WORK/sim.err"))"
    exit 77
fi

# cpu: no device memory to budget; one line, nothing written.
err=$("$FLASHBED" "${RUN[@]}" --device-budget 50% --out "$WORK/no/cpu" 2>&1 >/dev/null)
check "cpu refuses --device-budget" test $? -eq 1
check "in one line naming the option and the backend" test "$err" = "flashbed: error: run --device-budget: the cpu backend computes in host memory: there is no device memory to budget (--dram-budget bounds it)"

pol() { json_get "$1/run.json" "d['provenance']['policy']$2"; }
per_token() { json_get "$1/run.json" "[int(t['bytes_read']) for t in d['tokens']]"; }
check "cpu at a DRAM budget" "$FLASHBED" "${RUN[@]}" --dram-budget 80% --out "$WORK/cpu"
check "sim at the same DRAM budget" "$FLASHBED" "${RUN[@]}" --dram-budget 80% --backend sim --out "$WORK/sim-dram"
C=$(pol "$WORK/cpu" "['capacity_rows_per_layer']")
D=$(pol "$WORK/sim-dram" "['device']['bytes_held']")
check "a cache of rows" test "$C" -gt 1
check "without --device-budget: cpu's caches" test "$(pol "$WORK/sim-dram" "['capacity_rows_per_layer']")" = "$C"
check "sized by the DRAM budget, no device budget" test "$(pol "$WORK/sim-dram" "['device']['caches_sized_by']"),$(json_get "$WORK/sim-dram/run.json" "d['provenance']['device_budget_bytes']")" = "DRAM budget,0"
check "the device holds weights, KV, staging and the caches" test "$(json_get "$WORK/sim-dram/run.json" \
    "(lambda p, v: v['bytes_held'] == v['weights_kv_bytes'] + v['staging_bytes'] + sum(p['cache_rows_by_layer']) * v['cache_row_bytes'])(d['provenance']['policy'], d['provenance']['policy']['device'])")" = True
check "cpu's run.json has no device keys" test "$(json_get "$WORK/cpu/run.json" "'device_budget_bytes' in d['provenance'] or 'device' in d['provenance']['policy']")" = False

# The device bytes of that plan as a device budget: the same caches, the
# same reads.
check "sim at --device-budget $D" "$FLASHBED" "${RUN[@]}" --device-budget "${D}B" --backend sim --out "$WORK/sim-dev"
check "the same rows per layer as cpu's" test "$(pol "$WORK/sim-dev" "['capacity_rows_per_layer']")" = "$C"
check "sized by the device budget, recorded" test "$(pol "$WORK/sim-dev" "['device']['caches_sized_by']"),$(json_get "$WORK/sim-dev/run.json" "int(d['provenance']['device_budget_bytes'])")" = "device budget,$D"
check "holding what the DRAM plan put there" test "$(pol "$WORK/sim-dev" "['device']['bytes_held']")" = "$D"
check "bytes read per token are cpu's" test "$(per_token "$WORK/sim-dev")" = "$(per_token "$WORK/cpu")"
check "the same greedy tokens" test "$(json_get "$WORK/sim-dev/run.json" "[t['id'] for t in d['tokens']]")" = "$(json_get "$WORK/cpu/run.json" "[t['id'] for t in d['tokens']]")"
check "a byte less" "$FLASHBED" "${RUN[@]}" --device-budget "$((D - 1))B" --backend sim --out "$WORK/sim-less"
check "gives a row less per layer" test "$(pol "$WORK/sim-less" "['capacity_rows_per_layer']")" = "$((C - 1))"
check "within the budget" test "$(pol "$WORK/sim-less" "['device']['bytes_held'] <= $D - 1")" = True
check "run.md says what the device holds" grep -q "^- device memory: .* MB held (weights and KV cache .*), the caches sized by the device budget of " "$WORK/sim-dev/run.md"

# A percentage, of the model as --dram-budget's.
check "--device-budget 60%" "$FLASHBED" "${RUN[@]}" --device-budget 60% --backend sim --out "$WORK/sim-pct"
check "60% of the model's bytes" test "$(json_get "$WORK/sim-pct/run.json" "int(d['provenance']['device_budget_bytes']) == int(0.6 * d['provenance']['model_bytes'])")" = True

# Refusals, naming the budget and what it had to hold.
expect_error "weights and KV" "run: the device budget of .* kB: the weights that stay on the device and the KV cache already take .* kB" \
    "${RUN[@]}" --device-budget 10% --backend sim --out "$WORK/no/small"
expect_error "naive's layer" "run: the device budget of .* cannot hold the weights and KV cache (.* kB) plus the device staging area (.* MB: 256 rows of [0-9]* bytes): it needs .* MB" \
    "${RUN[@]}" --mode naive --device-budget 30% --backend sim --out "$WORK/no/naive"
expect_error "the host's pinned part" "run: the DRAM budget of 1.00 kB cannot hold what the host keeps beside the device: .* kB pinned: a staging ring of 2 x" \
    "${RUN[@]}" --device-budget "${D}B" --dram-budget 1000B --backend sim --out "$WORK/no/host"
expect_error "dense" "run --mode dense: the model and its KV cache need .* MB on the device, the device budget is .* kB" \
    "${RUN[@]}" --mode dense --device-budget 30% --backend sim --out "$WORK/no/dense"
check "nothing written" test ! -e "$WORK/no"

# A device that fails while the engine starts: the error says what the
# plan put on it and names the way to put less.
expect_error "a device failure at start" "run: sim backend: .*an injected failure.*; if the device cannot hold the [0-9]* bytes this run puts on it .*--device-budget SIZE" \
    --sim-fail-at 1 "${RUN[@]}" --backend sim --out "$WORK/fail"
finish
