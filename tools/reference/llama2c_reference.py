#!/usr/bin/env python3
"""An independent reading of llama2.c checkpoints with numpy only: the forward
pass as llama2.c's run.c computes it (interleaved rotary pairs, the original
weight layout) and run.c's tokenizer (score-driven pair merging with byte
fallback). Used to check `sdw-cli import llama2c` and the workbench's
SentencePiece-style tokenizer without sharing code with them.

    python3 tools/reference/llama2c_reference.py CHECKPOINT.bin TOKENIZER.bin "Once upon a time" [N]

prints the prompt's ids and N greedy tokens (default 60) and their text."""

import struct
import sys

import numpy as np


def read_checkpoint(path):
    raw = open(path, "rb").read()
    magic = struct.unpack_from("<I", raw, 0)[0]
    if magic == 0x616B3432:
        version = struct.unpack_from("<i", raw, 4)[0]
        if version != 1:
            raise ValueError(f"{path}: llama2.c version {version} is not read here")
        dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack_from("<7i", raw, 8)
        shared = raw[36] != 0
        offset = 256
    else:
        version = 0
        dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack_from("<7i", raw, 0)
        shared = vocab > 0
        vocab = abs(vocab)
        offset = 28
    hs = dim // heads
    kvd = kv_heads * hs
    a = np.frombuffer(raw, dtype="<f4", offset=offset)
    pos = [0]

    def take(*shape):
        n = int(np.prod(shape))
        out = a[pos[0]:pos[0] + n].reshape(shape).astype(np.float64)
        pos[0] += n
        return out

    w = {}
    if version == 0:
        w["emb"] = take(vocab, dim)
        w["rms_att"] = take(layers, dim)
        w["wq"] = take(layers, dim, dim)
        w["wk"] = take(layers, kvd, dim)
        w["wv"] = take(layers, kvd, dim)
        w["wo"] = take(layers, dim, dim)
        w["rms_ffn"] = take(layers, dim)
        w["w1"] = take(layers, hidden, dim)
        w["w2"] = take(layers, dim, hidden)
        w["w3"] = take(layers, hidden, dim)
        w["rms_final"] = take(dim)
        take(seq, hs // 2)
        take(seq, hs // 2)
    else:
        w["rms_att"] = take(layers, dim)
        w["rms_ffn"] = take(layers, dim)
        w["rms_final"] = take(dim)
        w["emb"] = take(vocab, dim)
        for k, s in (("wq", (dim, dim)), ("wk", (kvd, dim)), ("wv", (kvd, dim)), ("wo", (dim, dim)),
                     ("w1", (hidden, dim)), ("w2", (dim, hidden)), ("w3", (hidden, dim))):
            w[k] = take(layers, *s)
    w["cls"] = w["emb"] if shared else take(vocab, dim)
    if pos[0] != a.size:
        raise ValueError(f"{path}: {a.size - pos[0]} floats left after the weights")
    cfg = dict(dim=dim, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, vocab=vocab, seq=seq,
               shared=shared, version=version)
    return cfg, w


def rope(x, positions, hs):
    """run.c's rotation: pairs (2i, 2i+1) of each head, frequency 10000^(-2i/hs)."""
    t, n = x.shape
    x = x.reshape(t, n // hs, hs // 2, 2)
    freq = 1.0 / 10000.0 ** (np.arange(0, hs, 2) / hs)
    ang = positions[:, None] * freq[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x0, x1 = x[..., 0], x[..., 1]
    out = np.stack([x0 * c - x1 * s, x0 * s + x1 * c], axis=-1)
    return out.reshape(t, n)


def logits(cfg, w, ids):
    """Logits (float64) at every position of `ids`, causal attention."""
    dim, heads, kvh = cfg["dim"], cfg["heads"], cfg["kv_heads"]
    hs = dim // heads
    t = len(ids)
    pos = np.arange(t, dtype=np.float64)
    x = w["emb"][np.asarray(ids)]

    def rms(v, g):
        return v / np.sqrt((v * v).mean(-1, keepdims=True) + 1e-5) * g

    mask = np.triu(np.full((t, t), -np.inf), 1)
    for layer in range(cfg["layers"]):
        h = rms(x, w["rms_att"][layer])
        q = rope(h @ w["wq"][layer].T, pos, hs).reshape(t, heads, hs)
        k = rope(h @ w["wk"][layer].T, pos, hs).reshape(t, kvh, hs)
        v = (h @ w["wv"][layer].T).reshape(t, kvh, hs)
        rep = heads // kvh
        k = np.repeat(k, rep, axis=1)
        v = np.repeat(v, rep, axis=1)
        att = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hs) + mask
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", att, v).reshape(t, dim)
        x = x + o @ w["wo"][layer].T
        h = rms(x, w["rms_ffn"][layer])
        g = h @ w["w1"][layer].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ w["w3"][layer].T)) @ w["w2"][layer].T
    return rms(x, w["rms_final"]) @ w["cls"].T


def greedy(cfg, w, prompt_ids, n, stop=(1, 2)):
    ids = list(prompt_ids)
    out = []
    for _ in range(n):
        nxt = int(np.argmax(logits(cfg, w, ids)[-1]))
        if nxt in stop:
            break
        out.append(nxt)
        ids.append(nxt)
    return out


def read_tokenizer(path, vocab):
    raw = open(path, "rb").read()
    pos = 4
    pieces, scores = [], []
    for _ in range(vocab):
        score, n = struct.unpack_from("<fi", raw, pos)
        pos += 8
        pieces.append(raw[pos:pos + n])
        scores.append(score)
        pos += n
    return pieces, scores


def encode(pieces, scores, text, bos=True):
    """run.c's encode(): dummy-prefix space, one token per UTF-8 character (its
    bytes + 3 when the character is not a piece), then merge the adjacent pair
    whose joined text is the piece of highest score, leftmost first, until no
    pair joins into a piece."""
    lookup = {p: i for i, p in reversed(list(enumerate(pieces)))}
    tokens = [1] if bos else []
    data = text.encode("utf-8")
    if data:
        tokens.append(lookup[b" "])
    i = 0
    while i < len(data):
        j = i + 1
        while j < len(data) and (data[j] & 0xC0) == 0x80 and j - i < 4:
            j += 1
        ch = data[i:j]
        if ch in lookup:
            tokens.append(lookup[ch])
        else:
            tokens.extend(b + 3 for b in ch)
        i = j
    while True:
        best, best_id, best_at = -1e10, -1, -1
        for k in range(len(tokens) - 1):
            joined = pieces[tokens[k]] + pieces[tokens[k + 1]]
            m = lookup.get(joined, -1)
            if m != -1 and scores[m] > best:
                best, best_id, best_at = scores[m], m, k
        if best_at < 0:
            return tokens
        tokens[best_at:best_at + 2] = [best_id]


def decode(pieces, ids):
    out = b""
    prev = 1
    for t in ids:
        p = pieces[t]
        if prev == 1 and p.startswith(b" "):
            p = p[1:]
        if len(p) == 6 and p.startswith(b"<0x") and p.endswith(b">"):
            p = bytes([int(p[3:5], 16)])
        out += p
        prev = t
    return out.decode("utf-8", "replace")


def main():
    ck, tk, prompt = sys.argv[1], sys.argv[2], sys.argv[3]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 60
    cfg, w = read_checkpoint(ck)
    pieces, scores = read_tokenizer(tk, cfg["vocab"])
    ids = encode(pieces, scores, prompt)
    out = greedy(cfg, w, ids, n)
    print(ids)
    print(out)
    print(decode(pieces, ids[1:] + out))


if __name__ == "__main__":
    main()
