#!/usr/bin/env python3
"""Builds the tiny GGUF fixtures of issue 46: for each architecture a tiny
random model written as GGUF (f32, with the gguf package's GGUFWriter, its
metadata as llama.cpp's converter writes it for that architecture, and a
tokenizer of a few hundred tokens learnt here: tools/gguf_vocab.py), then
quantized by llama.cpp itself (llama_model_quantize, pure: every matrix,
embeddings included, in the one type) to each type its shape allows, and
for each file llama.cpp's logits, greedy continuation and tokenization.

Runs in the pinned reference environment (tools/make-reference-env.sh makes
it; this script refuses any other), on the CPU, one thread, no network:

    .venv-ref/bin/python tools/make_gguf_fixture.py [ARCH ...] [--out tests/data/gguf]

ARCH: llama, gemma3, qwen2, qwen3, phi3 (all when none is given).

Two shapes per architecture (SHAPES): "s32", rows of 32 to 128, for F32,
F16, BF16 and the 32-weight block types (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0); "k256",
every row 256 wide (d_model = d_ff = heads x head_dim = 256, one layer), for
the K-quants (Q2_K Q3_K Q4_K Q5_K Q6_K), whose blocks are 256 weights. The
weights are random and written straight into GGUF's layout (no Hugging Face
model, so no q/k row permutation: the GGUF is the ground truth). Writes
OUT/<arch>/<TYPE>/:
  model.gguf       the model in TYPE (F32: the writer's file itself)
  logits.f32       llama.cpp's logits at every position of prompt_ids (the
                   first 64 ids of PROMPT_TEXT's tokenization) +
                   greedy_ids, little-endian f32 [position][vocab], from one
                   batch (logits_all)
  reference.json   versions, the commands, shapes, types per tensor, the
                   prompt and its ids, the greedy ids with each step's top-2
                   margin, the tokenization of TOKENIZE_TEXT, and how far the
                   stepwise (KV cache) logits are from the batch ones
"""
import ctypes
import hashlib
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference-env"))
sys.path.insert(0, HERE)
import pins  # noqa: E402

pins.require("tools/make_gguf_fixture.py")

import numpy as np  # noqa: E402
import gguf  # noqa: E402
import llama_cpp  # noqa: E402

import gguf_vocab  # noqa: E402

VOCAB = 384
PROMPT = 64         # the first 64 ids of PROMPT_TEXT's tokenization (BOS included)
GENERATE = 16       # greedy tokens after them
N_CTX = 256
THREADS = 1
SEED = 46

# The prompt whose every position's logits are recorded (>= 64 tokens with
# either tokenizer) and a text for the tokenization check (spaces, digits,
# punctuation, a newline, characters outside the vocabulary: byte fallback)
PROMPT_TEXT = (
    "Once upon a time, there was a little girl named Lily. She loved to play "
    "outside in the park. One day, she saw a big red ball under a tree and "
    "asked her mother if she could play with it."
)
TOKENIZE_TEXT = (
    "Hello world! The year 2024 had 365 days; Lily's café\n"
    "  two  spaces, a tab\there, and ünïcödé ★ (plus 12345)."
)

S32_TYPES = ["F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"]
K256_TYPES = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
# llama_ftype for each type (pure quantization: every matrix in the type);
# the K-quants' _S mixtures are their pure types
FTYPE = {
    "F16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16, "BF16": llama_cpp.LLAMA_FTYPE_MOSTLY_BF16,
    "Q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0, "Q4_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1,
    "Q5_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_0, "Q5_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_1,
    "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0, "Q2_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q2_K,
    "Q3_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q3_K_S, "Q4_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_S,
    "Q5_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_S, "Q6_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q6_K,
}

# d: d_model, ff: d_ff, layers, heads, kv: KV heads, hd: head dim, tied:
# no output.weight (the head is the embedding)
SHAPES = {
    "llama": {
        "s32": dict(d=64, ff=128, layers=2, heads=4, kv=2, hd=16, tied=False),
        "k256": dict(d=256, ff=256, layers=1, heads=2, kv=1, hd=128, tied=True),
    },
    # gemma3: six layers so that layer 5 is global (llama.cpp's pattern of 6),
    # a sliding window of 16 that the prompt crosses, head_dim x heads != d_model
    # qwen2 and phi3: heads x head_dim = d_model (llama.cpp asks it); qwen3:
    # head_dim x heads != d_model, as Qwen3 allows
    "qwen2": {
        "s32": dict(d=64, ff=128, layers=2, heads=4, kv=2, hd=16, tied=False),
        "k256": dict(d=256, ff=256, layers=1, heads=2, kv=1, hd=128, tied=True),
    },
    "qwen3": {
        "s32": dict(d=64, ff=128, layers=2, heads=4, kv=2, hd=32, tied=False),
        "k256": dict(d=256, ff=256, layers=1, heads=2, kv=1, hd=128, tied=True),
    },
    "phi3": {
        "s32": dict(d=64, ff=128, layers=2, heads=4, kv=4, hd=16, tied=False),
        "k256": dict(d=256, ff=256, layers=1, heads=2, kv=2, hd=128, tied=True),
    },
    "gemma3": {
        "s32": dict(d=32, ff=64, layers=6, heads=2, kv=1, hd=32, tied=True, window=16),
        "k256": dict(d=256, ff=256, layers=1, heads=2, kv=1, hd=128, tied=True, window=16),
    },
}


def common_meta(w, s, arch):
    """The keys llama.cpp's converter writes for every text model."""
    w.add_context_length(N_CTX)
    w.add_embedding_length(s["d"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ff"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv"])


def bpe_tokenizer(w, pre, specials, bos, eos, add_bos):
    tokens, types, merges = gguf_vocab.bpe_vocab(specials, VOCAB - 256 - len(specials))
    assert len(tokens) == VOCAB
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    w.add_add_bos_token(add_bos)


def spm_tokenizer(w, add_space_prefix, specials, bos, eos, unk, pad):
    tokens, scores, types = gguf_vocab.spm_vocab(VOCAB, specials)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    w.add_unk_token_id(unk)
    w.add_pad_token_id(pad)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(add_space_prefix)


def llama_meta(w, s):
    common_meta(w, s, "llama")
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_uint32("llama.vocab_size", VOCAB)
    w.add_rope_dimension_count(s["hd"])
    bpe_tokenizer(w, "llama-bpe", ["<|begin_of_text|>", "<|end_of_text|>"], 0, 1, True)


def qwen2_meta(w, s):
    common_meta(w, s, "qwen2")
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    bpe_tokenizer(w, "qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], 0, 0, False)


def qwen3_meta(w, s):
    common_meta(w, s, "qwen3")
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_key_length(s["hd"])
    w.add_value_length(s["hd"])
    bpe_tokenizer(w, "qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], 0, 2, False)


def phi3_meta(w, s):
    common_meta(w, s, "phi3")
    w.add_rope_scaling_orig_ctx_len(N_CTX)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(s["hd"])
    w.add_rope_freq_base(10000.0)
    # Phi-3's specials: <unk> 0, <s> 1 (BOS), </s> 2, <|endoftext|> (EOS, pad);
    # llama.cpp sets their strip attributes by the name "phi3" in general.name
    spm_tokenizer(w, True, gguf_vocab.PHI3_SPECIALS, 1, 3, 0, 3)


def gemma3_meta(w, s):
    common_meta(w, s, "gemma3")
    w.add_layer_norm_rms_eps(1e-6)
    w.add_key_length(s["hd"])
    w.add_value_length(s["hd"])
    w.add_rope_freq_base(1000000.0)
    w.add_sliding_window(s["window"])
    spm_tokenizer(w, False, gguf_vocab.GEMMA_SPECIALS, 2, 1, 3, 0)


META = {"llama": llama_meta, "qwen2": qwen2_meta, "qwen3": qwen3_meta, "phi3": phi3_meta,
        "gemma3": gemma3_meta}


def tensors(arch, s, rng):
    """[(name, array)] in numpy's [rows, cols] order (GGUF's ne reversed:
    ne0 = cols, the row length that blocks run along). qwen2: q/k/v biases;
    qwen3 and gemma3: per-head q/k RMSNorm; gemma3: norms after attention and
    after the FFN; phi3: q/k/v fused into attn_qkv, gate and up into ffn_up
    (gate rows first, as llama.cpp's phi3 graph splits it)."""
    d, ff, hd = s["d"], s["ff"], s["hd"]
    q, kv = s["heads"] * hd, s["kv"] * hd

    def mat(rows, cols, gain=1.0):
        return (rng.standard_normal((rows, cols)) * gain / np.sqrt(cols)).astype(np.float32)

    def vec(n, mean, spread):
        return (mean + spread * rng.standard_normal(n)).astype(np.float32)

    # the embedding is the head where tied: logits of a few units, not tens.
    # gemma3 multiplies its input rows by sqrt(d) (RMS 1 here) and normalizes
    # each block's output before adding it: post norms of 3 keep the blocks
    # from being drowned by the token's own row (a greedy run that repeats it)
    gemma = arch == "gemma3"
    out = [("token_embd.weight", mat(VOCAB, d, 1.0 if gemma else 3.0)),
           ("output_norm.weight", vec(d, 1.0, 0.2))]
    if not s["tied"]:
        out.append(("output.weight", mat(VOCAB, d, 3.0)))
    for i in range(s["layers"]):
        b = "blk.%d." % i
        out.append((b + "attn_norm.weight", vec(d, 1.0, 0.2)))
        if arch == "phi3":
            out.append((b + "attn_qkv.weight", mat(q + 2 * kv, d)))
        else:
            out += [(b + "attn_q.weight", mat(q, d)), (b + "attn_k.weight", mat(kv, d)),
                    (b + "attn_v.weight", mat(kv, d))]
        if arch == "qwen2":
            out += [(b + "attn_q.bias", vec(q, 0.0, 0.5)), (b + "attn_k.bias", vec(kv, 0.0, 0.5)),
                    (b + "attn_v.bias", vec(kv, 0.0, 0.5))]
        if arch in ("qwen3", "gemma3"):
            out += [(b + "attn_q_norm.weight", vec(hd, 1.0, 0.2)), (b + "attn_k_norm.weight", vec(hd, 1.0, 0.2))]
        out.append((b + "attn_output.weight", mat(d, q)))
        if arch == "gemma3":
            out.append((b + "post_attention_norm.weight", vec(d, 3.0, 0.5)))
        out.append((b + "ffn_norm.weight", vec(d, 1.0, 0.2)))
        if arch == "phi3":
            out.append((b + "ffn_up.weight", mat(2 * ff, d)))
        else:
            out += [(b + "ffn_gate.weight", mat(ff, d)), (b + "ffn_up.weight", mat(ff, d))]
        out.append((b + "ffn_down.weight", mat(d, ff)))
        if arch == "gemma3":
            out.append((b + "post_ffw_norm.weight", vec(d, 3.0, 0.5)))
    return out


def write_f32(path, arch, shape_name, seed):
    s = SHAPES[arch][shape_name]
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(path, arch)
    w.add_name("flashbed tiny %s %s" % (arch, shape_name))
    META[arch](w, s)
    w.add_file_type(0)  # ALL_F32
    for name, t in tensors(arch, s, rng):
        w.add_tensor(name, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def quantize(src, dst, ftype):
    p = llama_cpp.llama_model_quantize_default_params()
    p.nthread = THREADS
    p.ftype = ftype
    p.pure = True
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(p))
    if rc != 0:
        sys.exit("make_gguf_fixture: llama_model_quantize %s -> %s (ftype %d) failed: %d" % (src, dst, ftype, rc))


def top2(row):
    i = np.argsort(row)[::-1][:2]
    return int(i[0]), float(row[i[0]] - row[i[1]])


CONTEXT = dict(n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX, n_threads=THREADS,
               n_threads_batch=THREADS, logits_all=True, flash_attn=False, seed=SEED)


def llama_run(path):
    """llama.cpp's tokenizations, greedy continuation (stepwise, through its KV
    cache) and logits over prompt + greedy (one batch)."""
    llm = llama_cpp.Llama(model_path=path, verbose=False, **CONTEXT)
    prompt = llm.tokenize(PROMPT_TEXT.encode(), add_bos=True, special=False)
    assert len(prompt) >= PROMPT, len(prompt)
    r = {"prompt_ids": prompt[:PROMPT],
         "tokenize_ids": llm.tokenize(TOKENIZE_TEXT.encode(), add_bos=True, special=False),
         "tokenize_ids_no_special": llm.tokenize(TOKENIZE_TEXT.encode(), add_bos=False, special=False)}
    llm.reset()
    llm.eval(r["prompt_ids"])
    greedy, margins = [], []
    for _ in range(GENERATE):
        tok, margin = top2(llm.scores[llm.n_tokens - 1])
        greedy.append(tok)
        margins.append(margin)
        llm.eval([tok])
    n = llm.n_tokens
    stepwise = llm.scores[:n].copy()
    llm.reset()
    llm.eval(r["prompt_ids"] + greedy)
    batch = llm.scores[:n].copy()
    r.update(greedy_ids=greedy, greedy_margins=margins, logits=batch,
             stepwise_vs_batch_max_abs=float(np.max(np.abs(stepwise - batch))),
             stepwise_vs_batch_per_position=[float(x) for x in np.max(np.abs(stepwise - batch), axis=1)],
             type_k="f16 (llama.cpp's default)", type_v="f16 (llama.cpp's default)")
    llm.close()
    return r


def file_info(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return {"bytes": os.path.getsize(path), "sha256": h.hexdigest()}


def tensor_table(path):
    r = gguf.GGUFReader(path)
    return [{"name": t.name, "type": t.tensor_type.name, "ne": [int(x) for x in t.shape]} for t in r.tensors]


def llama_cpp_info():
    return {"llama_cpp_python": llama_cpp.__version__,
            "llama_cpp_commit": "ggml-org/llama.cpp@0c1e57098 (llama-cpp-python 0.3.36's CHANGELOG: "
                                "the commit its sdist vendors; the sdist carries no git metadata)",
            "system_info": llama_cpp.llama_print_system_info().decode().strip(),
            "build": "pip from the sdist, CMAKE_ARGS of tools/make-reference-env.sh (CPU backend only, "
                     "GGML_NATIVE default: -march=native), Debian gcc 12.2 and cmake 3.25"}


def fixture(arch, typ, shape_name, f32_path, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    model = os.path.join(out_dir, "model.gguf")
    tmp = model + ".tmp.%d" % os.getpid()
    if typ == "F32":
        shutil.copyfile(f32_path, tmp)
        how = "the f32 file as GGUFWriter wrote it"
    else:
        quantize(f32_path, tmp, FTYPE[typ])
        how = ("llama_cpp.llama_model_quantize(f32 file, model.gguf, params) with "
               "llama_model_quantize_default_params(), nthread=%d, ftype=%d (LLAMA_FTYPE for %s), pure=True"
               % (THREADS, FTYPE[typ], typ))
    os.replace(tmp, model)
    r = llama_run(model)
    logits = r.pop("logits").astype("<f4")
    logits.tofile(os.path.join(out_dir, "logits.f32"))
    ref = {
        "format": "flashbed-gguf-fixture/1",
        "arch": arch,
        "type": typ,
        "shape_name": shape_name,
        "shape": SHAPES[arch][shape_name],
        "n_vocab": VOCAB,
        "how": {
            "f32": "tools/make_gguf_fixture.py write_f32: random weights (numpy default_rng seed %d), "
                   "written straight into GGUF layout with gguf.GGUFWriter; metadata as llama.cpp's "
                   "converter writes it for %s; tokenizer learnt by tools/gguf_vocab.py" % (SEEDS[arch][shape_name], arch),
            "model.gguf": how,
            "logits.f32": "llama_cpp.Llama(model.gguf, %s); reset(); eval(prompt_ids + greedy_ids) in one "
                          "batch; scores[:n] as little-endian f32 [position][vocab]" % json.dumps(CONTEXT),
            "prompt_ids": "the first %d ids of Llama.tokenize(PROMPT_TEXT utf-8, add_bos=True, special=False)" % PROMPT,
            "greedy_ids": "eval(prompt_ids), then %d times: argmax of the last row, eval([it]) (stepwise, "
                          "through the KV cache); greedy_margins: the winner's lead over the runner-up" % GENERATE,
            "tokenize_ids": "Llama.tokenize(TOKENIZE_TEXT utf-8, add_bos=True (the vocabulary's add_bos/"
                            "add_eos decide), special=False); tokenize_ids_no_special: add_bos=False",
            "command": ".venv-ref/bin/python tools/make_gguf_fixture.py %s (after tools/make-reference-env.sh)" % arch,
            "threads": THREADS,
        },
        "files": {"model.gguf": file_info(model), "logits.f32": file_info(os.path.join(out_dir, "logits.f32"))},
        "tensors": tensor_table(model),
        "prompt_text": PROMPT_TEXT,
        "tokenize_text": TOKENIZE_TEXT,
        "min_greedy_margin": min(r["greedy_margins"]),
        "n_positions": len(r["prompt_ids"]) + GENERATE,
        "llama_cpp": llama_cpp_info(),
        "versions": pins.versions(),
    }
    ref.update(r)
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return ref


SEEDS = {"llama": {"s32": 4601, "k256": 4602}, "gemma3": {"s32": 4603, "k256": 4604},
         "qwen2": {"s32": 4605, "k256": 4606}, "qwen3": {"s32": 4607, "k256": 4608},
         "phi3": {"s32": 4609, "k256": 4610}}


def main(argv):
    out = os.path.join(HERE, "..", "tests", "data", "gguf")
    if "--out" in argv:
        out = argv[argv.index("--out") + 1]
        argv = [a for a in argv if a not in ("--out", out)]
    archs = argv or list(SHAPES)
    for arch in archs:
        if arch not in SHAPES:
            sys.exit("make_gguf_fixture: unknown architecture %s (known: %s)" % (arch, ", ".join(SHAPES)))
    with tempfile.TemporaryDirectory() as tmp:
        for arch in archs:
            for shape_name, types in (("s32", S32_TYPES), ("k256", K256_TYPES)):
                f32 = os.path.join(tmp, "%s-%s-f32.gguf" % (arch, shape_name))
                write_f32(f32, arch, shape_name, SEEDS[arch][shape_name])
                for typ in types:
                    ref = fixture(arch, typ, shape_name, f32, os.path.join(out, arch, typ))
                    print("%s %s: %d positions, greedy min margin %.4f, stepwise-batch %.2e, %d bytes"
                          % (arch, typ, ref["n_positions"], ref["min_greedy_margin"],
                             ref["stepwise_vs_batch_max_abs"], ref["files"]["model.gguf"]["bytes"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
