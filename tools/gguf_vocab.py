"""Tiny tokenizers for the GGUF fixtures (tools/make_gguf_fixture.py): a
byte-level BPE (GGUF tokenizer.ggml.model "gpt2") and a SentencePiece-style
vocabulary with scores ("llama"), each learnt here from TRAIN_TEXT by
counting pairs, so that the embedding stays a few hundred rows.

Both are deterministic (ties broken by the pair's text), so a rerun writes
the same vocabulary. llama.cpp tokenizes with them by its own rules (its
pre-tokenizer regex named in tokenizer.ggml.pre, its merge ranks; its SPM
bigram merges by score with <0xXX> byte fallback); the fixture records its
ids, which are what flashbed must reproduce.
"""
import collections
import re

# A few paragraphs of plain English with digits, punctuation and a newline or
# two: what the merges are learnt from (nothing else reads it).
TRAIN_TEXT = (
    "Once upon a time, there was a little girl named Lily. She loved to play "
    "outside in the park with her friends. One day, she saw a big red ball "
    "under a tree. \"Can I play with it?\" she asked her mother. Her mother "
    "smiled and said yes.\nThe sun was warm and the sky was blue. Lily and her "
    "friend Tom ran to the tree, and they played with the ball all day. At "
    "3 o'clock they sat down to eat 12 apples and 7 cookies. Then it started "
    "to rain, so they went home. Lily was happy; it had been the best day of "
    "the year!\nThe next morning the town woke up early. People opened their "
    "shops, children walked to school, and the old man at the corner sold "
    "bread and milk for 2 dollars. Everyone said hello to everyone else.\n"
)

# GPT-2's reversible map from bytes to printable characters: byte-level BPE
# tokens are strings of these
def bytes_to_unicode():
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars = keep[:]
    n = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(keep, chars)}


def learn_merges(words, n_merges):
    """Greedy BPE over {word (tuple of symbols): count}: the n_merges most
    frequent adjacent pairs, in order; ties by the pair's text."""
    words = dict(words)
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        joined = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            joined[tuple(out)] = joined.get(tuple(out), 0) + c
        words = joined
    return merges


def bpe_vocab(specials, n_merges):
    """(tokens, token_types, merges): specials (CONTROL) first, the 256 byte
    characters, then one token per merge (NORMAL)."""
    b2u = bytes_to_unicode()
    pieces = re.findall(r" ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]+|\s+", TRAIN_TEXT)
    words = collections.Counter(tuple(b2u[b] for b in p.encode()) for p in pieces)
    merges = learn_merges(words, n_merges)
    tokens = list(specials) + [b2u[b] for b in range(256)] + [a + b for a, b in merges]
    types = [3] * len(specials) + [1] * (len(tokens) - len(specials))
    return tokens, types, ["%s %s" % m for m in merges]


GEMMA_SPECIALS = [("<pad>", 3), ("<eos>", 3), ("<bos>", 3), ("<unk>", 2)]
PHI3_SPECIALS = [("<unk>", 2), ("<s>", 3), ("</s>", 3), ("<|endoftext|>", 3)]


def spm_vocab(size, specials=GEMMA_SPECIALS):
    """(tokens, scores, token_types), size tokens: the specials [(text,
    type)] (Gemma's by default: pad 0, eos 1, bos 2, unk 3), the 256 byte tokens
    <0x00>..<0xFF> (BYTE), the characters of TRAIN_TEXT with spaces as
    U+2581, then one piece per merge until size, scored so that earlier
    merges win (SentencePiece's scores)."""
    text = TRAIN_TEXT.replace(" ", "\u2581")
    chars = sorted(set(text) - {"\n"})
    words = collections.Counter(tuple(w) for w in re.findall(r"\u2581?[^\u2581\n]+|\n", text))
    merges = learn_merges(words, size)
    tokens = [t for t, _ in specials] + ["<0x%02X>" % b for b in range(256)]
    types = [k for _, k in specials] + [6] * 256
    scores = [0.0] * len(tokens)
    for c in chars:
        tokens.append(c)
        types.append(1)
        scores.append(-1000.0)
    for rank, (a, b) in enumerate(merges):
        if len(tokens) == size:
            break
        if a + b in tokens:
            continue
        tokens.append(a + b)
        types.append(1)
        scores.append(-float(rank + 1))
    if len(tokens) != size:
        raise ValueError("spm_vocab: TRAIN_TEXT gives %d tokens, not %d" % (len(tokens), size))
    return tokens, scores, types
