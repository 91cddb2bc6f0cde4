#!/usr/bin/env python3
"""Writes Hugging Face style model folders for the HF import tests, with the
standard library only (no torch/transformers/numpy).

  llama CKPT TOK OUT   stories260K (llama2.c) rewritten as an HF Llama folder:
                       config.json, two safetensors shards + index, q/k rows in
                       HF's rotate-half order, tokenizer.json (BPE, byte
                       fallback, merges ranked by the SentencePiece scores)
  opt OUT              a tiny random OPT (f16 safetensors) and, computed here in
                       double precision from the same f16 values, the greedy
                       continuation of a fixed prompt (OUT/expected_ids.txt) and
                       the logits at every position (OUT/reference.json and
                       OUT/logits.f32, in tools/make_hf_fixture.py's layout), with a byte-level BPE
                       tokenizer.json (GPT-2 alphabet)
"""
import json
import math
import os
import random
import struct
import sys


def write_safetensors(path, tensors, dtype="F32"):
    """tensors: list of (name, shape, flat list of floats)."""
    fmt = {"F32": "f", "F16": "e"}[dtype]
    size = {"F32": 4, "F16": 2}[dtype]
    header, blobs, off = {}, [], 0
    for name, shape, values in tensors:
        blob = struct.pack("<%d%s" % (len(values), fmt), *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
        assert len(blob) == size * len(values)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_llama2c(path):
    data = open(path, "rb").read()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack_from("<7i", data, 0)
    off = 28

    def take(n):
        nonlocal off
        v = list(struct.unpack_from("<%df" % n, data, off))
        off += 4 * n
        return v

    hd = dim // heads
    kv = kv_heads * hd
    w = {"emb": take(abs(vocab) * dim), "rms_att": take(layers * dim), "wq": take(layers * dim * dim),
         "wk": take(layers * kv * dim), "wv": take(layers * kv * dim), "wo": take(layers * dim * dim),
         "rms_ffn": take(layers * dim), "w1": take(layers * hidden * dim), "w2": take(layers * dim * hidden),
         "w3": take(layers * hidden * dim), "rms_final": take(dim)}
    cfg = dict(dim=dim, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, vocab=abs(vocab),
               seq_len=seq_len, shared=vocab > 0)
    return cfg, w


def to_rotate_half(rows, heads, hd, cols):
    """Inverse of the importer's reordering: engine pair (2i, 2i+1) -> HF (i, i + hd/2)."""
    out = [0.0] * len(rows)
    for h in range(heads):
        for i in range(hd // 2):
            for half, src in ((0, 2 * i), (1, 2 * i + 1)):
                dst = h * hd + i + half * (hd // 2)
                out[dst * cols:(dst + 1) * cols] = rows[(h * hd + src) * cols:(h * hd + src + 1) * cols]
    return out


def llama(ckpt, tok, out):
    cfg, w = read_llama2c(ckpt)
    d, ff, L, H, KVH, V = cfg["dim"], cfg["hidden"], cfg["layers"], cfg["heads"], cfg["kv_heads"], cfg["vocab"]
    hd = d // H
    kv = KVH * hd
    os.makedirs(out)
    json.dump({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": d,
               "intermediate_size": ff, "num_hidden_layers": L, "num_attention_heads": H,
               "num_key_value_heads": KVH, "vocab_size": V, "max_position_embeddings": cfg["seq_len"],
               "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
               "tie_word_embeddings": cfg["shared"], "bos_token_id": 1, "eos_token_id": 2},
              open(os.path.join(out, "config.json"), "w"), indent=1)
    shards = [[], []]
    shards[0].append(("model.embed_tokens.weight", [V, d], w["emb"]))
    for l in range(L):
        p = "model.layers.%d." % l
        s = shards[0] if l < L // 2 else shards[1]
        s.append((p + "input_layernorm.weight", [d], w["rms_att"][l * d:(l + 1) * d]))
        s.append((p + "self_attn.q_proj.weight", [d, d], to_rotate_half(w["wq"][l * d * d:(l + 1) * d * d], H, hd, d)))
        s.append((p + "self_attn.k_proj.weight", [kv, d], to_rotate_half(w["wk"][l * kv * d:(l + 1) * kv * d], KVH, hd, d)))
        s.append((p + "self_attn.v_proj.weight", [kv, d], w["wv"][l * kv * d:(l + 1) * kv * d]))
        s.append((p + "self_attn.o_proj.weight", [d, d], w["wo"][l * d * d:(l + 1) * d * d]))
        s.append((p + "post_attention_layernorm.weight", [d], w["rms_ffn"][l * d:(l + 1) * d]))
        s.append((p + "mlp.gate_proj.weight", [ff, d], w["w1"][l * ff * d:(l + 1) * ff * d]))
        s.append((p + "mlp.down_proj.weight", [d, ff], w["w2"][l * d * ff:(l + 1) * d * ff]))
        s.append((p + "mlp.up_proj.weight", [ff, d], w["w3"][l * ff * d:(l + 1) * ff * d]))
    shards[1].append(("model.norm.weight", [d], w["rms_final"]))
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map = {}
    for name, shard in zip(names, shards):
        write_safetensors(os.path.join(out, name), shard)
        for t in shard:
            weight_map[t[0]] = name
    json.dump({"metadata": {}, "weight_map": weight_map},
              open(os.path.join(out, "model.safetensors.index.json"), "w"), indent=1)
    # tokenizer.json from tokenizer.bin: merges in descending score order
    data = open(tok, "rb").read()
    off = 4
    pieces, scores = [], []
    for _ in range(V):
        score, n = struct.unpack_from("<fi", data, off)
        off += 8
        pieces.append(data[off:off + n].decode("utf-8", "replace").replace(" ", "\u2581"))
        scores.append(score)
        off += n
    vocab = {p: i for i, p in reversed(list(enumerate(pieces)))}
    merges = []
    for i in sorted(range(V), key=lambda i: -scores[i]):
        p = pieces[i]
        if i < 3 + 256 and (i < 3 or p.startswith("<0x")) or len(p) < 2:
            continue
        for k in range(1, len(p)):
            if p[:k] in vocab and p[k:] in vocab:
                merges.append(p[:k] + " " + p[k:])
                break
    json.dump({"version": "1.0", "added_tokens": [{"id": 0, "content": "<unk>"}, {"id": 1, "content": "<s>"},
                                                  {"id": 2, "content": "</s>"}],
               "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                                   {"type": "Replace", "pattern": {"String": " "},
                                                                    "content": "\u2581"}]},
               "model": {"type": "BPE", "byte_fallback": True, "vocab": vocab, "merges": merges}},
              open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)


def opt(out):
    rnd = random.Random(5)
    d, ff, L, H, V, P = 16, 40, 2, 4, 270, 32
    EOS = 266  # "</s>", also BOS, as OPT uses it
    hd = d // H
    os.makedirs(out)
    json.dump({"model_type": "opt", "architectures": ["OPTForCausalLM"], "hidden_size": d, "ffn_dim": ff,
               "num_hidden_layers": L, "num_attention_heads": H, "vocab_size": V,
               "max_position_embeddings": P, "word_embed_proj_dim": d, "do_layer_norm_before": True,
               "activation_function": "relu", "enable_bias": True, "bos_token_id": EOS, "eos_token_id": EOS},
              open(os.path.join(out, "config.json"), "w"), indent=1)

    def rf16(v):  # the values as f16 stores them
        return struct.unpack("<%de" % len(v), struct.pack("<%de" % len(v), *v))

    def mat(rows, cols, scale):
        return list(rf16([rnd.uniform(-scale, scale) for _ in range(rows * cols)]))

    # small token embeddings, large positions and layer outputs: with a tied
    # output the continuation then varies instead of repeating the last token
    t = {"model.decoder.embed_tokens.weight": ([V, d], mat(V, d, 0.3)),
         "model.decoder.embed_positions.weight": ([P + 2, d], mat(P + 2, d, 1.5)),
         "model.decoder.final_layer_norm.weight": ([d], mat(1, d, 0.2)),
         "model.decoder.final_layer_norm.bias": ([d], mat(1, d, 0.1))}
    t["model.decoder.final_layer_norm.weight"] = ([d], list(rf16([1 + x for x in t["model.decoder.final_layer_norm.weight"][1]])))
    for l in range(L):
        p = "model.decoder.layers.%d." % l
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            t[p + "self_attn.%s.weight" % n] = ([d, d], mat(d, d, 2 / math.sqrt(d)))
            t[p + "self_attn.%s.bias" % n] = ([d], mat(1, d, 0.1))
        for n in ("self_attn_layer_norm", "final_layer_norm"):
            t[p + n + ".weight"] = ([d], list(rf16([1 + x for x in mat(1, d, 0.2)])))
            t[p + n + ".bias"] = ([d], mat(1, d, 0.1))
        t[p + "fc1.weight"] = ([ff, d], mat(ff, d, 1 / math.sqrt(d)))
        t[p + "fc1.bias"] = ([ff], mat(1, ff, 0.2))
        t[p + "fc2.weight"] = ([d, ff], mat(d, ff, 3 / math.sqrt(ff)))
        t[p + "fc2.bias"] = ([d], mat(1, d, 0.1))
    # every tensor stored as F16; the reference uses exactly the stored values
    write_safetensors(os.path.join(out, "model.safetensors"),
                      [(k, s, v) for k, (s, v) in sorted(t.items())], "F16")
    # a byte-level BPE tokenizer.json (GPT-2 alphabet): the 256 bytes, ten
    # merges, then the specials
    def spell(bs):
        cps, k = {}, 0
        for b in range(256):
            if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255:
                cps[b] = b
            else:
                cps[b] = 256 + k
                k += 1
        return "".join(chr(cps[b]) for b in bs)

    vocab = {spell([b]): b for b in range(256)}
    merge_pairs = [("a", "b"), (" ", "c"), ("d", "e"), (" c", "ab"), ("x", "y"), ("1", "2"), (" ", "d"),
                   ("f", "g"), ("h", "i"), (" d", "e")]
    merges = []
    for i, (a, b) in enumerate(merge_pairs):
        merges.append(spell(a.encode()) + " " + spell(b.encode()))
        vocab[spell((a + b).encode())] = 256 + i
    for i, sp in enumerate(["</s>", "<pad>", "<unk>", "<s>"]):
        vocab[sp] = EOS + i
    json.dump({"version": "1.0", "added_tokens": [{"id": EOS, "content": "</s>", "special": True}],
               "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
               "model": {"type": "BPE", "vocab": vocab, "merges": merges}},
              open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)

    def g(n):
        return t[n][1]

    def ln(x, w, b):
        m = sum(x) / d
        v = sum((a - m) ** 2 for a in x) / d
        return [w[i] * (x[i] - m) / math.sqrt(v + 1e-5) + b[i] for i in range(d)]

    def mv(wt, x, b, rows, cols):
        return [sum(wt[r * cols + c] * x[c] for c in range(cols)) + b[r] for r in range(rows)]

    # prompt "ab": BOS, then the merge of a and b
    seq = [EOS, 256]
    cache = [[[], []] for _ in range(L)]
    out_ids, all_logits = [], []
    for pos in range(12):
        tok = seq[pos]
        x = [g("model.decoder.embed_tokens.weight")[tok * d + i] +
             g("model.decoder.embed_positions.weight")[(pos + 2) * d + i] for i in range(d)]
        for l in range(L):
            p = "model.decoder.layers.%d." % l
            h = ln(x, g(p + "self_attn_layer_norm.weight"), g(p + "self_attn_layer_norm.bias"))
            q = mv(g(p + "self_attn.q_proj.weight"), h, g(p + "self_attn.q_proj.bias"), d, d)
            k = mv(g(p + "self_attn.k_proj.weight"), h, g(p + "self_attn.k_proj.bias"), d, d)
            v = mv(g(p + "self_attn.v_proj.weight"), h, g(p + "self_attn.v_proj.bias"), d, d)
            cache[l][0].append(k)
            cache[l][1].append(v)
            att = []
            for hh in range(H):
                sc = [sum(q[hh * hd + i] * kk[hh * hd + i] for i in range(hd)) / math.sqrt(hd) for kk in cache[l][0]]
                m = max(sc)
                e = [math.exp(s - m) for s in sc]
                z = sum(e)
                att += [sum(e[t_] / z * cache[l][1][t_][hh * hd + i] for t_ in range(len(e))) for i in range(hd)]
            o = mv(g(p + "self_attn.out_proj.weight"), att, g(p + "self_attn.out_proj.bias"), d, d)
            x = [x[i] + o[i] for i in range(d)]
            h = ln(x, g(p + "final_layer_norm.weight"), g(p + "final_layer_norm.bias"))
            a = [max(0.0, z) for z in mv(g(p + "fc1.weight"), h, g(p + "fc1.bias"), ff, d)]
            o = mv(g(p + "fc2.weight"), a, g(p + "fc2.bias"), d, ff)
            x = [x[i] + o[i] for i in range(d)]
        x = ln(x, g("model.decoder.final_layer_norm.weight"), g("model.decoder.final_layer_norm.bias"))
        logits = mv(g("model.decoder.embed_tokens.weight"), x, [0.0] * V, V, d)
        all_logits.append(logits)
        if pos + 1 >= len(seq):
            nxt = max(range(V), key=lambda i: logits[i])
            seq.append(nxt)
            out_ids.append(nxt)
    open(os.path.join(out, "expected_ids.txt"), "w").write(" ".join(map(str, seq[:len(seq) - 1])) + "\n")
    # the same layout as tools/make_hf_fixture.py's, for tests/unit/test_hf_fixture.c
    n = len(all_logits)
    with open(os.path.join(out, "logits.f32"), "wb") as f:
        f.write(struct.pack("<%df" % (n * V), *[v for row in all_logits for v in row]))
    json.dump({"format": "flashbed-hf-fixture/1", "arch": "opt", "model_type": "opt", "prompt_ids": seq[:2],
               "greedy_ids": seq[2:n], "logits": {"file": "logits.f32", "dtype": "f32le", "positions": n, "vocab": V},
               "tokenizer_cases": [], "made_by": "tests/integration/make_hf_models.py (double precision)"},
              open(os.path.join(out, "reference.json"), "w"))


if __name__ == "__main__":
    if sys.argv[1] == "llama":
        llama(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "opt":
        opt(sys.argv[2])
    else:
        sys.exit(__doc__)
