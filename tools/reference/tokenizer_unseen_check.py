#!/usr/bin/env python3
"""Our tokenizer against the reference `tokenizers` library (and transformers'
AutoTokenizer) on texts generated fresh on every run, never seen by the tests:

    python3 tools/reference/tokenizer_unseen_check.py SDW_CLI TOKENIZER_DIR [--n 2000] [--seed S] [--out FILE]

Generates N random texts (seed: given, or from the clock; printed) mixing ASCII
words, white-space runs, newlines, digits, punctuation, code, CJK, emoji with
ZWJ and skin tones, combining marks, rare code points (byte-fallback pieces),
leading spaces and spellings of special tokens; encodes them with
`SDW_CLI tokenize --model TOKENIZER_DIR --texts FILE` (special tokens added by
the post-processor) and with `tokenizers` (encode(text).ids: add_special_tokens
True) and compares the ids, and our decoded text with `tokenizers`' decode of
the same ids. transformers' AutoTokenizer(text)["input_ids"] (bos/eos from
tokenizer_config.json) is reported beside it. Exit 0 when ids and decoded texts
all agree with `tokenizers`; the first disagreements are printed and, with
--out, all of them are written as JSON.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

WORDS = ("the of and to in is was he for it with as his on be at by I had not are but from or have an they which "
         "one you were all we her she there would their will when who him been has more if no out do so can what up "
         "said about other into than its time only could new them man some these then two first may any like now my "
         "Jury jury Atlanta Fulton County election Grand \u00e9t\u00e9 na\u00efve caf\u00e9 Stra\u00dfe").split()
CODE = ["def f(x):\n    return x**2", "for (int i = 0; i < n; ++i) {\n\ty[i] += a * x[i];\n}",
        "if __name__ == '__main__':", "<div class=\"a\">&nbsp;</div>", "x = {'k': [1, 2, 3]}  # comment",
        "SELECT * FROM t WHERE id=42;", "std::vector<int> v{1,2,3};", "$ ls -la /tmp | grep .sdw"]
SPECIAL = ["<s>", "</s>", "<unk>", "<pad>", "[INST]", "[/INST]", "<<SYS>>", "<|endoftext|>", "<|im_start|>",
           "<|im_end|>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<0x41>", "<0x0A>", "\u2581",
           "<|begin_of_text|>", "<|eot_id|>", "<think>"]
CJK = "\u65e5\u672c\u8a9e\u306e\u30c6\u30b9\u30c8\u3067\u3059\u4e2d\u6587\u6d4b\u8bd5\ud55c\uad6d\uc5b4\u3002\uff0c\uff01"
EMOJI = ["\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",
         "\U0001F3F3\uFE0F\u200D\U0001F308", "\u2764\uFE0F", "\U0001F1E9\U0001F1EA", "\U0001F9D1\U0001F3FF\u200D\U0001F4BB"]
COMBINING = ["e\u0301", "a\u0308", "n\u0303", "\u0915\u094d\u0937", "\u1100\u1161\u11a8", "o\u0302\u0323"]
RARE_BLOCKS = [(0x0100, 0x024F), (0x0370, 0x03FF), (0x0400, 0x04FF), (0x0590, 0x05FF), (0x0600, 0x06FF),
               (0x0900, 0x097F), (0x0E00, 0x0E7F), (0x1D400, 0x1D7FF), (0x2200, 0x22FF), (0x2500, 0x257F),
               (0x10000, 0x1007F), (0x1F300, 0x1F5FF), (0xE000, 0xE0FF), (0x20000, 0x2A6DF)]
SPACES = [" ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u2003"]


def piece(r):
    k = r.random()
    if k < 0.35:
        w = r.choice(WORDS)
        return w.upper() if r.random() < 0.1 else w.capitalize() if r.random() < 0.2 else w
    if k < 0.50:
        return r.choice(SPACES)
    if k < 0.56:
        return "".join(r.choice("0123456789") for _ in range(r.randint(1, 9)))
    if k < 0.62:
        return "".join(r.choice(".,;:!?'\"()[]{}-_/\\@#%^&*+=<>|~`") for _ in range(r.randint(1, 4)))
    if k < 0.67:
        return r.choice(CODE)
    if k < 0.74:
        return "".join(r.choice(CJK) for _ in range(r.randint(1, 6)))
    if k < 0.79:
        return r.choice(EMOJI)
    if k < 0.83:
        return r.choice(COMBINING)
    if k < 0.90:
        lo, hi = r.choice(RARE_BLOCKS)
        return "".join(chr(r.randint(lo, hi)) for _ in range(r.randint(1, 3)))
    return r.choice(SPECIAL)


def make_texts(n, seed):
    r = random.Random(seed)
    texts = []
    for _ in range(n):
        t = "".join(piece(r) + (" " if r.random() < 0.6 else "") for _ in range(r.randint(1, 24)))
        if r.random() < 0.15:
            t = " " * r.randint(1, 3) + t
        texts.append(t)
    return texts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("tokenizer_dir")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    texts = make_texts(a.n, seed)
    import tokenizers
    ref = tokenizers.Tokenizer.from_file(os.path.join(a.tokenizer_dir, "tokenizer.json"))
    try:
        import transformers
        auto = transformers.AutoTokenizer.from_pretrained(a.tokenizer_dir)
    except Exception as e:  # noqa: BLE001
        auto, transformers = None, None
        print("transformers AutoTokenizer unavailable:", e)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False)
        path = f.name
    t0 = time.time()
    ours = json.loads(subprocess.run([a.cli, "tokenize", "--model", a.tokenizer_dir, "--texts", path],
                                     check=True, capture_output=True).stdout)
    ours_s = time.time() - t0
    os.unlink(path)
    bad_ids, bad_dec, auto_diff = [], [], []
    for i, t in enumerate(texts):
        rid = ref.encode(t).ids
        if ours[i]["ids"] != rid:
            bad_ids.append({"index": i, "text": t, "ours": ours[i]["ids"], "tokenizers": rid})
            continue
        rdec = ref.decode(rid, skip_special_tokens=False)
        if ours[i]["decoded"] != rdec:
            bad_dec.append({"index": i, "text": t, "ours": ours[i]["decoded"], "tokenizers": rdec})
        if auto is not None and auto(t)["input_ids"] != rid:
            auto_diff.append({"index": i, "text": t, "transformers": auto(t)["input_ids"], "tokenizers": rid})
    n_tok = sum(len(o["ids"]) for o in ours)
    summary = {"tokenizer": os.path.abspath(a.tokenizer_dir), "texts": len(texts), "seed": seed, "tokens": n_tok,
               "characters": sum(len(t) for t in texts), "ids_differ": len(bad_ids), "decoded_differs": len(bad_dec),
               "transformers_ids_differ_from_tokenizers": len(auto_diff), "sdw_cli_seconds": round(ours_s, 2),
               "tokenizers_version": tokenizers.__version__,
               "transformers_version": transformers.__version__ if transformers else None}
    print(json.dumps(summary))
    for b in (bad_ids + bad_dec)[:5]:
        print(json.dumps(b, ensure_ascii=False)[:600])
    if a.out:
        json.dump({"summary": summary, "ids_differ": bad_ids, "decoded_differs": bad_dec,
                   "transformers_differs": auto_diff[:50]}, open(a.out, "w"), ensure_ascii=False, indent=1)
    sys.exit(0 if not bad_ids and not bad_dec else 1)


if __name__ == "__main__":
    main()
