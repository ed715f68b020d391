#!/usr/bin/python3
"""Writes the synthetic OLMoE-shape checkpoint (make_synthetic.py) as a GGUF file for llama.cpp,
so `llama-bench` can decode the same model with the same bytes per weight as our containers.
A reference for the decode benchmark (docs/performance.md, "llama.cpp on the same machine"); the
product never reads GGUF.

Usage: reference_gguf.py --gguf-py DIR --src CHECKPOINT --out FILE.gguf --experts q4_0|q8_0

--gguf-py: the gguf-py directory of a llama.cpp checkout (its GGUF writer and block quantisers;
needs numpy). Types, matching `coli convert --experts int4-g64` / `int8`: routed experts Q4_0 or
Q8_0 (4.5 / 8.5 bits per weight, as int4-g64 / int8-g64), attention, output and token embedding
Q8_0, router and norms F32. The tokenizer is written as "no_vocab" with the checkpoint's
vocab_size: llama-bench feeds random token ids and never tokenises text.

Memory: the quantised tensors are held until the file is written (about 3.7 GiB for q4_0, 6.7 GiB
for q8_0); the BF16 shards are read through memory maps one tensor at a time.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(
        description="The synthetic OLMoE-shape checkpoint as GGUF for llama-bench (a reference).")
    ap.add_argument("--gguf-py", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--experts", choices=["q4_0", "q8_0"], required=True)
    args = ap.parse_args()
    sys.path.insert(0, args.gguf_py)
    import gguf  # noqa: E402 (found through --gguf-py)
    from gguf.quants import quantize  # noqa: E402

    q8 = gguf.GGMLQuantizationType.Q8_0
    experts_type = {"q4_0": gguf.GGMLQuantizationType.Q4_0, "q8_0": q8}[args.experts]
    cfg = json.load(open(os.path.join(args.src, "config.json")))
    if cfg.get("model_type") != "olmoe":
        sys.exit(f"{args.src}: model_type {cfg.get('model_type')!r}, expected 'olmoe'")
    weight_map = json.load(open(os.path.join(args.src, "model.safetensors.index.json")))[
        "weight_map"]
    headers = {}

    def tensor(name):
        # A BF16 safetensors tensor as float32 (the upper half of each float's bits).
        path = os.path.join(args.src, weight_map[name])
        if path not in headers:
            with open(path, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                headers[path] = (json.loads(f.read(n)), 8 + n)
        header, base = headers[path]
        meta = header[name]
        if meta["dtype"] != "BF16":
            sys.exit(f"{path}: {name} is {meta['dtype']}, expected BF16")
        a, b = meta["data_offsets"]
        raw = np.memmap(path, dtype=np.uint16, mode="r", offset=base + a, shape=((b - a) // 2,))
        return (raw.astype(np.uint32) << 16).view(np.float32).reshape(meta["shape"])

    w = gguf.GGUFWriter(args.out, "olmoe")
    layers, n_experts = cfg["num_hidden_layers"], cfg["num_experts"]
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(layers)
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_expert_count(n_experts)
    w.add_expert_used_count(cfg["num_experts_per_tok"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_tokenizer_model("no_vocab")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0 if args.experts == "q4_0"
                    else gguf.LlamaFileType.MOSTLY_Q8_0)

    def put(name, arr, qtype=None):
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        if qtype is None:
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, quantize(arr, qtype), raw_dtype=qtype)

    # GGUF names: llama.cpp's OLMoE tensors (gguf-py constants, MODEL_ARCH.OLMOE).
    put("token_embd.weight", tensor("model.embed_tokens.weight"), q8)
    put("output_norm.weight", tensor("model.norm.weight"))
    put("output.weight", tensor("lm_head.weight"), q8)
    for l in range(layers):
        p = f"model.layers.{l}."
        put(f"blk.{l}.attn_norm.weight", tensor(p + "input_layernorm.weight"))
        for hf, name in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"),
                         ("o_proj", "attn_output")):
            put(f"blk.{l}.{name}.weight", tensor(p + f"self_attn.{hf}.weight"), q8)
        put(f"blk.{l}.attn_q_norm.weight", tensor(p + "self_attn.q_norm.weight"))
        put(f"blk.{l}.attn_k_norm.weight", tensor(p + "self_attn.k_norm.weight"))
        put(f"blk.{l}.ffn_norm.weight", tensor(p + "post_attention_layernorm.weight"))
        put(f"blk.{l}.ffn_gate_inp.weight", tensor(p + "mlp.gate.weight"))
        # Experts stacked: [n_expert, rows, cols] (ggml's {cols, rows, n_expert}).
        for hf, name in (("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"),
                         ("down_proj", "ffn_down_exps")):
            stacked = np.stack([tensor(p + f"mlp.experts.{e}.{hf}.weight")
                                for e in range(n_experts)])
            put(f"blk.{l}.{name}.weight", stacked, experts_type)
        print(f"layer {l + 1}/{layers}", flush=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
