#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz (corpus/<harness>/), small files
taken from real ones: what `flashbed model make` and `convert` write for
every architecture's tiny shape, a synthetic trace, the hardware profiles
in configs/hw, a tiny sweep, and hand-written inputs where no program
writes the format (llama2.c checkpoints of a few KB, option and value
text). Run from the repository root after building:

  tests/fuzz/make_corpus.py build/flashbed [SHARED_DATA]

It replaces the seed files it writes (seed-*) and leaves the others
(inputs the fuzzer found and regression cases) alone. With SHARED_DATA
(default ../shared/data) the stories260K header is added; the shared files
themselves are never copied whole.
"""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
ARCHS = ["opt", "llama", "falcon", "persimmon", "phi"]


def channel_trace(path):
    """A small trace with predicted and channel sets (sparse, dense, empty,
    full), written by python/flashbed_trace.py; its bytes."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import flashbed_trace as ft
    meta = ft.TraceMeta(2, 24, 40, "f16", ft.FFN_GLU, True, '{"model":"fuzz-channels"}', has_channels=True)
    with ft.TraceWriter(path, meta) as w:
        for t in range(4):
            w.begin_token(ft.TOKEN_GENERATED if t else 0)
            for l in range(2):
                act = [i for i in range(40) if (i * 3 + t + l) % 5 == 0]
                chan = [j for j in range(24) if t == 3 or (j + t * l) % (2 + t) == 0] if t else []
                w.layer(act, act[::2], chan)
    return open(path, "rb").read()


def put(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


def safetensors(tensors, metadata=None, pad=True):
    """tensors: (name, dtype, shape); data is a counting pattern."""
    size = {"F32": 4, "F16": 2, "BF16": 2}
    header, off = {}, 0
    for name, dtype, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n * size[dtype]]}
        off += n * size[dtype]
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + bytes((i * 37) & 0x3F for i in range(off))


def llama2c(dim, hidden, layers, heads, kv_heads, vocab, seq_len):
    hs = dim // heads
    kv = kv_heads * hs
    v = abs(vocab)
    counts = [v * dim, layers * dim, layers * dim * dim, layers * kv * dim, layers * kv * dim,
              layers * dim * dim, layers * dim, layers * hidden * dim, layers * dim * hidden,
              layers * hidden * dim, dim, seq_len * hs, v * dim if vocab < 0 else 0]
    n = sum(counts)
    return struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab, seq_len) + \
        struct.pack("<%df" % n, *[((i % 13) - 6) / 64.0 for i in range(n)])


def small_sp_tokenizer(path, keep):
    """The first `keep` ids of a SentencePiece-kind tokenizer.json, with the
    merges whose parts and result all survive."""
    t = json.load(open(path))
    vocab = {k: i for k, i in t["model"]["vocab"].items() if i < keep}
    merges = []
    for m in t["model"]["merges"]:
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    t["model"]["vocab"] = vocab
    t["model"]["merges"] = merges
    return json.dumps(t, ensure_ascii=False)


TODAY = [("llama3-tiny", "llama"), ("mistral-tiny", "mistral"), ("qwen2-tiny", "qwen2"), ("qwen3-tiny", "qwen3")]


def main():
    flashbed = os.path.abspath(sys.argv[1])
    shared = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "..", "shared", "data")
    for f in glob.glob(os.path.join(CORPUS, "*", "seed-*")):
        os.remove(f)
    tmp = tempfile.mkdtemp(prefix="flashbed-corpus-")
    try:
        for arch in ARCHS + ["llama-relu"]:
            shape = arch + "-tiny"
            kind = "llama" if arch == "llama-relu" else arch
            hf, m = os.path.join(tmp, arch + "-hf"), os.path.join(tmp, arch + "-m")
            run(flashbed, "model", "make", "--arch", kind, "--shape", shape, "--dtype", "f16", "--out", hf)
            put("hf_config", arch + ".json", open(os.path.join(hf, "config.json"), "rb").read())
            raw = open(os.path.join(hf, "model.safetensors"), "rb").read()
            hlen = struct.unpack_from("<Q", raw)[0]
            # the real header, its tensors cut off: a file too short for them
            put("safetensors", arch + "-header-only", raw[:8 + hlen])
            if arch in ARCHS:
                run(flashbed, "convert", hf, "--out", m, "--dtype", "f16" if arch == "opt" else "f32")
                put("model_json", arch + ".json", open(os.path.join(m, "model.json"), "rb").read())
                if arch in ("opt", "llama"):
                    put("tokenizer_bin", arch + ".bin", open(os.path.join(m, "tokenizer.bin"), "rb").read())
                tr = os.path.join(tmp, arch + ".trace")
                run(flashbed, "trace", "synth", "--shape", shape, "--tokens", "6", "--prompts", "2",
                    "--out", tr)
                put("trace", arch + ".trace", open(tr, "rb").read())
        # issue 33's Llama family: config.json (rope_scaling, sliding_window,
        # head_dim, Qwen's keys) and model.json (the shape's new keys)
        for shape, kind in TODAY:
            hf, m = os.path.join(tmp, shape + "-hf"), os.path.join(tmp, shape + "-m")
            run(flashbed, "model", "make", "--arch", kind, "--shape", shape, "--dtype", "f32", "--out", hf)
            put("hf_config", shape + ".json", open(os.path.join(hf, "config.json"), "rb").read())
            run(flashbed, "convert", hf, "--out", m)
            put("model_json", shape + ".json", open(os.path.join(m, "model.json"), "rb").read())
        # Phi-3's longrope: the transformers fixture's config.json (factor
        # lists, original_max_position_embeddings) and its model.json
        fx = os.path.join(ROOT, "tests", "data", "phi3_longrope_fixture")
        put("hf_config", "phi3-longrope.json", open(os.path.join(fx, "config.json"), "rb").read())
        m, tok = os.path.join(tmp, "phi3-longrope-m"), os.path.join(tmp, "placeholder-320.bin")
        with open(tok, "wb") as f:  # llama2.c's tokenizer layout, 320 placeholder pieces (the fixture ships none)
            f.write(struct.pack("<i", 8) + b"".join(struct.pack("<fi", -i, len(b"w%d" % i)) + b"w%d" % i
                                                    for i in range(320)))
        run(flashbed, "convert", fx, "--tokenizer", tok, "--out", m)
        put("model_json", "phi3-longrope.json", open(os.path.join(m, "model.json"), "rb").read())
        # channel sets (issue 33), with predicted sets: every kind of set in a block
        put("trace", "channels.trace", channel_trace(os.path.join(tmp, "channels.trace")))
        # the committed trace of each version (the synth ones above are the
        # current version): 1 and 2 with bytes per weight, 3 with a type code
        for v in (1, 2, 3):
            put("trace", "v%d.trace" % v,
                open(os.path.join(ROOT, "tests", "data", "trace_v%d.trace" % v), "rb").read())
        put("tokenizer_sp", "llama-300.json", small_sp_tokenizer(os.path.join(tmp, "llama-hf", "tokenizer.json"), 300))
        put("tokenizer_sp", "llama-40.json", small_sp_tokenizer(os.path.join(tmp, "llama-hf", "tokenizer.json"), 40))
        # OPT's byte-level tokenizer.json (GPT-2 alphabet), as the HF import test writes it
        gpt2 = os.path.join(tmp, "gpt2")
        run(sys.executable, os.path.join(ROOT, "tests", "integration", "make_hf_models.py"), "opt", gpt2)
        put("tokenizer_bytelevel", "gpt2.json", open(os.path.join(gpt2, "tokenizer.json"), "rb").read())
        put("hf_config", "opt-fixture.json", open(os.path.join(gpt2, "config.json"), "rb").read())
        put("safetensors", "mixed", safetensors([("a", "F32", [2, 3]), ("b", "F16", [5]), ("c", "BF16", [1, 4]),
                                                 ("empty", "F32", [0, 4])], {"format": "pt"}))
        put("safetensors", "unpadded", safetensors([("w", "F16", [3, 3])], None, pad=False))
        put("safetensors", "scalar", safetensors([("s", "F32", [])], {}))
        put("tokenizer_bin", "tiny.bin", struct.pack("<i", 5) + b"".join(
            struct.pack("<fi", -i, len(p)) + p for i, p in enumerate([b"<unk>", b"<s>", b"</s>", b" a", b"b", b"ab"])))
        put("llama2c", "shared-cls", llama2c(8, 16, 1, 2, 2, 32, 4))
        put("llama2c", "separate-cls", llama2c(8, 12, 2, 2, 1, -24, 4))
        stories = os.path.join(shared, "models", "stories260K", "stories260K.bin")
        if os.path.exists(stories):
            put("llama2c", "stories260K-header", open(stories, "rb").read(28))
        for hw in sorted(glob.glob(os.path.join(ROOT, "configs", "hw", "*.json"))):
            put("hw_profile", os.path.basename(hw), open(hw, "rb").read())
        sw = os.path.join(tmp, "sweep")
        run(flashbed, "sweep", "--file", os.path.join(tmp, "scratch.bin"), "--size", "1m", "--chunks", "4k,16k,64k",
            "--threads", "1,2", "--engine", "null", "--buffered", "--runtime", "0.01", "--ramp", "0", "--seed", "1",
            "--out", sw)
        put("sweep_results", "null-engine.json", open(os.path.join(sw, "sweep.json"), "rb").read())
        options = {
            "defaults": "",
            "all": "--flag\n--name\nx\n--dtype\nbf16\n--count\n4096\n--threads\nauto\n--size\n1.5M\n--ratio\n-1\n"
                   "--persist\n0.999\n--time\n500ms\n--chunks\n4k,32k,1g\n--list\n1,2,64\n--prompt\nhi\n"
                   "--temperature\n0\n--seed\n18446744073709551615\nfile1\nfile2",
            "equals": "--size=4G\n-n\nshort\n--threads=16\n--help",
            "bad": "--count\n0\n--persist\n1\n--chunks\n4k,,8k\n--unknown\nfile1\nfile2\nfile3",
        }
        for name, text in options.items():
            put("options", name, text)
        # the first byte picks fuzz_parse.c's parser: 0 size, 1 size list, 2 count list, 3 count,
        # 4 number, 5 share or size, 6 duration, 7 policy, 8 layout (alone and as replay's list),
        # 9 predict's policy list
        values = [(0, "4k"), (0, "1.5M"), (0, "16t"), (1, "4k,32k,1m"), (2, "1,2,4,8"), (3, "18446744073709551615"),
                  (4, "-1e308"), (5, "50%"), (5, "2.5G"), (6, "500ms"), (6, "0.25us"), (7, "window:5"),
                  (7, "lfu"), (8, "coalesce:2"), (9, "naive,predictor,window:3,lru"),
                  (8, "split,bundled,friends,coalesce:0"), (8, "bundled,,coalesce:x")]
        for i, (which, text) in enumerate(values):
            put("parse", "%02d" % i, bytes([which]) + text.encode())
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
