#!/usr/bin/env python3
"""Writes the GGUF fuzz harness's seeds (tests/fuzz/corpus/gguf/seed-*):
small valid files, written here by the format's rules with the standard
library only, that between them hold every metadata value type, arrays of
each (strings and nested arrays included), versions 2 and 3, alignments 32
and 64, tensors of the types flashbed reads (F32, F16, BF16) and of one it
does not (Q4_1: the file opens, the tensor is refused by name), a file
of metadata only; and rule-* files that each break one of the reader's
rules by one field (what the fuzzer mutates back and forth across the
rule). Other files in the folder (regress-*) are left alone.
    tests/fuzz/make_gguf_corpus.py [OUTDIR]"""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
FMT = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "B", U64: "Q", I64: "q", F64: "d"}


def string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    """v's encoding as type t; an array is (element type, [elements])."""
    if t == STR:
        return string(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
    return struct.pack("<" + FMT[t], v)


def gguf(kvs, tensors, version=3, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, dims, ggml type, data bytes)],
    laid out in order, each at the alignment."""
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    head += b"".join(string(k) + struct.pack("<I", t) + value(t, v) for k, t, v in kvs)
    data, infos = b"", b""
    for name, dims, ty, blob in tensors:
        data += b"\0" * (-len(data) % alignment)
        infos += string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", ty, len(data))
        data += blob
    out = head + infos
    return out + b"\0" * (-len(out) % alignment) + data


def every_type_kvs():
    return [
        ("general.architecture", STR, "llama"),
        ("t.u8", U8, 200), ("t.i8", I8, -100), ("t.u16", U16, 60000), ("t.i16", I16, -30000),
        ("t.u32", U32, 4000000000), ("t.i32", I32, -2000000000), ("t.f32", F32, 1.5), ("t.bool", BOOL, 1),
        ("t.u64", U64, 2**63 + 5), ("t.i64", I64, -2**62), ("t.f64", F64, 0.25), ("t.f64.big", F64, 1e300),
        ("t.str", STR, "smollm"),
        ("t.arr.u8", ARR, (U8, [1, 2, 3])), ("t.arr.i32", ARR, (I32, [-1, 0, 7])),
        ("t.arr.f32", ARR, (F32, [0.5, -2.0])), ("t.arr.bool", ARR, (BOOL, [0, 1, 1])),
        ("t.arr.str", ARR, (STR, ["a", "", "Ġt"])), ("t.arr.u64", ARR, (U64, [2**40])),
        ("t.arr.f64", ARR, (F64, [1e300])), ("t.arr.i8", ARR, (I8, [-128])), ("t.arr.u16", ARR, (U16, [65535])),
        ("t.arr.i16", ARR, (I16, [-1])), ("t.arr.u32", ARR, (U32, [7])), ("t.arr.i64", ARR, (I64, [-9])),
        ("t.arr.empty", ARR, (STR, [])),
        ("t.arr.nested", ARR, (ARR, [(STR, ["x", "yz"]), (I32, [5]), (ARR, [(U8, [9])])])),
    ]


def f32s(n):
    return b"".join(struct.pack("<f", i * 0.5) for i in range(n))


def seeds():
    tensors = [
        ("token_embd.weight", [4, 3], 0, f32s(12)),
        ("blk.0.attn_norm.weight", [8], 1, b"\x00\x3c" * 8),
        ("blk.0.ffn_up.weight", [4, 2], 30, b"\x80\x3f" * 8),
        ("blk.0.ffn_down.weight", [32, 2], 3, bytes(range(40))),
    ]
    yield "seed-every-type-v3", gguf(every_type_kvs(), tensors)
    yield "seed-v2", gguf([("general.architecture", STR, "llama"), ("llama.block_count", U32, 1)],
                          tensors[:2], version=2)
    yield "seed-alignment-64", gguf([("general.alignment", U32, 64), ("t.u8", U8, 1)], tensors[:3], alignment=64)
    yield "seed-metadata-only", gguf(every_type_kvs()[:5], [])
    yield "seed-4d", gguf([("t.u8", U8, 1)], [("x", [2, 1, 3, 2], 0, f32s(12))])


def rules():
    """(name, bytes): one rule broken each."""
    one = [("general.architecture", STR, "llama")]
    t = [("a", [8], 0, f32s(8))]
    yield "rule-version-1", gguf(one, t, version=1)
    yield "rule-duplicate-key", gguf(one + one, t)
    yield "rule-alignment-48", gguf([("general.alignment", U32, 48)], [])
    yield "rule-nested-5-deep", gguf([("k", ARR, (ARR, [(ARR, [(ARR, [(ARR, [(U8, [1])])])])]))], [])
    yield "rule-bool-2", gguf([("k", BOOL, 2)], [])
    overlap = gguf(one, [("a", [16], 0, f32s(16)), ("b", [8], 0, f32s(8))])
    yield "rule-overlap", overlap.replace(struct.pack("<IQ", 0, 64), struct.pack("<IQ", 0, 32), 1)
    yield "rule-duplicate-tensor", gguf(one, [("a", [8], 0, f32s(8)), ("a", [8], 0, f32s(8))])
    yield "rule-dims-5", gguf(one, [("a", [1, 1, 1, 1, 2], 0, f32s(2))])
    yield "rule-truncated-data", gguf(one, t)[:-1]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "gguf")
    os.makedirs(out, exist_ok=True)
    for name, blob in list(seeds()) + list(rules()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
