#!/usr/bin/env python3
"""same_as_flashbed.py TRACE PY_INFO_JSON FLASHBED_TRACE_INFO_JSON

Python's `flashbed_trace.py info --json` against flashbed trace info's
trace_info.json for the same trace: the same shape, weight type and units,
tokens and sequences,
and per layer the neurons flashbed's densities count (density * tokens *
d_ff), active and predicted, and the kept input channels (density * tokens
* d_model) of a trace with channel sets. Exit 1 naming each difference."""
import json
import sys

path, py, fb = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
ok = True


def want(what, a, b):
    global ok
    if a != b:
        print("%s: %s: python %r, flashbed %r" % (path, what, a, b), file=sys.stderr)
        ok = False


for k in ("n_layers", "d_model", "d_ff", "dtype", "unit_kind", "units_per_layer", "tokens", "sequences"):
    want(k, py[k], fb[k])
want("version", py["version"], fb["format_version"])
want("checked", py["checked"], fb["checked"])
want("file bytes", py["file_bytes"], fb["file_bytes"])
n = fb["tokens"] * fb["d_ff"]
want("active per layer", py["active_per_layer"], [round(d * n) for d in fb["density_active"]])
want("active total", py["active_neurons"], sum(round(d * n) for d in fb["density_active"]))
if "density_predicted" in fb:
    want("predicted per layer", py["predicted_per_layer"], [round(d * n) for d in fb["density_predicted"]])
    want("predicted total", py["predicted_neurons"], sum(round(d * n) for d in fb["density_predicted"]))
else:
    want("has predicted", py["has_predicted"], False)
    want("predicted total", py["predicted_neurons"], 0)
if "density_channels" in fb:
    c = fb["tokens"] * fb["d_model"]
    want("channels per layer", py["channels_per_layer"], [round(d * c) for d in fb["density_channels"]])
else:
    want("has channels", py.get("has_channels", False), False)
want("source", json.loads(py["source"]), fb["source"])
sys.exit(0 if ok else 1)
