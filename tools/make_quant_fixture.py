#!/usr/bin/env python3
"""Writes tests/data/quant/quant_ref.txt: gguf-py's decode of random blocks
of every quantized weight type, its q8_0 quantization of random
activations, and its quantization of random weights to each 32-element
type (q4_0, q4_1, q5_0, q5_1, q8_0) -- the independent reference
tests/unit/test_quant_decode.c checks flashbed's decode, q8_0 activation
quantizer and block encoders (engine/model/dtype_encode.h) against, bit
for bit.

The reference is gguf-py's numpy code (gguf.quants.dequantize / quantize),
written apart from ggml's C and from ours. Run it in a scratch venv with
the pinned versions (the fixture records them; the script refuses others):

    python3 -m venv /tmp/quant-venv
    /tmp/quant-venv/bin/pip install gguf==0.19.0 numpy==2.4.6
    /tmp/quant-venv/bin/python tools/make_quant_fixture.py > tests/data/quant/quant_ref.txt

Deterministic: the inputs come from splitmix64 (seed SEED + the type's
ggml code), which the C test reimplements, so the fixture stores no
inputs -- only the SHA-256 of the input bytes (to prove the two
generators agree), the SHA-256 of the reference output, and the first
block's output in full (to name the first element that differs).

Block bytes are uniform random except the halves (scales, mins), whose
exponent is moved off all-ones so that every half is finite (subnormals,
zeros and both signs stay). Activations for q8_0 are 24-bit integers
times 2^-e (e per block in 8..31; exact in f32), every 16th block zeros;
the weights encoded are the same draws (seed SEED + 2000 + the type's
code) with, besides, every 16th block from the 8th on one value repeated
(a range of 0: q4_1's and q5_1's d = 0).
"""
import hashlib
import sys
from importlib.metadata import version

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

GGUF_VERSION = "0.19.0"
NUMPY_VERSION = "2.4.6"
SEED = 0x5EED_F1A5_4B3D

# name, ggml type, block elements, block bytes, the halves' byte offsets, blocks
TYPES = [
    ("q4_0", T.Q4_0, 32, 18, [0], 512),
    ("q4_1", T.Q4_1, 32, 20, [0, 2], 512),
    ("q5_0", T.Q5_0, 32, 22, [0], 512),
    ("q5_1", T.Q5_1, 32, 24, [0, 2], 512),
    ("q8_0", T.Q8_0, 32, 34, [0], 512),
    ("q2_k", T.Q2_K, 256, 84, [80, 82], 256),
    ("q3_k", T.Q3_K, 256, 110, [108], 256),
    ("q4_k", T.Q4_K, 256, 144, [0, 2], 256),
    ("q5_k", T.Q5_K, 256, 176, [0, 2], 256),
    ("q6_k", T.Q6_K, 256, 210, [208], 256),
]
ACT_BLOCKS = 512
M64 = (1 << 64) - 1


def splitmix64(state):
    """The generator's next (state, output); the C test's is the same."""
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def random_bytes(seed, n):
    out = bytearray()
    state = seed
    while len(out) < n:
        state, r = splitmix64(state)
        out += r.to_bytes(8, "little")
    return out[:n]


def block_bytes(code, elems_bytes, halves, blocks):
    raw = random_bytes(SEED + code, elems_bytes * blocks)
    for b in range(blocks):
        for off in halves:
            at = b * elems_bytes + off
            h = raw[at] | raw[at + 1] << 8
            if h & 0x7C00 == 0x7C00:  # inf or NaN: exponent 30 instead
                h &= ~0x0400
            raw[at], raw[at + 1] = h & 0xFF, h >> 8
    return bytes(raw)


def activations(seed, blocks, constant_blocks=False):
    xs = np.zeros(blocks * 32, dtype=np.float32)
    state = seed
    for b in range(blocks):
        state, r = splitmix64(state)
        e = 8 + r % 24  # |x| < 2^15: the half d = amax / 127 stays finite
        for j in range(32):
            state, r = splitmix64(state)
            v = (r >> 40) - (1 << 23)  # a 24-bit signed integer
            xs[b * 32 + j] = np.float32(np.ldexp(np.float64(v), -int(e)))
        if b % 16 == 15:
            xs[b * 32:(b + 1) * 32] = 0
        if constant_blocks and b % 16 == 7:
            xs[b * 32:(b + 1) * 32] = xs[b * 32]
    return xs


def hexwords(floats):
    return " ".join("%08x" % w for w in np.asarray(floats, dtype=np.float32).view(np.uint32))


def main():
    got = (version("gguf"), np.__version__)
    if got != (GGUF_VERSION, NUMPY_VERSION):
        sys.exit("make_quant_fixture.py: needs gguf %s and numpy %s, found %s and %s" %
                 (GGUF_VERSION, NUMPY_VERSION, got[0], got[1]))
    w = sys.stdout.write
    w("# gguf-py's decode of random blocks, its q8_0 quantization of random\n")
    w("# activations and its encoding of random weights to the 32-element types:\n")
    w("# written by tools/make_quant_fixture.py (inputs: splitmix64).\n")
    w("gguf %s\nnumpy %s\nseed %d\n" % (GGUF_VERSION, NUMPY_VERSION, SEED))
    for name, qtype, elems, nbytes, halves, blocks in TYPES:
        raw = block_bytes(int(qtype), nbytes, halves, blocks)
        data = np.frombuffer(raw, dtype=np.uint8).reshape(blocks, nbytes)
        out = gguf.quants.dequantize(data, qtype).astype(np.float32).reshape(-1)
        assert out.size == blocks * elems and np.isfinite(out).all()
        w("decode %s %d %s %s\n" % (name, blocks, hashlib.sha256(raw).hexdigest(),
                                    hashlib.sha256(out.tobytes()).hexdigest()))
        w("first %s %s\n" % (name, hexwords(out[:elems])))
    xs = activations(SEED + 1000, ACT_BLOCKS)
    q = gguf.quants.quantize(xs.reshape(ACT_BLOCKS, 32), T.Q8_0).reshape(-1)
    w("quantize q8_0 %d %s %s\n" % (ACT_BLOCKS, hashlib.sha256(xs.tobytes()).hexdigest(),
                                    hashlib.sha256(q.tobytes()).hexdigest()))
    w("qfirst q8_0 %s\n" % bytes(q[:34 * 2]).hex())
    for name, qtype, elems, nbytes, halves, blocks in TYPES:
        if elems != 32:
            continue  # gguf-py has no K-quant quantizer
        xs = activations(SEED + 2000 + int(qtype), blocks, constant_blocks=True)
        q = gguf.quants.quantize(xs.reshape(blocks, 32), qtype).reshape(-1)
        w("encode %s %d %s %s\n" % (name, blocks, hashlib.sha256(xs.tobytes()).hexdigest(),
                                     hashlib.sha256(q.tobytes()).hexdigest()))
        w("efirst %s %s\n" % (name, bytes(q[:nbytes * 8]).hex()))


if __name__ == "__main__":
    main()
