#!/usr/bin/env python3
"""How `tokenizers` (and `transformers`) encode and decode test texts with the
tokenizer files of real checkpoints, for tests/core/test_tokenizer_real.cpp.

    tools/reference/fetch_tokenizers.sh          # .tokenizers/<name>/
    python3 tools/reference/tokenizer_goldens.py [--repo .] [--names mistral,llama3,qwen3,gemma3]

Reads .tokenizers/<name>/{tokenizer.json,tokenizer_config.json} (fetched, never
committed: they carry their models' licences) and writes, with no tokenizer
content in them:

    tests/data/tokenizer-real/texts.json         the test texts (shared)
    tests/data/tokenizer-real/<name>.cases.json  per tokenizer

The texts: make_goldens.py's CASES, generated hard cases (white-space runs,
newlines, CJK, emoji with ZWJ, combining marks, code, leading spaces, spellings
of every family's special tokens), the prompts of samples/prompts/*.jsonl, and
lines of samples/corpus/brown-heldout.txt and brown-calib.txt (cut at a word
boundary near 240 characters to keep the files small).

<name>.cases.json:
    "ids": one string per text: `tokenizers` encode(text, add_special_tokens=False),
        the ids as unsigned LEB128 varints, base64 (kept compact);
    "decoded": decode(ids) where it differs from the text, as {"<index>": text};
    "decoded_skip_special": decode(ids, skip_special_tokens=True) where it differs
        from "decoded" (same form);
    "special_prefix"/"special_suffix": what encode(text) (add_special_tokens=True)
        puts around the ids, the same for every text (checked; exceptions in
        "special_exceptions" as {"<index>": ids});
    "transformers_prefix"/"transformers_suffix"/"transformers_exceptions": the
        same for AutoTokenizer(text)["input_ids"], whose bos/eos follow
        tokenizer_config.json (add_bos_token for the Llama and Gemma classes);
    "transformers_ids_disagree": {"<index>": ids} where AutoTokenizer without
        special tokens differs from `tokenizers` (expected: none).
"""

import argparse
import ast
import base64
import hashlib
import json
import os
import sys

NAMES = ["mistral", "llama3", "qwen3", "gemma3"]
MAX_LINE = 240


def cases_of_make_goldens(repo):
    """NASTY and CASES from make_goldens.py, without importing it (it needs torch)."""
    path = os.path.join(repo, "tools/reference/make_goldens.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    keep = [n for n in tree.body if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in ("NASTY", "CASES") for t in n.targets)]
    ns = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)
    return list(ns["CASES"])


def hard_cases():
    out = []
    for n in (1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 64):
        out += [(f"spaces_{n}", " " * n), (f"spaces_{n}_word", " " * n + "word"), (f"word_spaces_{n}", "a" + " " * n + "b")]
    for n in (1, 2, 3, 5, 10, 30, 31, 32, 40):
        out += [(f"newlines_{n}", "x" + "\n" * n + "y"), (f"tabs_{n}", "\t" * n + "z")]
    out += [
        ("crlf_runs", "a\r\n\r\nb\r\r\nc\n\r"),
        ("space_newline_mix", "a \n \n  \n\t\n b"),
        ("leading_space_word", " Hello"),
        ("leading_two_spaces", "  Hello world"),
        ("leading_newline", "\nHello"),
        ("trailing_newline", "Hello\n"),
        ("only_tab", "\t"),
        ("nbsp_runs", "a\u00a0\u00a0b\u2009c\u202fd"),
        ("cjk_long", "人工智能是计算机科学的一个分支，它企图了解智能的实质，并生产出一种新的能以人类智能相似的方式做出反应的智能机器。"),
        ("cjk_ext_b", "𠀀𠀁𪚥 and 𝕏𝕐 math"),
        ("japanese_mixed", "ＡＢＣ全角ｶﾀｶﾅ半角カタカナ①②③"),
        ("korean_jamo", "\u1100\u1161\u11a8 vs 각"),
        ("emoji_zwj_long", "👩\u200d❤\ufe0f\u200d💋\u200d👨 👨\u200d👨\u200d👧\u200d👧 🧑🏾\u200d🚀 🏴\u200d☠\ufe0f"),
        ("emoji_tags", "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f flag"),
        ("emoji_keycaps", "1\ufe0f\u20e3 #\ufe0f\u20e3 *\u20e3"),
        ("combining_stack", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319a\u0310l\u0357go"),
        ("combining_hangul_nfd", "\u1112\u1161\u11ab\u1100\u1173\u11af"),
        ("ligatures_compat", "ﬁle ﬂow ½ ² ℃ Ⅻ ㍿ ｆｕｌｌ"),
        ("rtl_marks", "abc\u200fdef\u200e\u202eghi\u202c"),
        ("zero_width", "a\u200bb\u200cc\u200dd\ufeffe"),
        ("control_chars", "a\x00b\x01c\x7fd\x1be"),
        ("private_use", "\ue000\uf8ff\U000f0000"),
        ("replacement_char", "bad \ufffd char"),
        ("json_code", '{"key": [1, 2.5e-3, null, true], "s": "a\\"b"}'),
        ("rust_code", "fn main() {\n    let v: Vec<u8> = (0..=255).collect();\n    println!(\"{:?}\", &v[..4]);\n}\n"),
        ("shell_code", "for f in *.txt; do\n  grep -n 'x' \"$f\" | wc -l  # count\ndone"),
        ("html", "<div class=\"a\"><p>Hi&nbsp;there</p><br/></div>"),
        ("url_email", "https://example.com/a/b?c=1&d=%20 mail@example.org"),
        ("numbers_mixed", "0 00 000 0000 12345678901234567890 3.14e10 -7 +8 1_000 0x1F"),
        ("byte_tokens_text", "<0x41><0x0A> <0xZZ> <0x>"),
        ("metaspace_literal", "\u2581hello\u2581\u2581world \u2581"),
        ("gpt2_literal", "\u0120hello \u010a"),
    ]
    specials = ["<s>", "</s>", "<unk>", "<pad>", "<bos>", "<eos>", "<mask>", "<start_of_turn>", "<end_of_turn>",
                "<unused0>", "<unused99>", "<start_of_image>", "<image_soft_token>", "[multimodal]",
                "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                "<|reserved_special_token_5|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>",
                "</think>", "<tool_call>", "<|vision_start|>", "<|fim_prefix|>"]
    for i, s in enumerate(specials):
        out += [(f"special_{i}", s), (f"special_{i}_in_text", f"a{s}b {s} c{s}{s}\n{s}"),
                (f"special_{i}_broken", s[:-1] + " " + s[-1:] + s.upper())]
    out += [
        ("gemma_chat", "<bos><start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n"),
        ("llama2_chat", "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] again [/INST]"),
        ("specials_adjacent_spaces", "  <s>  </s>  <|im_end|>  <end_of_turn>  "),
    ]
    return out


def cut(line):
    if len(line) <= MAX_LINE:
        return line
    sp = line.rfind(" ", 0, MAX_LINE)
    return line[: sp if sp > MAX_LINE // 2 else MAX_LINE]


def corpus_lines(path, limit, step):
    out = []
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("# doc ")]
    for line in lines[::step][:limit]:
        out.append(cut(line))
    return out


def texts(repo):
    items = [(name, text) for name, text in cases_of_make_goldens(repo)] + hard_cases()
    pdir = os.path.join(repo, "samples/prompts")
    for fn in sorted(os.listdir(pdir)):
        if fn.endswith(".jsonl"):
            for line in open(os.path.join(pdir, fn), encoding="utf-8"):
                if line.strip():
                    p = json.loads(line)
                    items.append((f"prompt:{p['id']}", p["prompt"]))
    for i, t in enumerate(corpus_lines(os.path.join(repo, "samples/corpus/brown-heldout.txt"), 1300, 1)):
        items.append((f"brown-heldout:{i}", t))
    for i, t in enumerate(corpus_lines(os.path.join(repo, "samples/corpus/brown-calib.txt"), 500, 31)):
        items.append((f"brown-calib:{i}", t))
    return items


def varints_b64(ids):
    out = bytearray()
    for v in ids:
        assert v >= 0
        while True:
            b = v & 0x7F
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                break
    return base64.b64encode(bytes(out)).decode("ascii")


def affixes(with_special, plain):
    """The (prefix, suffix) that turn plain into with_special for most texts, and the exceptions."""
    from collections import Counter
    votes = Counter()
    for w, p in zip(with_special, plain):
        for k in range(len(w) - len(p) + 1):
            if w[k:k + len(p)] == p:
                votes[(tuple(w[:k]), tuple(w[k + len(p):]))] += 1
                break
    (prefix, suffix), _ = votes.most_common(1)[0]
    exceptions = {str(i): w for i, (w, p) in enumerate(zip(with_special, plain))
                  if w != list(prefix) + p + list(suffix)}
    return list(prefix), list(suffix), exceptions


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
    ap.add_argument("--names", default=",".join(NAMES))
    ap.add_argument("--check", action="store_true", help="only build the texts and report their count")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    out_dir = os.path.join(repo, "tests/data/tokenizer-real")
    os.makedirs(out_dir, exist_ok=True)

    items = texts(repo)
    names = [n for n, _ in items]
    assert len(set(names)) == len(names), "duplicate case names"
    all_texts = [t for _, t in items]
    texts_blob = json.dumps({"names": names, "texts": all_texts}, ensure_ascii=False, separators=(",", ":"))
    texts_sha = hashlib.sha256(texts_blob.encode("utf-8")).hexdigest()
    print(f"{len(all_texts)} texts, {len(texts_blob)} bytes")
    if args.check:
        return 0
    import tokenizers
    import transformers
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer
    with open(os.path.join(out_dir, "texts.json"), "w", encoding="utf-8") as f:
        f.write(texts_blob)

    for name in args.names.split(","):
        folder = os.path.join(repo, ".tokenizers", name)
        tj = os.path.join(folder, "tokenizer.json")
        if not os.path.isfile(tj):
            print(f"{name}: {tj} missing (run tools/reference/fetch_tokenizers.sh); skipped", file=sys.stderr)
            continue
        tok = Tokenizer.from_file(tj)
        auto = AutoTokenizer.from_pretrained(folder)
        plain = [tok.encode(t, add_special_tokens=False).ids for t in all_texts]
        special = [tok.encode(t).ids for t in all_texts]
        tf_plain = [auto(t, add_special_tokens=False)["input_ids"] for t in all_texts]
        tf_special = [auto(t)["input_ids"] for t in all_texts]
        decoded, decoded_skip = {}, {}
        for i, (t, ids) in enumerate(zip(all_texts, plain)):
            d = tok.decode(ids, skip_special_tokens=False)
            ds = tok.decode(ids, skip_special_tokens=True)
            if d != t:
                decoded[str(i)] = d
            if ds != d:
                decoded_skip[str(i)] = ds
        sp_prefix, sp_suffix, sp_exc = affixes(special, plain)
        tf_prefix, tf_suffix, tf_exc = affixes(tf_special, plain)
        disagree = {str(i): a for i, (a, b) in enumerate(zip(tf_plain, plain)) if a != b}
        source = open(os.path.join(folder, "SOURCE"), encoding="utf-8").read().strip() \
            if os.path.isfile(os.path.join(folder, "SOURCE")) else ""
        doc = {
            "tokenizer": name,
            "source": source,
            "tokenizer_json_sha256": sha256_file(tj),
            "tokenizers_version": tokenizers.__version__,
            "transformers_version": transformers.__version__,
            "transformers_class": type(auto).__name__,
            "texts_sha256": texts_sha,
            "vocab_size": tok.get_vocab_size(with_added_tokens=True),
            "special_prefix": sp_prefix, "special_suffix": sp_suffix, "special_exceptions": sp_exc,
            "transformers_prefix": tf_prefix, "transformers_suffix": tf_suffix,
            "transformers_exceptions": tf_exc,
            "transformers_ids_disagree": disagree,
            "decoded": decoded,
            "decoded_skip_special": decoded_skip,
            "ids": [varints_b64(ids) for ids in plain],
        }
        path = os.path.join(out_dir, f"{name}.cases.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        print(f"{name}: {len(plain)} cases, {sum(map(len, plain))} ids, {os.path.getsize(path)} bytes; "
              f"prefix {sp_prefix} suffix {sp_suffix} ({len(sp_exc)} exceptions); transformers "
              f"{type(auto).__name__} prefix {tf_prefix} suffix {tf_suffix} ({len(tf_exc)} exceptions, "
              f"{len(disagree)} id disagreements); {len(decoded)} texts do not decode to themselves")
    total = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
    print(f"tests/data/tokenizer-real: {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
