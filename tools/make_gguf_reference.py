#!/usr/bin/env python3
"""llama.cpp's reference figures for the two real GGUF models of issue 46
(SmolLM2-135M-Instruct Q4_1 and Gemma 3 270M Q4_K_M: tools/fetch-models.sh
fetches both; SmolLM2 is also ../shared/data/models/smollm2-135m/), computed
through llama-cpp-python in the pinned reference environment:

    .venv-ref/bin/python tools/make_gguf_reference.py MODEL.gguf NAME \\
        [--corpus ../shared/data/corpus/wiki.test.raw] [--chunks N] [--threads T] \\
        [--out tests/data/gguf/real]

writes OUT/NAME.json with
  perplexity   on the corpus by llama.cpp's perplexity tool's rule
               (tools/perplexity/perplexity.cpp, perplexity()): the whole text
               tokenized once with the vocabulary's add_bos (common_tokenize(ctx,
               text, add_special=true)); window i is tokens[i*n_ctx, (i+1)*n_ctx)
               with its first token replaced by BOS when add_bos; the KV cache
               cleared before each window, the window decoded as one batch with
               logits requested from position first = n_ctx/2 on; the tokens at
               first+1 .. n_ctx-1 scored (n_ctx-1-first per window) by
               -log softmax (double sum of exp over the float logits); PPL =
               exp(total nll / count). The first CHUNKS windows only (the tool's
               --chunks); the running PPL and each window's nll are recorded,
               so a shorter run can be compared window by window.
  greedy       each of PROMPTS tokenized (add_bos per the vocabulary), then 32
               greedy tokens, one at a time through llama.cpp's KV cache, with
               the winner's lead over the runner-up at every step (top-2
               margin), so that near-ties can be named
  tokenize     llama.cpp's ids for TOKENIZE_TEXT (add_bos per the vocabulary,
               and without it), special tokens not parsed
and how each was made (versions, commands, threads, context parameters).
The corpus: MANIFEST.md's wiki.test.raw has CRLF line endings: '\\r' is
removed before tokenizing (as MANIFEST.md says to), nothing else.
"""
import ctypes
import hashlib
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference-env"))
import pins  # noqa: E402

pins.require("tools/make_gguf_reference.py")

import numpy as np  # noqa: E402
import llama_cpp  # noqa: E402

N_CTX = 512         # the perplexity tool's customary -c 512
GREEDY = 32
PROMPTS = [
    "The capital of France is",
    "Once upon a time, there was a little girl named",
    "def fibonacci(n):\n",
    "Water boils at a temperature of",
]
TOKENIZE_TEXT = (
    "Hello world! The year 2024 had 365 days; Lily's café serves crème brûlée.\n"
    "  Two  spaces,\ta tab, CamelCaseWords, snake_case_names, 3.14159 and 1,000,000.\n"
    "Unicode: ünïcödé, 日本語, emoji 🙂, and <b>tags</b> </s> <|endoftext|>."
)


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def log_softmax_at(logits, tok):
    """-log softmax(logits)[tok] as perplexity.cpp's log_softmax computes it:
    max subtracted, a double sum of exp of float differences."""
    m = logits.max()
    d = (logits - m).astype(np.float32)
    s = float(np.exp(d, dtype=np.float32).astype(np.float64).sum())
    return -(float(d[tok]) - math.log(s))


def perplexity(llm, text, chunks, log):
    ctx = llm.ctx
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    add_bos = bool(llama_cpp.llama_vocab_get_add_bos(vocab))
    bos = llama_cpp.llama_vocab_bos(vocab)
    n_vocab = llm.n_vocab()
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    n_chunk_max = len(tokens) // N_CTX
    n_chunk = min(chunks, n_chunk_max)
    first = N_CTX // 2
    batch = llama_cpp.llama_batch_init(N_CTX, 0, 1)
    nll_total, count, windows = 0.0, 0, []
    t0 = time.time()
    try:
        for i in range(n_chunk):
            window = list(tokens[i * N_CTX:(i + 1) * N_CTX])
            if add_bos:
                window[0] = bos
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
            batch.n_tokens = N_CTX
            for k in range(N_CTX):
                batch.token[k] = window[k]
                batch.pos[k] = k
                batch.n_seq_id[k] = 1
                batch.seq_id[k][0] = 0
                batch.logits[k] = 1 if k >= first else 0
            rc = llama_cpp.llama_decode(ctx, batch)
            if rc != 0:
                sys.exit("make_gguf_reference: llama_decode failed (%d) on window %d" % (rc, i))
            out = np.ctypeslib.as_array(llama_cpp.llama_get_logits(ctx), shape=((N_CTX - first) * n_vocab,))
            out = out.reshape(N_CTX - first, n_vocab)
            nll = 0.0
            for j in range(N_CTX - 1 - first):
                nll += log_softmax_at(out[j], window[first + j + 1])
            nll_total += nll
            count += N_CTX - 1 - first
            windows.append({"window": i, "nll": nll, "running_ppl": math.exp(nll_total / count)})
            log("window %d/%d: running PPL %.4f (%.0f s)" % (i + 1, n_chunk, math.exp(nll_total / count), time.time() - t0))
    finally:
        llama_cpp.llama_batch_free(batch)
    ids = np.asarray(tokens, dtype="<i4").tobytes()
    return {
        "ppl": math.exp(nll_total / count),
        "n_ctx": N_CTX, "first": first, "n_batch": N_CTX, "add_bos": add_bos, "bos": bos,
        "windows": n_chunk, "windows_max": n_chunk_max, "scored_tokens": count,
        "corpus_tokens": len(tokens),
        "corpus_ids_sha256": sha256_bytes(ids) + " (the ids as little-endian int32, BOS included when add_bos)",
        "corpus_first_ids": list(tokens[:64]),
        "per_window": windows,
        "seconds": round(time.time() - t0, 1),
    }


def top2(row):
    i = np.argsort(row)[::-1][:2]
    return int(i[0]), float(row[i[0]] - row[i[1]])


def greedy(llm, prompt):
    ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
    llm.reset()
    llm.eval(ids)
    out, margins = [], []
    for _ in range(GREEDY):
        tok, margin = top2(llm.scores[llm.n_tokens - 1])
        out.append(tok)
        margins.append(margin)
        llm.eval([tok])
    text = llm.detokenize(out).decode("utf-8", errors="replace")
    near = [k for k, m in enumerate(margins) if m < 0.1]
    return {"prompt": prompt, "prompt_ids": ids, "greedy_ids": out, "greedy_text": text,
            "margins": margins, "min_margin": min(margins), "steps_with_margin_below_0.1": near}


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("name")
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "shared", "data", "corpus", "wiki.test.raw"))
    ap.add_argument("--chunks", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "data", "gguf", "real"))
    ap.add_argument("--skip-perplexity", action="store_true")
    a = ap.parse_args(argv)
    log = lambda s: print("make_gguf_reference %s: %s" % (a.name, s), file=sys.stderr, flush=True)  # noqa: E731

    ppl_params = dict(n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX, n_threads=a.threads,
                      n_threads_batch=a.threads, logits_all=False, flash_attn=False)
    gen_params = dict(n_ctx=128, n_batch=128, n_ubatch=128, n_threads=a.threads,
                      n_threads_batch=a.threads, logits_all=True, flash_attn=False)
    ref = {
        "format": "flashbed-gguf-real-reference/1",
        "name": a.name,
        "model": {"file": os.path.basename(a.model), "bytes": os.path.getsize(a.model),
                  "sha256": file_sha256(a.model)},
        "command": ".venv-ref/bin/python tools/make_gguf_reference.py %s %s --chunks %d --threads %d"
                   % (os.path.basename(a.model), a.name, a.chunks, a.threads),
        "llama_cpp": {
            "llama_cpp_python": llama_cpp.__version__,
            "llama_cpp_commit": "ggml-org/llama.cpp@0c1e57098 (llama-cpp-python 0.3.36's CHANGELOG; "
                                "the sdist carries no git metadata)",
            "system_info": llama_cpp.llama_print_system_info().decode().strip(),
            "kv_cache": "f16 K and V (llama.cpp's default), flash attention off",
        },
        "versions": pins.versions(),
    }
    gen = llama_cpp.Llama(model_path=a.model, verbose=False, **gen_params)
    ref["tokenize"] = {
        "text": TOKENIZE_TEXT,
        "ids": gen.tokenize(TOKENIZE_TEXT.encode("utf-8"), add_bos=True, special=False),
        "ids_no_bos": gen.tokenize(TOKENIZE_TEXT.encode("utf-8"), add_bos=False, special=False),
        "how": "Llama.tokenize(text utf-8, add_bos=True: BOS only where the vocabulary's add_bos says so; "
               "ids_no_bos: add_bos=False; special=False: special tokens' text not parsed)",
    }
    ref["greedy"] = {"context": gen_params, "runs": [greedy(gen, p) for p in PROMPTS],
                     "how": "eval(prompt_ids), then %d times: argmax of the last logits row, eval([it])" % GREEDY}
    for r in ref["greedy"]["runs"]:
        log("greedy %r -> %r (min margin %.3f)" % (r["prompt"], r["greedy_text"], r["min_margin"]))
    gen.close()
    if a.skip_perplexity:
        ref["perplexity"] = "not produced (--skip-perplexity)"
    else:
        raw = open(a.corpus, "rb").read()
        text = raw.replace(b"\r", b"").decode("utf-8")
        llm = llama_cpp.Llama(model_path=a.model, verbose=False, **ppl_params)
        p = perplexity(llm, text, a.chunks, log)
        llm.close()
        p["context"] = ppl_params
        p["corpus"] = {"file": os.path.basename(a.corpus), "bytes": len(raw), "sha256": sha256_bytes(raw),
                       "preprocessing": "every '\\r' removed, then decoded as UTF-8; nothing else"}
        ref["perplexity"] = p
        log("PPL %.4f over %d windows of %d (%d scored tokens) in %.0f s"
            % (p["ppl"], p["windows"], N_CTX, p["scored_tokens"], p["seconds"]))
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, a.name + ".json")
    tmp = path + ".tmp.%d" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)
    log("wrote " + path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
