#!/usr/bin/env python3
"""The library baseline for `sdw-cli bench decode`: transformers with a static
KV cache and the decode step compiled by torch.compile (mode "reduce-overhead":
CUDA graphs), on a model with random bf16 weights built from one of our shape
configs, timed the way the C++ benchmark times the engine: prefill `context`
random tokens, then decode steps that each write and read slot `context`, the
argmax fed back on the device, CUDA events around each step, median of the
timed steps after warm-up.

    python3 tools/gpu/hf_decode_baseline.py OUT.json [--config resources/configs/llama-3.1-8b.json]
        [--batch 1] [--context 512] [--warmup 50] [--tokens 50] [--method step|graph|generate]

--method graph: the decode step compiled by torch.compile in its default mode (Inductor's
kernels, no CUDA graph trees), then captured once into a torch.cuda.CUDAGraph by hand with
static input and output tensors and replayed per token, the argmax copied back into the
input on the device (as gpt-fast-style decoders do).

--method generate: transformers' own recipe instead (generation_config.cache_implementation
"static", model.forward compiled with mode "reduce-overhead"), one model.generate call of
warm-up + timed new tokens after two warm-up calls; a logits processor records a CUDA event
per step, and a step's time is the gap between consecutive events (so it includes generate's
own per-token host work, which the step method leaves out).
"""
import argparse
import json
import statistics
import time

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, StaticCache


def make_cache(cfg, batch, length, dtype):
    try:  # transformers 5: sized lazily by the first update
        return StaticCache(config=cfg, max_cache_len=length)
    except TypeError:
        return StaticCache(config=cfg, max_batch_size=batch, max_cache_len=length, device="cuda", dtype=dtype)


def cache_len(ctx, warmup, tokens):
    # Room for every step: transformers 5 may place a step's key at the cache's fill level
    # (its count of written slots) rather than at the cache_position given, so the slot
    # advances per step; a cache of ctx + 64 then overflowed after 64 steps (Inductor's
    # index assert "0 <= tmp7 < 576").
    return ctx + warmup + tokens + 64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--config", default="resources/configs/llama-3.1-8b.json")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--tokens", type=int, default=50)
    ap.add_argument("--method", choices=["step", "graph", "generate"], default="step")
    a = ap.parse_args()

    spec = json.load(open(a.config))
    spec.pop("architectures", None)
    model_type = spec.pop("model_type")
    cfg = AutoConfig.for_model(model_type, **spec)
    dtype = torch.bfloat16
    torch.manual_seed(0)
    t0 = time.time()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    model.eval()
    setup = time.time() - t0
    B, ctx = a.batch, a.context
    if a.method == "generate":
        times, compile_s = time_generate(model, cfg, B, ctx, a.warmup, a.tokens)
    elif a.method == "graph":
        times, compile_s = time_graph(model, cfg, B, ctx, a.warmup, a.tokens, dtype)
    else:
        times, compile_s = time_steps(model, cfg, B, ctx, a.warmup, a.tokens, dtype)
    report(a, model, model_type, setup, compile_s, times)


def time_generate(model, cfg, B, ctx, warmup, tokens):
    class Stamp(transformers.LogitsProcessor):
        def __init__(self):
            self.events = []

        def __call__(self, input_ids, scores):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            self.events.append(e)
            return scores

    model.generation_config.cache_implementation = "static"
    model.generation_config.pad_token_id = 0
    model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    ids = torch.randint(cfg.vocab_size, (B, ctx), device="cuda")
    n = warmup + tokens
    kw = dict(max_new_tokens=n, min_new_tokens=n, do_sample=False, eos_token_id=None)
    t1 = time.time()
    with torch.no_grad():
        for _ in range(2):
            model.generate(ids, **kw)
        torch.cuda.synchronize()
        compile_s = time.time() - t1
        stamp = Stamp()
        model.generate(ids, logits_processor=transformers.LogitsProcessorList([stamp]), **kw)
        torch.cuda.synchronize()
    ev = stamp.events
    gaps = [ev[i - 1].elapsed_time(ev[i]) for i in range(1, len(ev))]
    return gaps[-tokens:], compile_s


def time_graph(model, cfg, B, ctx, warmup, tokens, dtype):
    cache = make_cache(cfg, B, cache_len(ctx, warmup, tokens), dtype)
    ids = torch.randint(cfg.vocab_size, (B, ctx), device="cuda")
    with torch.no_grad():
        out = model(ids, past_key_values=cache, cache_position=torch.arange(ctx, device="cuda"), use_cache=True)
        tok = out.logits[:, -1].argmax(-1, keepdim=True).clone()
        pos = torch.tensor([ctx], device="cuda")
        posb = pos.view(1, 1).expand(B, 1).contiguous()

        def step(t):
            logits = model(t, past_key_values=cache, cache_position=pos, position_ids=posb, use_cache=True).logits
            return logits[:, -1].argmax(-1, keepdim=True)

        compiled = torch.compile(step, fullgraph=True)
        t1 = time.time()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # compile and warm up outside the capture
            for _ in range(3):
                compiled(tok)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            nxt = compiled(tok)
        torch.cuda.synchronize()
        compile_s = time.time() - t1
        times = []
        for i in range(warmup + tokens):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            graph.replay()
            tok.copy_(nxt)
            e.record()
            e.synchronize()
            if i >= warmup:
                times.append(s.elapsed_time(e))
    return times, compile_s


def time_steps(model, cfg, B, ctx, warmup, tokens, dtype):
    a = argparse.Namespace(warmup=warmup, tokens=tokens)
    cache = make_cache(cfg, B, cache_len(ctx, warmup, tokens), dtype)
    ids = torch.randint(cfg.vocab_size, (B, ctx), device="cuda")
    with torch.no_grad():
        out = model(ids, past_key_values=cache, cache_position=torch.arange(ctx, device="cuda"), use_cache=True)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        pos = torch.tensor([ctx], device="cuda")
        posb = pos.view(1, 1).expand(B, 1)

        def step(tok):
            logits = model(tok, past_key_values=cache, cache_position=pos, position_ids=posb, use_cache=True).logits
            return logits[:, -1].argmax(-1, keepdim=True)

        compiled = torch.compile(step, mode="reduce-overhead", fullgraph=True)
        t1 = time.time()
        for _ in range(3):  # compile and record the graphs
            nxt = compiled(nxt).clone()
        torch.cuda.synchronize()
        compile_s = time.time() - t1
        times = []
        for i in range(a.warmup + a.tokens):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            nxt = compiled(nxt).clone()
            e.record()
            e.synchronize()
            if i >= a.warmup:
                times.append(s.elapsed_time(e))
    return times, compile_s


def report(a, model, model_type, setup, compile_s, times):
    B, ctx = a.batch, a.context
    med = statistics.median(times)
    res = {
        "benchmark": "decode-transformers",
        "device": torch.cuda.get_device_name(0),
        "config": a.config,
        "model_type": model_type,
        "parameters": sum(p.numel() for p in model.parameters()),
        "dtype": "bfloat16",
        "batch": B,
        "context": ctx,
        "warmup_steps": a.warmup,
        "timed_steps": a.tokens,
        "median_ms": med,
        "tokens_per_second": B * 1000.0 / med,
        "step_ms": times,
        "setup_seconds": setup,
        "compile_seconds": compile_s,
        "method": ("transformers %s, torch %s: StaticCache, torch.compile(mode='reduce-overhead', fullgraph=True) of the "
                   "decode step (forward + argmax); CUDA events around each step; median of %d after %d warm-up"
                   % (transformers.__version__, torch.__version__, a.tokens, a.warmup)) if a.method == "step" else
                  ("transformers %s, torch %s: StaticCache, the decode step (forward + argmax) compiled by torch.compile "
                   "(default mode, fullgraph) and captured by hand into one torch.cuda.CUDAGraph, replayed per token with "
                   "the argmax copied back on the device; CUDA events around each replay; median of %d after %d warm-up"
                   % (transformers.__version__, torch.__version__, a.tokens, a.warmup)) if a.method == "graph" else
                  ("transformers %s, torch %s: generate() with cache_implementation='static' and model.forward "
                   "compiled (mode='reduce-overhead', fullgraph=True); a CUDA event per step from a logits processor, "
                   "gaps between consecutive steps; median of the last %d of %d new tokens"
                   % (transformers.__version__, torch.__version__, a.tokens, a.warmup + a.tokens)),
    }
    json.dump(res, open(a.out, "w"), indent=2)
    print(json.dumps({k: v for k, v in res.items() if k != "step_ms"}))


if __name__ == "__main__":
    main()
