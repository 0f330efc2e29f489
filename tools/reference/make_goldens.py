#!/usr/bin/env python3
"""Make the reference golden files for the C++ model runtime and tokenizer.

Builds small randomly initialised Llama and Qwen3 models from configs with
`transformers` (no download), saves them in Hugging Face layout, re-loads them
with `from_pretrained` and records logits and greedy generations; trains two
byte-level BPE tokenizers with `tokenizers` (Llama-3 and Qwen2 pre-tokenizer
patterns) on the Brown calibration text and records how they encode a set of
test texts.

    python3 tools/reference/make_goldens.py [--repo .] [--out tests/data]

Writes:
    tests/data/reference/llama-tiny/          fp32, untied, Llama-3 RoPE scaling
    tests/data/reference/llama-tiny-tied/     bf16, tied embeddings, no scaling
    tests/data/reference/qwen3-tiny/          fp16, tied, q/k norm, head_dim 32
    tests/data/reference/qwen3-tiny-sharded/  same weights as qwen3-tiny, sharded
    tests/data/reference/provenance.json      versions, seeds, device
    tests/data/tokenizer/llama3/ and qwen2/   tokenizer.json,
                                              tokenizer_config.json, cases.json

A CUDA device is needed for the bf16 CUDA fields; without one they are left
out (and the script says so).
"""

import argparse
import copy
import json
import os
import platform
import random
import shutil
import sys
import time
import traceback
import unicodedata

import numpy as np
import torch

import tokenizers
import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

SEED = 0
N_INPUT = 24
N_PROMPT = 8
N_GREEDY = 32

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

TF_MAJOR = int(transformers.__version__.split(".")[0])
DTYPE_KEY = "dtype" if TF_MAJOR >= 5 else "torch_dtype"


def log(*a):
    print(*a, flush=True)


def f32list(t):
    """Float32 values as Python floats whose shortest repr round-trips to the same float32."""
    a = t.detach().to(torch.float32).cpu().numpy().astype(np.float32).ravel()
    return [float(str(v)) for v in a]


def f32rows(t):
    t = t.detach().to(torch.float32).cpu()
    return [f32list(r) for r in t]


def dump_json(path, obj, compact=True):
    with open(path, "w", encoding="utf-8") as f:
        if compact:
            json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        else:
            json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def dir_size(path):
    return sum(os.path.getsize(os.path.join(r, n)) for r, _, ns in os.walk(path) for n in ns)


# ----------------------------------------------------------------------------
# models


def make_config(cls, d):
    """Config from the Hub-style fields; transformers >= 5 takes RoPE settings as rope_parameters."""
    d = dict(d)
    d[DTYPE_KEY] = d.pop("dtype")
    if TF_MAJOR >= 5:
        rp = {"rope_type": "default"}
        rp.update(d.pop("rope_scaling", None) or {})
        rp["rope_theta"] = d.pop("rope_theta")
        d["rope_parameters"] = rp
    return cls(**d)


def greedy_manual(model, prompt, n, device):
    """Greedy by full forward passes without a cache; returns the tokens and top-1/top-2 margins."""
    seq, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            ids = torch.tensor([seq], dtype=torch.long, device=device)
            logits = model(input_ids=ids).logits[0, -1].float()
            top = torch.topk(logits, 2)
            margins.append(float(top.values[0] - top.values[1]))
            seq.append(int(top.indices[0]))
    return seq[len(prompt):], margins


def greedy(model, prompt, n, device):
    """model.generate, greedy, exactly n new tokens (the stop token is switched off), with the
    top-1/top-2 margin of every step. Falls back to the no-cache loop if generate stops early."""
    saved = model.generation_config
    gc = copy.deepcopy(saved)
    gc.eos_token_id = None
    gc.pad_token_id = 0
    gc.do_sample = False
    gc.num_beams = 1
    model.generation_config = gc
    ids = torch.tensor([prompt], dtype=torch.long, device=device)
    try:
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                                 do_sample=False, num_beams=1, pad_token_id=0,
                                 output_scores=True, return_dict_in_generate=True)
    finally:
        model.generation_config = saved
    new = out.sequences[0, len(prompt):].tolist()
    margins = []
    for s in out.scores:
        top = torch.topk(s[0].float(), 2).values
        margins.append(float(top[0] - top[1]))
    if len(new) != n:
        log(f"   generate gave {len(new)} tokens, wanted {n}: using the no-cache loop")
        return greedy_manual(model, prompt, n, device) + ("no_cache_loop",)
    return new, margins, "generate"


def legacy_config(path):
    """Rewrite a config.json written by transformers >= 5 (rope_parameters, dtype) in the
    form of the Hugging Face Hub's Llama-3 checkpoints (rope_theta + rope_scaling, torch_dtype)."""
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    if "rope_parameters" in cfg:
        rp = dict(cfg.pop("rope_parameters") or {})
        cfg["rope_theta"] = rp.pop("rope_theta", 10000.0)
        if rp.get("rope_type", "default") == "default":
            cfg["rope_scaling"] = None
        else:
            cfg["rope_scaling"] = rp
    if "dtype" in cfg:
        cfg["torch_dtype"] = cfg.pop("dtype")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    return cfg


def model_golden(name, cls, cfg_dict, out_dir, input_ids, prompt_ids, legacy=False, shard_copy=None, tweak=None):
    """Build, save, re-load and record one model. Returns the golden dict. tweak(model), when
    given, changes the freshly initialised model before it is saved (e.g. non-zero biases)."""
    log(f"== {name}")
    save_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[cfg_dict["dtype"]]
    cfg = make_config(cls.config_class, cfg_dict)
    torch.manual_seed(SEED)
    model = cls(cfg).eval()
    if tweak:
        tweak(model)
    # Cast the parameters only: the rotary inv_freq buffer stays float32, as from_pretrained makes it.
    for p in model.parameters():
        p.data = p.data.to(save_dtype)
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    model.generation_config.save_pretrained(d)
    if legacy:
        legacy_config(os.path.join(d, "config.json"))
    if shard_copy:
        sd = os.path.join(out_dir, shard_copy[0])
        shutil.rmtree(sd, ignore_errors=True)
        model.save_pretrained(sd, safe_serialization=True, max_shard_size=shard_copy[1])
        model.generation_config.save_pretrained(sd)
    for p in model.parameters():
        p.data = p.data.float()
    with torch.no_grad():
        logits_before = model(input_ids=torch.tensor([input_ids])).logits[0]
    del model

    # Re-load from disk: every number below comes from the saved files.
    m = cls.from_pretrained(d, **{DTYPE_KEY: save_dtype}).eval()
    loaded_dtype = str(next(m.parameters()).dtype)
    m32 = m.float()
    with torch.no_grad():
        logits = m32(input_ids=torch.tensor([input_ids])).logits[0]
    diff = float((logits - logits_before).abs().max())
    log(f"   re-loaded ({loaded_dtype}) vs in-memory model: max |dlogit| = {diff:.3g}")
    if diff > 1e-5:
        log(f"   WARNING: {name}: re-loaded model differs from the in-memory one ({diff})")
    g_cpu, m_cpu, src_cpu = greedy(m32, prompt_ids, N_GREEDY, "cpu")
    g_man, _ = greedy_manual(m32, prompt_ids, N_GREEDY, "cpu")
    log(f"   greedy fp32 cpu: {g_cpu}")
    log(f"   min top1-top2 margin (fp32): {min(m_cpu):.4g}; generate == no-cache loop: {g_cpu == g_man}")

    rope = {}
    try:
        re_ = m32.model.rotary_emb
        rope = {"inv_freq": f32list(re_.inv_freq), "attention_scaling": float(getattr(re_, "attention_scaling", 1.0))}
    except AttributeError:
        pass

    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        saved_cfg = json.load(f)
    golden = {
        "model": name,
        "architecture": cls.__name__,
        "weights_dtype_on_disk": cfg_dict["dtype"],
        "seed": SEED,
        "input_ids": input_ids,
        "logits": f32rows(logits),
        "logits_note": "fp32 on CPU from the re-loaded weights (weights stored in "
                       f"{cfg_dict['dtype']}, upcast to float32), one row per input position",
        "reload_vs_in_memory_max_abs_diff": diff,
        "greedy_prompt_ids": prompt_ids,
        "greedy_fp32_cpu": g_cpu,
        "greedy_fp32_cpu_margins": m_cpu,
        "greedy_fp32_cpu_source": src_cpu,
        "greedy_fp32_cpu_matches_no_cache_loop": g_cpu == g_man,
        "rope": rope,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "config": saved_cfg,
    }
    if torch.cuda.is_available():
        mb = cls.from_pretrained(d, **{DTYPE_KEY: torch.bfloat16}).eval().to("cuda")
        with torch.no_grad():
            lb = mb(input_ids=torch.tensor([input_ids], device="cuda")).logits[0, -1]
        g_bf, m_bf, src_bf = greedy(mb, prompt_ids, N_GREEDY, "cuda")
        bdiff = float((lb.float().cpu() - logits[-1]).abs().max())
        log(f"   greedy bf16 cuda: {g_bf}")
        log(f"   bf16 cuda vs fp32 cpu last logits: max |d| = {bdiff:.3g}; greedy equal: {g_bf == g_cpu}; "
            f"min margin (bf16): {min(m_bf):.4g}")
        golden.update({
            "greedy_bf16_cuda": g_bf,
            "greedy_bf16_cuda_margins": m_bf,
            "greedy_bf16_cuda_source": src_bf,
            "bf16_note": "from_pretrained(dtype=bfloat16) then .to('cuda'): weights bf16, rotary inv_freq float32",
            "logits_bf16_cuda_last": f32list(lb),
            "bf16_cuda_vs_fp32_cpu_last_max_abs_diff": bdiff,
            "cuda_device": torch.cuda.get_device_name(0),
        })
        try:
            golden["bf16_rotary_inv_freq_dtype"] = str(mb.model.rotary_emb.inv_freq.dtype)
        except AttributeError:
            pass
        del mb
    else:
        log("   no CUDA device: bf16 CUDA fields left out")
    if shard_copy:
        sd = os.path.join(out_dir, shard_copy[0])
        ms = cls.from_pretrained(sd, **{DTYPE_KEY: save_dtype}).eval().float()
        with torch.no_grad():
            ls = ms(input_ids=torch.tensor([input_ids])).logits[0]
        sdiff = float((ls - logits).abs().max())
        shards = sorted(n for n in os.listdir(sd) if n.endswith(".safetensors"))
        log(f"   {shard_copy[0]}: {len(shards)} shards {shards}; logits vs unsharded max |d| = {sdiff}")
        if sdiff != 0.0:
            log("   WARNING: the sharded copy gives different logits")
        golden["sharded_copy"] = {"dir": shard_copy[0], "shards": shards, "logits_max_abs_diff": sdiff}
    dump_json(os.path.join(d, "golden.json"), golden)
    log(f"   {d}: {dir_size(d)} bytes")
    return golden


def make_models(ref_dir):
    os.makedirs(ref_dir, exist_ok=True)
    g = torch.Generator().manual_seed(SEED)
    input_ids = torch.randint(0, 512, (N_INPUT,), generator=g).tolist()
    prompt_ids = torch.randint(0, 512, (N_PROMPT,), generator=g).tolist()
    common = dict(vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  bos_token_id=1, eos_token_id=2, attention_bias=False, initializer_range=0.1)
    llama = dict(common, head_dim=16, rms_norm_eps=1e-5, rope_theta=500000.0,
                 rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                 tie_word_embeddings=False, mlp_bias=False, dtype="float32")
    llama_tied = dict(common, head_dim=16, rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=None,
                      tie_word_embeddings=True, mlp_bias=False, dtype="bfloat16")
    qwen3 = dict(common, head_dim=32, rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                 tie_word_embeddings=True, use_sliding_window=False, dtype="float16")
    jobs = [("llama-tiny", transformers.LlamaForCausalLM, llama, dict(legacy=True)),
            ("llama-tiny-tied", transformers.LlamaForCausalLM, llama_tied, {}),
            ("qwen3-tiny", transformers.Qwen3ForCausalLM, qwen3,
             dict(shard_copy=("qwen3-tiny-sharded", "120KB")))]
    out, failed = {}, []
    for name, cls, cfg, kw in jobs:
        try:
            out[name] = model_golden(name, cls, cfg, ref_dir, input_ids, prompt_ids, **kw)
        except Exception:  # noqa: BLE001 - go on with the others, fail at the end
            traceback.print_exc()
            failed.append(name)
    return out, failed


# ----------------------------------------------------------------------------
# tokenizers


SUPPLEMENT_SNIPPETS = [
    "def area(width, height):\n    if width <= 0 or height <= 0:\n        return 0\n    return width * height\n",
    "class Node:\n    def __init__(self, value):\n        self.value = value\n        self.next = None\n",
    "for i in range(10):\n\tif i % 2 == 0:\n\t\tprint(i)\n\telse:\n\t\tcontinue\n",
    "#include <vector>\nnamespace app {\nint sum(const std::vector<int>& v) {\n    int s = 0;\n    for (int x : v) { s += x; }\n    return s;\n}\n}  // namespace app\n",
    "auto it = map.find(key);\nif (it != map.end()) {\n    it->second->update();\n    std::cout << it->first << std::endl;\n}\n",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;\n",
    "\n\n\nSection 2\n\n    indented    text\t\twith\ttabs   and   runs     of      spaces\r\n",
    "\u5317\u4eac\u662f\u4e2d\u56fd\u7684\u9996\u90fd\uff0c\u4e5f\u662f\u4e00\u5ea7\u5386\u53f2\u60a0\u4e45\u7684\u57ce\u5e02\u3002",
    "\u3053\u308c\u306f\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca\u3082\u3042\u308a\u307e\u3059\u3002",
    "\ub300\ud55c\ubbfc\uad6d\uc758 \uc218\ub3c4\ub294 \uc11c\uc6b8\uc785\ub2c8\ub2e4.",
    "\u041c\u043e\u0441\u043a\u0432\u0430 \u2014 \u0441\u0442\u043e\u043b\u0438\u0446\u0430 \u0420\u043e\u0441\u0441\u0438\u0438.",
    "\u0391\u03b8\u03ae\u03bd\u03b1 \u03b5\u03af\u03bd\u03b1\u03b9 \u03b7 \u03c0\u03c1\u03c9\u03c4\u03b5\u03cd\u03bf\u03c5\u03c3\u03b1.",
    "\u0627\u0644\u0642\u0627\u0647\u0631\u0629 \u0647\u064a \u0639\u0627\u0635\u0645\u0629 \u0645\u0635\u0631. \u05d9\u05e8\u05d5\u05e9\u05dc\u05d9\u05dd \u05e2\u05d9\u05e8.",
    "\u0928\u0908 \u0926\u093f\u0932\u094d\u0932\u0940 \u092d\u093e\u0930\u0924 \u0915\u0940 \u0930\u093e\u091c\u0927\u093e\u0928\u0940 \u0939\u0948\u0964",
    "H\u00e0 N\u1ed9i l\u00e0 th\u1ee7 \u0111\u00f4 c\u1ee7a Vi\u1ec7t Nam.",
    "Great job \U0001F44D\U0001F3FD \U0001F600 \U0001F389 \u2764\ufe0f \U0001F1EC\U0001F1E7",
]


def supplement(seed=SEED):
    """A small generated supplement to the Brown text so that the 2000-token vocabularies hold
    merges for digit groups, whitespace runs, code and non-Latin scripts (the Brown text alone
    gives none, and then the tests could not tell the pre-tokenizer patterns apart)."""
    rng = random.Random(seed)
    out = []
    for _ in range(4000):
        parts = []
        for _ in range(8):
            k = rng.randint(1, 7)
            n = rng.randrange(10 ** (k - 1), 10 ** k)
            r = rng.random()
            if r < 0.5:
                parts.append(str(n))
            elif r < 0.7:
                parts.append(f"{n:,}")
            elif r < 0.85:
                parts.append(f"{n / 100:.2f}")
            else:
                parts.append(str(rng.randrange(1900, 2030)))
        out.append(" ".join(parts))
    for _ in range(600):
        out.extend(SUPPLEMENT_SNIPPETS)
        k = rng.randint(1, 24)
        out.append(" " * k + "x\n" + "\t" * rng.randint(1, 4) + "y" + "\n" * rng.randint(1, 4))
    rng.shuffle(out)
    return out


def corpus_docs(path):
    """Documents of a samples/corpus file: the lines of each block joined by newlines, headers dropped."""
    docs, cur = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# doc "):
                if cur:
                    docs.append("\n".join(cur))
                cur = []
            elif line:
                cur.append(line)
    if cur:
        docs.append("\n".join(cur))
    return docs


TOKENIZER_SPECS = {
    "llama3": {
        "pattern": LLAMA3_PATTERN,
        "nfc": False,
        "special": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                    "<|eot_id|>"],
        "added": [],
        "bos": "<|begin_of_text|>",
        "eos": "<|end_of_text|>",
        "pad": None,
    },
    "qwen2": {
        "pattern": QWEN2_PATTERN,
        "nfc": True,
        "special": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "added": ["<think>", "</think>"],
        "bos": None,
        "eos": "<|endoftext|>",
        "pad": "<|endoftext|>",
    },
}


def build_tokenizer(spec, docs, vocab_size):
    """Byte-level BPE with the given split pattern; BPE vocab of vocab_size, then the added tokens
    after it (as the real Llama-3 and Qwen2 vocabularies place them)."""
    tok = Tokenizer(models.BPE())
    if spec["nfc"]:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(spec["pattern"]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(docs, trainer=trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in spec["special"]])
    if spec["added"]:
        tok.add_tokens([AddedToken(s, special=False, normalized=False) for s in spec["added"]])
    if spec["bos"]:
        bos = spec["bos"]
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A:0 {bos}:1 $B:1",
            special_tokens=[(bos, tok.token_to_id(bos))])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def tokenizer_config(tok, spec, max_len):
    added = {}
    for s in spec["special"] + spec["added"]:
        added[str(tok.token_to_id(s))] = {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                                          "single_word": False, "special": s in spec["special"]}
    cfg = {
        "added_tokens_decoder": added,
        "bos_token": spec["bos"],
        "eos_token": spec["eos"],
        "clean_up_tokenization_spaces": False,
        "model_max_length": max_len,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    if spec["pad"]:
        cfg["pad_token"] = spec["pad"]
    return cfg


NASTY = (
    "Hello, World! I'LL say it's 1234567 vs 3.14159\tand 1,000,000 -- don't.\n"
    "    def f(x):\n        return x ** 2  # 平方\r\n"
    "std::vector<int> v{1, 2}; p->next = nullptr;   \n\n\n"
    "中文测试，日本語のテキスト、ひらがなカタカナ。한국어 텍스트입니다.\n"
    "Emoji: 👍🏽 👨\u200d👩\u200d👧\u200d👦 🏳\ufe0f\u200d🌈 🇺🇸🇯🇵 ❤\ufe0f\n"
    "Cafe\u0301 caf\u00e9 Tie\u0302\u0301ng Vie\u0323\u0302t tiếng Việt नमस्ते दुनिया\n"
    "مرحبا بالعالم שלום עולם Привет, мир! Γειά σου Κόσμε\n"
    "<|im_start|>user\nhi<|im_end|><|begin_of_text|><think>ok</think>"
    + " " * 40 + "end\t\t\t!!!???...;;;\u00a0\u3000x\u200by"
)

CASES = [
    ("plain_english", "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced \"no evidence\" that any irregularities took place."),
    ("contractions_mixed_case", "I'LL go, don't stop, it's fine; WE'RE here, They'Ve gone, she'd know, I'm sure, you'll see, that's IT'S."),
    ("contractions_curly", "It\u2019s a \u201cquoted\u201d word, isn\u2019t it?"),
    ("digits_long", "1234567"),
    ("digits_pi", "3.14159"),
    ("digits_grouped", "1,000,000 and 12:30 on 2024-01-31, x2 99bottles 0.5%"),
    ("tabs", "a\tb\t\tc\t\t\t\td"),
    ("leading_spaces", "   leading"),
    ("trailing_spaces", "trailing   "),
    ("blank_lines", "a\n\n\nb"),
    ("crlf", "line one\r\nline two\r\n"),
    ("spaces_40", " " * 40),
    ("mixed_whitespace", "x \t \n  \r\n\t y\u00a0z\u2003w\u3000v"),
    ("punctuation_runs", "Wait!!! What??? ... --- ((nested)) [[x]] {{y}} \"\"quotes\"\" ''single'' @#$%^&*"),
    ("python_code", "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\tprint(fib(10))  # tab-indented\n"),
    ("cpp_code", "namespace sdw {\nstd::unique_ptr<Node> Node::make(int x) {\n    auto p = std::make_unique<Node>();\n    p->value = x; return p;\n}\n}  // namespace sdw\n"),
    ("chinese", "我们今天在北京召开了一次关于人工智能的会议。"),
    ("japanese", "東京は日本の首都です。ひらがなとカタカナ、そして漢字を使います。"),
    ("korean", "안녕하세요, 세계! 한국어 문장입니다."),
    ("emoji_simple", "I love it 😀😂🎉 so much🔥"),
    ("emoji_zwj_flags_skin", "👨\u200d👩\u200d👧\u200d👦 👩🏽\u200d💻 🏳\ufe0f\u200d🌈 🇩🇪🇫🇷🇺🇸 👍🏻👍🏿 ❤\ufe0f"),
    ("combining_acute", "Cafe\u0301 vs caf\u00e9, nai\u0308ve vs na\u00efve"),
    ("vietnamese", "Tiếng Việt có dấu: Người Việt Nam yêu hòa bình."),
    ("vietnamese_decomposed", "Tie\u0302\u0301ng Vie\u0323\u0302t"),
    ("devanagari", "नमस्ते दुनिया, यह हिंदी है।"),
    ("arabic", "مرحبا بالعالم، هذا نص عربي ١٢٣٤٥"),
    ("hebrew", "שלום עולם, זה טקסט בעברית"),
    ("cyrillic", "Привет, мир! Это русский текст. ЁЖИК"),
    ("greek", "Γειά σου Κόσμε! Ελληνικό κείμενο: αβγδε ΑΒΓΔΕ"),
    ("mixed_scripts", "Hello世界Привет123мир🙂abcαβγ"),
    ("qwen_chat", "<|im_start|>user\nhi<|im_end|>"),
    ("qwen_chat_full", "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n4<|im_end|>"),
    ("llama3_chat", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"),
    ("special_lookalike", "<|im_start |> <|endoftext <think >"),
    ("empty", ""),
    ("single_space", " "),
    ("newline_only", "\n"),
    ("nasty", NASTY),
]


def make_tokenizers(tok_dir, calib_path):
    docs = corpus_docs(calib_path)
    extra = supplement()
    log(f"== tokenizers: {len(docs)} documents from {calib_path} + {len(extra)} supplement texts "
        f"({sum(len(t) for t in extra)} characters)")
    docs = docs + extra
    summary = {}
    texts_nfc = {name: unicodedata.normalize("NFC", text) != text for name, text in CASES}
    for name, spec in TOKENIZER_SPECS.items():
        d = os.path.join(tok_dir, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        tok = build_tokenizer(spec, docs, 2000)
        tok.save(os.path.join(d, "tokenizer.json"))
        dump_json(os.path.join(d, "tokenizer_config.json"), tokenizer_config(tok, spec, 256), compact=False)
        # Re-load the saved file: the cases come from what is on disk.
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        cases = []
        for cname, text in CASES:
            enc = tok.encode(text, add_special_tokens=False)
            ids = enc.ids
            dec = tok.decode(ids, skip_special_tokens=False)
            expect = unicodedata.normalize("NFC", text) if spec["nfc"] else text
            cases.append({
                "name": cname,
                "text": text,
                "ids": ids,
                "tokens": enc.tokens,
                "decoded": dec,
                "ids_add_special_tokens": tok.encode(text, add_special_tokens=True).ids,
                "decoded_skip_special": tok.decode(ids, skip_special_tokens=True),
                "nfc_changes_text": texts_nfc[cname],
                "roundtrip": dec == expect,
            })
        bad = [c["name"] for c in cases if not c["roundtrip"]]
        # Cross-check with transformers' fast tokenizer loading the same folder.
        tf_ok = None
        try:
            at = transformers.AutoTokenizer.from_pretrained(d)
            tf_ok = all(at.encode(c["text"], add_special_tokens=False) == c["ids"] for c in cases)
        except Exception as e:  # noqa: BLE001 - report, do not fail
            log(f"   transformers AutoTokenizer check failed to run: {e!r}")
        out = {
            "tokenizer": name,
            "tokenizers_version": tokenizers.__version__,
            "transformers_version": transformers.__version__,
            "vocab_size": tok.get_vocab_size(with_added_tokens=True),
            "pattern": spec["pattern"],
            "normalizer": "NFC" if spec["nfc"] else None,
            "trained_on": "samples/corpus/brown-calib.txt (header lines dropped, one document per training text) "
                          "+ the generated supplement of make_goldens.py (numbers, code, whitespace runs, "
                          "non-Latin scripts, emoji; random.Random(0))",
            "bpe_vocab_size": 2000,
            "transformers_autotokenizer_agrees": tf_ok,
            "cases": cases,
        }
        dump_json(os.path.join(d, "cases.json"), out, compact=False)
        nasty = next(c for c in cases if c["name"] == "nasty")
        log(f"   {name}: vocab {out['vocab_size']}, {len(cases)} cases, nasty text -> {len(nasty['ids'])} ids, "
            f"round-trip failures: {bad}, transformers agrees: {tf_ok}, dir {dir_size(d)} bytes")
        summary[name] = {"vocab_size": out["vocab_size"], "roundtrip_failures": bad,
                         "transformers_autotokenizer_agrees": tf_ok}
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=".", help="repository root (default: .)")
    ap.add_argument("--out", default=None, help="output root (default: REPO/tests/data)")
    args = ap.parse_args()
    out = args.out or os.path.join(args.repo, "tests", "data")
    t0 = time.time()
    log(f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"tokenizers {tokenizers.__version__}, numpy {np.__version__}, "
        f"cuda: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none'}")
    torch.use_deterministic_algorithms(False)
    try:
        tok_summary = make_tokenizers(os.path.join(out, "tokenizer"),
                                      os.path.join(args.repo, "samples", "corpus", "brown-calib.txt"))
        tok_failed = []
    except Exception:  # noqa: BLE001 - go on with the models, fail at the end
        traceback.print_exc()
        tok_summary, tok_failed = None, ["tokenizers"]
    goldens, failed = make_models(os.path.join(out, "reference"))
    failed += tok_failed
    prov = {
        "command": "python3 tools/reference/make_goldens.py",
        "seed": SEED,
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "tokenizers_version": tokenizers.__version__,
        "numpy_version": np.__version__,
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "models": {k: {"greedy_fp32_cpu": v["greedy_fp32_cpu"],
                       "greedy_bf16_cuda": v.get("greedy_bf16_cuda"),
                       "min_margin_fp32": min(v["greedy_fp32_cpu_margins"]),
                       "min_margin_bf16": min(v["greedy_bf16_cuda_margins"]) if "greedy_bf16_cuda_margins" in v else None,
                       "sharded_copy": v.get("sharded_copy")}
                   for k, v in goldens.items()},
        "tokenizers": tok_summary,
    }
    dump_json(os.path.join(out, "reference", "provenance.json"), prov, compact=False)
    log(f"done in {time.time() - t0:.1f} s")
    if failed:
        log(f"FAILED: {failed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
