#!/usr/bin/env python3
"""Goldens for the architectures beyond Llama and Qwen3, made like
tools/reference/make_goldens.py's (small random models built with
`transformers`, saved in Hugging Face layout, re-loaded; fp32 CPU logits and
greedy tokens, bf16 CUDA greedy tokens where a GPU is present):

    tests/data/reference/qwen2-tiny/     Qwen2ForCausalLM: q/k/v biases (set to random values;
                                         transformers initialises them to zero), bf16
    tests/data/reference/mistral-tiny/   MistralForCausalLM: sliding window of 16 positions
                                         (the 24-token input and 40-token generations cross it), bf16
    tests/data/reference/gemma3-tiny/    Gemma3ForCausalLM (text): two sliding layers (window 8) and one
                                         global, local and global RoPE bases, linear RoPE scaling on the
                                         global layers, query_pre_attn_scalar != head_dim, GELU-tanh MLP,
                                         random (1 + w) norm weights, tied embeddings, bf16
    tests/data/reference/gemma3-softcap-tiny/  the same family with attention and final-logit
                                         soft-capping configured, fp32

    python3 tools/reference/arch_goldens.py [--out tests/data/reference]
"""
import argparse
import os
import sys

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402


def random_biases(model):
    g = torch.Generator().manual_seed(mg.SEED + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)


_base_make_config = mg.make_config


def make_config(cls, d):
    """Gemma 3 under transformers >= 5: RoPE settings per layer type (rope_parameters
    {"full_attention": ..., "sliding_attention": ...}); saved that way in config.json."""
    if mg.TF_MAJOR < 5 or "rope_local_base_freq" not in d:
        return _base_make_config(cls, d)
    d = dict(d)
    d[mg.DTYPE_KEY] = d.pop("dtype")
    full = {"rope_type": "default"}
    full.update(d.pop("rope_scaling", None) or {})
    full["rope_theta"] = d.pop("rope_theta")
    d["rope_parameters"] = {"full_attention": full,
                            "sliding_attention": {"rope_type": "default", "rope_theta": d.pop("rope_local_base_freq")}}
    return cls(**d)


mg.make_config = make_config


def random_norms(model):
    """Gemma initialises its (1 + w) norm weights to zero; random ones test the offset."""
    g = torch.Generator().manual_seed(mg.SEED + 2)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/data/reference")
    a = ap.parse_args()
    g = torch.Generator().manual_seed(mg.SEED)
    input_ids = torch.randint(0, 512, (mg.N_INPUT,), generator=g).tolist()
    prompt_ids = torch.randint(0, 512, (mg.N_PROMPT,), generator=g).tolist()
    common = dict(vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  bos_token_id=1, eos_token_id=2, initializer_range=0.1)
    qwen2 = dict(common, rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None, tie_word_embeddings=True,
                 use_sliding_window=False, dtype="bfloat16")
    mistral = dict(common, head_dim=16, rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                   tie_word_embeddings=False, sliding_window=16, dtype="bfloat16")
    gemma3 = dict(common, num_hidden_layers=3, head_dim=16, query_pre_attn_scalar=24, rms_norm_eps=1e-6,
                  rope_theta=1000000.0, rope_local_base_freq=10000.0,
                  rope_scaling={"rope_type": "linear", "factor": 4.0}, sliding_window=8,
                  layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                  hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True, pad_token_id=0,
                  final_logit_softcapping=None, attn_logit_softcapping=None, dtype="bfloat16")
    gemma3_cap = dict(gemma3, num_hidden_layers=2, layer_types=["full_attention", "sliding_attention"],
                      rope_scaling=None, final_logit_softcapping=3.0, attn_logit_softcapping=5.0, dtype="float32")
    print("transformers", transformers.__version__, "torch", torch.__version__)
    only = set(os.environ.get("ARCH_GOLDENS_ONLY", "").split(",")) - {""}
    failed = []
    for name, cls, cfg, kw in [("qwen2-tiny", transformers.Qwen2ForCausalLM, qwen2, dict(tweak=random_biases)),
                               ("mistral-tiny", transformers.MistralForCausalLM, mistral, {}),
                               ("gemma3-tiny", transformers.Gemma3ForCausalLM, gemma3, dict(tweak=random_norms)),
                               ("gemma3-softcap-tiny", transformers.Gemma3ForCausalLM, gemma3_cap,
                                dict(tweak=random_norms))]:
        if only and name not in only:
            continue
        try:
            gd = mg.model_golden(name, cls, cfg, a.out, input_ids, prompt_ids, **kw)
            print(name, "greedy fp32", gd["greedy_fp32_cpu"][:8], "bf16", gd.get("greedy_bf16_cuda", [])[:8])
        except Exception:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            failed.append(name)
    if failed:
        sys.exit("failed: " + ", ".join(failed))


if __name__ == "__main__":
    main()
