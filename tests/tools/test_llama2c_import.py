#!/usr/bin/env python3
"""`sdw-cli import llama2c` and the SentencePiece-style tokenizer against an
independent numpy reading of the llama2.c files (tools/reference/llama2c_reference.py,
which follows run.c).

usage: test_llama2c_import.py SDW_CLI SOURCE_DIR

1. Importing samples/third_party/llama2c/{stories260K.bin,tok512.bin} gives
   exactly the shipped samples/model/stories260K folder (byte for byte).
2. The same weights written as a llama2.c version-1 file import to the same
   model.safetensors; a truncated file and a version-2 (int8) header are refused
   with a message naming the problem; an existing folder is not overwritten
   without --force.
3. `sdw-cli tokenize` gives run.c's token ids on the story prompts, Brown corpus
   lines and texts with characters outside the 512-token vocabulary (byte
   fallback), and decodes them back to the text.
4. Greedy decoding with `sdw-cli generate` gives run.c's tokens on three prompts,
   and the first one reads as llama2.c's published output for stories260K.
"""
import filecmp
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:
    print(f"FAIL: {sys.executable} cannot import {e.name}: this test needs python3 with numpy "
          "(Debian: apt-get install python3-numpy; tools/quickstart.sh installs it)")
    sys.exit(1)

cli, src = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "tools", "reference"))
import llama2c_reference as ref  # noqa: E402

third = os.path.join(src, "samples", "third_party", "llama2c")
ck, tk = os.path.join(third, "stories260K.bin"), os.path.join(third, "tok512.bin")
shipped = os.path.join(src, "samples", "model", "stories260K")
failures = []


def run(cmd, ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if ok and p.returncode != 0:
        print("FAIL: " + " ".join(cmd) + f"\n  exit {p.returncode}\n{p.stderr}")
        sys.exit(1)
    return p


def tensors(path):
    """A safetensors file's tensor entries and data, without its metadata."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        return header, f.read()


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    # 1. the shipped folder is what the importer makes
    out = os.path.join(tmp, "stories260K")
    run([cli, "import", "llama2c", ck, tk, "--out", out])
    names = sorted(os.listdir(shipped))
    check(sorted(os.listdir(out)) == names, f"imported folder holds {names}")
    _, mismatch, errors = filecmp.cmpfiles(shipped, out, names, shallow=False)
    check(not mismatch and not errors, f"imported files equal the shipped ones (differ: {mismatch + errors})")
    p = run([cli, "import", "llama2c", ck, tk, "--out", out], ok=False)
    check(p.returncode != 0 and "exists" in p.stderr, "an existing folder is refused without --force")

    # 2. version 1, truncated, version 2
    cfg, w = ref.read_checkpoint(ck)
    f32 = lambda a: np.asarray(a, dtype="<f4").tobytes()  # noqa: E731
    head = struct.pack("<Ii7iB", 0x616B3432, 1, cfg["dim"], cfg["hidden"], cfg["layers"], cfg["heads"],
                       cfg["kv_heads"], cfg["vocab"], cfg["seq"], 1)
    body = b"".join(f32(w[k]) for k in ("rms_att", "rms_ffn", "rms_final", "emb", "wq", "wk", "wv", "wo",
                                        "w1", "w2", "w3"))
    v1 = os.path.join(tmp, "v1.bin")
    with open(v1, "wb") as f:
        f.write(head + b"\0" * (256 - len(head)) + body)
    out1 = os.path.join(tmp, "v1")
    run([cli, "import", "llama2c", v1, tk, "--out", out1])
    check(tensors(os.path.join(out, "model.safetensors")) == tensors(os.path.join(out1, "model.safetensors")),
          "a version-1 file of the same weights imports to the same tensors")
    cut = os.path.join(tmp, "cut.bin")
    with open(ck, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:-1000])
    p = run([cli, "import", "llama2c", cut, tk, "--out", os.path.join(tmp, "cut")], ok=False)
    check(p.returncode != 0 and "bytes, but a llama2.c checkpoint" in p.stderr, "a truncated checkpoint is refused: "
          + p.stderr.strip()[:120])
    check(not os.path.exists(os.path.join(tmp, "cut")) and not os.path.exists(os.path.join(tmp, "cut.partial")),
          "a refused import leaves no folder behind")
    v2 = os.path.join(tmp, "v2.bin")
    with open(v2, "wb") as f:
        f.write(struct.pack("<Ii", 0x616B3432, 2) + b"\0" * 300)
    p = run([cli, "import", "llama2c", v2, tk, "--out", os.path.join(tmp, "v2")], ok=False)
    check(p.returncode != 0 and "int8" in p.stderr, "a version-2 (int8) checkpoint is refused")
    p = run([cli, "import", "llama2c", ck, os.path.join(src, "samples", "prompts", "brown-calib.jsonl"),
             "--out", os.path.join(tmp, "badtok")], ok=False)
    check(p.returncode != 0 and "not a llama2.c tokenizer" in p.stderr, "a wrong tokenizer file is refused")

# 3. tokenization
pieces, scores = ref.read_tokenizer(tk, cfg["vocab"])
texts = []
for name in ("stories-calib.jsonl", "stories-heldout.jsonl"):
    with open(os.path.join(src, "samples", "prompts", name), encoding="utf-8") as f:
        texts += [json.loads(line)["prompt"] for line in f][:30]
with open(os.path.join(src, "samples", "corpus", "brown-heldout.txt"), encoding="utf-8") as f:
    lines = [line.rstrip("\n") for line in f if len(line.strip()) > 40]
texts += lines[5:45]
texts += ["Café naïve — 東京 😀 x", "  two leading spaces", "trailing space ", "tabs\tand\nnewlines\n\n",
          "", " ", "Zoë's ßtrange ünïcode"]  # ("<s>" in a text is the special token here, text to run.c)
bad = []
for t in texts:
    got = json.loads(run([cli, "tokenize", "--model", shipped, "--text", t, "--json"]).stdout)
    want = ref.encode(pieces, scores, t)
    if got["ids"] != want:
        bad.append((t, got["ids"], want))
    elif got["decoded_skip_special"] != t:
        bad.append((t, "decoded as", got["decoded_skip_special"]))
for b in bad[:5]:
    print("   ", b)
check(not bad, f"sdw-cli tokenize equals run.c's encoder and decodes back on {len(texts)} texts ({len(bad)} differ)")

# 4. greedy decoding
for prompt, n in (("Once upon a time", 40), ("One day, Tom went to the park and found a red ball.", 30),
                  ("Mom said to Lily, \"", 30)):
    got = json.loads(run([cli, "generate", "--model", shipped, "--prompt", prompt, "--max-new-tokens", str(n),
                          "--json"]).stdout)
    ids = ref.encode(pieces, scores, prompt)
    want = ref.greedy(cfg, w, ids, n)
    check(got["prompt_ids"] == ids and got["tokens"] == want, f"greedy tokens equal run.c's for {prompt!r}")
    if prompt == "Once upon a time":
        check(got["text"].startswith(", there was a little girl named Lily. She loved to play outside in the park."),
              "the text reads as llama2.c's published greedy output: " + got["text"][:60])

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
