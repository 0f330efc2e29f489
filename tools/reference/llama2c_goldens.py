#!/usr/bin/env python3
"""Reference files for the imported llama2.c model (samples/model/stories260K,
made by `sdw-cli import llama2c`), from `transformers` and `tokenizers`.

    python3 tools/reference/llama2c_goldens.py [--repo .]

Writes:
    tests/data/reference/stories260K/golden.json
        transformers LlamaForCausalLM (float32, CPU) on the imported folder:
        greedy continuations of story prompts (stopping at <s> or </s>, as
        llama2.c's run.c does), the last prompt logits, and the largest
        difference between transformers' logits and tools/reference/
        llama2c_reference.py's numpy forward pass on the original .bin file
        (run.c's layout: it checks the import, the rotary permutation included);
    tests/data/tokenizer/stories260K/
        the imported tokenizer.json as shipped and how `tokenizers` encodes and
        decodes the test texts of make_goldens.py, with run.c's encoding of each
        text for comparison;
    tests/data/tokenizer/stories260K-metaspace/
        the same vocabulary written the way newer Llama/Mistral files are
        (Metaspace pre-tokenizer with prepend_scheme "first" and a Metaspace
        decoder) and its cases.
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

import tokenizers
import transformers
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama2c_reference as ref  # noqa: E402
from make_goldens import CASES, dump_json, f32list, log  # noqa: E402

PROMPTS = [
    ("once", "Once upon a time"),
    ("lily", "Once upon a time, there was a little girl named Lily."),
    ("park", "One day, Tom went to the park and found a red ball."),
    ("mom", "Mom said to Ben, \""),
    ("friends", "Sue and Max were best friends. One day, they"),
    ("sad", "The little dog was very sad because"),
]
MAX_NEW = 60
STOPS = (1, 2)


def metaspace_variant(tok_json):
    j = json.loads(json.dumps(tok_json))
    j["normalizer"] = None
    j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False}
    j["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
        {"type": "ByteFallback"}, {"type": "Fuse"}]}
    # Metaspace's decoder drops the leading space itself.
    return j


def tokenizer_cases(name, tok_json, tok_config, out_root, runc):
    d = os.path.join(out_root, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok_json, f, ensure_ascii=False, indent=1)
        f.write("\n")
    dump_json(os.path.join(d, "tokenizer_config.json"), tok_config, compact=False)
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    cases, agree = [], 0
    for cname, text in CASES:
        enc = tok.encode(text, add_special_tokens=False)
        ids = enc.ids
        dec = tok.decode(ids, skip_special_tokens=False)
        c = {"name": cname, "text": text, "ids": ids, "tokens": enc.tokens, "decoded": dec,
             "ids_add_special_tokens": tok.encode(text, add_special_tokens=True).ids,
             "decoded_skip_special": tok.decode(ids, skip_special_tokens=True), "roundtrip": dec == text}
        if runc is not None:
            r = runc(text)
            c["runc_ids"] = r
            c["runc_agrees"] = r == c["ids_add_special_tokens"]
            agree += c["runc_agrees"]
        cases.append(c)
    tf_ok = None
    try:
        at = transformers.AutoTokenizer.from_pretrained(d)
        tf_ok = all(at.encode(c["text"], add_special_tokens=False) == c["ids"] for c in cases)
    except Exception as e:  # noqa: BLE001 - report, do not fail
        log(f"   transformers AutoTokenizer check failed to run: {e!r}")
    out = {"tokenizer": name, "tokenizers_version": tokenizers.__version__,
           "transformers_version": transformers.__version__,
           "vocab_size": tok.get_vocab_size(with_added_tokens=True),
           "made_from": "samples/model/stories260K/tokenizer.json (sdw-cli import llama2c of tok512.bin)",
           "transformers_autotokenizer_agrees": tf_ok, "cases": cases}
    if runc is not None:
        out["runc_agrees"] = f"{agree}/{len(cases)}"
    dump_json(os.path.join(d, "cases.json"), out, compact=False)
    bad = [c["name"] for c in cases if not c["roundtrip"]]
    log(f"   {name}: {len(cases)} cases, round-trip differs on {bad}, transformers agrees: {tf_ok}"
        + (f", run.c agrees on {agree}/{len(cases)} "
           f"(differs: {[c['name'] for c in cases if not c['runc_agrees']]})" if runc else ""))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=".")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    model_dir = os.path.join(repo, "samples", "model", "stories260K")
    third = os.path.join(repo, "samples", "third_party", "llama2c")
    cfg, w = ref.read_checkpoint(os.path.join(third, "stories260K.bin"))
    pieces, scores = ref.read_tokenizer(os.path.join(third, "tok512.bin"), cfg["vocab"])
    runc = lambda text: ref.encode(pieces, scores, text)  # noqa: E731
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, tokenizers {tokenizers.__version__}")

    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok_json = json.load(f)
    with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        tok_config = json.load(f)
    tok_root = os.path.join(repo, "tests", "data", "tokenizer")
    t1 = tokenizer_cases("stories260K", tok_json, tok_config, tok_root, runc)
    t2 = tokenizer_cases("stories260K-metaspace", metaspace_variant(tok_json), tok_config, tok_root, None)
    same = [a["ids"] == b["ids"] for a, b in zip(t1["cases"], t2["cases"])]
    log(f"   Metaspace variant encodes {sum(same)}/{len(same)} texts as the Prepend/Replace file")

    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    model = transformers.LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    cases, worst = [], 0.0
    for cid, text in PROMPTS:
        ids = tok.encode(text, add_special_tokens=True).ids
        with torch.no_grad():
            lg = model(input_ids=torch.tensor([ids])).logits[0].double().numpy()
        npl = ref.logits(cfg, w, ids)
        diff = float(np.abs(npl - lg).max())
        worst = max(worst, diff)
        seq, new = list(ids), []
        with torch.no_grad():
            for _ in range(MAX_NEW):
                nxt = int(model(input_ids=torch.tensor([seq])).logits[0, -1].argmax())
                if nxt in STOPS:
                    break
                new.append(nxt)
                seq.append(nxt)
        np_greedy = ref.greedy(cfg, w, ids, MAX_NEW, STOPS)
        cases.append({"id": cid, "prompt": text, "prompt_ids": ids, "runc_prompt_ids": runc(text),
                      "greedy_ids": new, "greedy_text": tok.decode(new),
                      "numpy_reference_greedy_equal": np_greedy == new,
                      "numpy_reference_max_abs_logit_diff": diff,
                      "last_prompt_logits_fp32_cpu": f32list(torch.tensor(lg[-1]).float())})
        log(f"   {cid}: |transformers - numpy run.c| = {diff:.3g}, greedy equal: {np_greedy == new}, "
            f"prompt ids equal run.c: {runc(text) == ids}: {tok.decode(new)[:70]!r}")
    golden = {"model": "samples/model/stories260K",
              "source": "samples/third_party/llama2c/stories260K.bin + tok512.bin via sdw-cli import llama2c",
              "note": "greedy, float32 on CPU; prompt ids include <s>; generation stops at <s> or </s> "
                      "(as run.c) or after max_new_tokens",
              "max_new_tokens": MAX_NEW, "stop_ids": list(STOPS),
              "transformers_version": transformers.__version__, "torch_version": torch.__version__,
              "numpy_reference_max_abs_logit_diff": worst, "cases": cases}
    d = os.path.join(repo, "tests", "data", "reference", "stories260K")
    os.makedirs(d, exist_ok=True)
    dump_json(os.path.join(d, "golden.json"), golden)
    log(f"== wrote {d}/golden.json; worst |transformers - numpy| = {worst:.3g}")


if __name__ == "__main__":
    main()
