#!/usr/bin/env python3
"""Gives a synthetic HF folder's norms and biases random values, in place:

  hf_perturb.py DIR SEED

model make writes norms 1 and biases 0, under which a norm's or a bias's
layout (which of Falcon's or Persimmon's fused rows it belongs to, whether
a q/k bias or q/k LayerNorm was reordered with its rows) cannot show in the
logits. Every 1-D tensor of DIR/model.safetensors (F32) is rewritten:
weights 1 + U(-0.5, 0.5), biases their value + U(-0.3, 0.3). Standard
library only."""
import json
import random
import struct
import sys


def main(folder, seed):
    path = folder + "/model.safetensors"
    data = bytearray(open(path, "rb").read())
    n = struct.unpack_from("<Q", data, 0)[0]
    header = json.loads(data[8:8 + n])
    rnd = random.Random(seed)
    for name in sorted(k for k in header if k != "__metadata__"):
        info = header[name]
        if len(info["shape"]) != 1:
            continue
        if info["dtype"] != "F32":
            raise SystemExit("%s: %s is %s; needs F32" % (path, name, info["dtype"]))
        a, b = info["data_offsets"]
        start = 8 + n + a
        values = struct.unpack_from("<%df" % ((b - a) // 4), data, start)
        if name.endswith(".weight"):
            new = [1.0 + rnd.uniform(-0.5, 0.5) for _ in values]
        else:
            new = [v + rnd.uniform(-0.3, 0.3) for v in values]
        struct.pack_into("<%df" % len(new), data, start, *new)
    open(path, "wb").write(bytes(data))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
