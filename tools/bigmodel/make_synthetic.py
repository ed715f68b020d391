#!/usr/bin/python3
"""Writes a full-size synthetic OLMoE checkpoint (random weights) for the bigger-than-budget demo.

Usage: make_synthetic.py --out DIR [--layers N] [--experts N] [--top-k K] [--scale-down F]
                         [--embed-std S] [--out-std S] [--shard-size MB] [--seed S] [--force]

The default is the OLMoE-1B-7B shape (OlmoeForCausalLM: hidden 2048, expert FFN 1024, 16 layers,
64 experts, top-8, 16 heads of 128, q/k RMSNorm over the whole projection, untied head) with the
default model's tokenizer (resources/models/colibri-moe-tiny, 4096 ids), so `coli generate` and
`coli chat` run on it; vocab_size is that tokenizer's size, not OLMoE's 50304. About 6.7 B
parameters, 13.5 GB in BF16, written as a sharded Hugging Face checkpoint
(model-0000i-of-0000N.safetensors + model.safetensors.index.json). The text it generates is
meaningless: the weights are random. See docs/bigmodel.md.

Init: transformers' init for a fresh OlmoeForCausalLM (every matrix N(0, 0.02^2), every norm
weight exactly 1), except the token embedding, N(0, 1) (--embed-std). With d = 2048 a projection
maps RMS r to ~0.9 r, so activations stay O(1) through 16 layers. With the embedding at 0.02 as
well, the first layer's attention output (an average over positions, nearly the same for every
token) swamps the token's own embedding in the residual stream, and from layer ~4 on nearly every
token is routed to the same ~12 experts (measured: docs/bigmodel.md) -- a cache would hit 96% and
the streaming demo would stream nothing. At 1.0 the token stays visible: in every layer 44-64
experts are used over a 372-token text, consecutive tokens share ~2.8 of their 8 experts (1.0 for
independent picks). --out-std 0.0035 (0.02 / sqrt(2 x layers), GPT-2's scaled init, for o_proj
and down_proj) makes routing almost uniform: the worst case for a cache.

Streaming: the shard layout (names, shapes, offsets) is planned from the shapes before any data
exists; then one tensor at a time is drawn, converted to BF16 and written, so peak memory is one
tensor (the largest is the 4096 x 2048 embedding) plus the Python/torch runtime. Each tensor has
its own generator seeded from (--seed, tensor name): the bytes do not depend on the sharding.

--scale-down F divides hidden_size, intermediate_size and the head count by F (head_dim stays
128); with --layers/--experts it makes the tiny copy the test (tests/cli/test_bigmodel_cli.py)
uses. Needs only Debian's python3-torch (run with /usr/bin/python3).
"""

import argparse
import hashlib
import json
import os
import shutil
import struct
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "fixtures"))
import gen_fixtures  # noqa: E402  (tensor_plan, tensor_bytes, write_json, the OLMoE config keys)

TOKENIZER_DIR = os.path.join(SOURCE_DIR, "resources", "models", "colibri-moe-tiny")
COPIED = ("tokenizer.json", "tokenizer_config.json", "generation_config.json")
STD = 0.02  # transformers' initializer_range for OLMoE
EMBED_STD = 1.0  # keeps routing token-dependent through 16 layers (see the docstring)
BF16_BYTES = 2

# allenai/OLMoE-1B-7B-0924's config.json, except vocab and token ids (the tokenizer is ours).
OLMOE_1B_7B = {
    "clip_qkv": None,
    "hidden_size": 2048,
    "intermediate_size": 1024,
    "max_position_embeddings": 4096,
    "num_attention_heads": 16,
    "num_experts": 64,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 16,
    "num_key_value_heads": 16,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "torch_dtype": "bfloat16",
}


def die(msg):
    print(f"make_synthetic: error: {msg}", file=sys.stderr)
    sys.exit(1)


def vocab_size():
    """Ids the tokenizer can produce: the BPE vocabulary plus its added (special) tokens."""
    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    ids = set(tok["model"]["vocab"].values()) | {a["id"] for a in tok["added_tokens"]}
    return max(ids) + 1


def special_id(content):
    with open(os.path.join(TOKENIZER_DIR, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    return next(a["id"] for a in tok["added_tokens"] if a["content"] == content)


def make_config(args):
    F = args.scale_down
    cfg = dict(gen_fixtures.SPECS["olmoe"]["config"])  # every OLMoE key the fixtures use
    cfg.update(OLMOE_1B_7B)
    for key in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads"):
        if cfg[key] % F != 0:
            die(f"--scale-down {F} does not divide {key} ({cfg[key]})")
        cfg[key] //= F
    cfg["num_hidden_layers"] = args.layers
    cfg["num_experts"] = args.experts
    cfg["num_experts_per_tok"] = min(args.top_k, args.experts)
    cfg["vocab_size"] = vocab_size()
    cfg["bos_token_id"] = special_id("<|endoftext|>")
    cfg["pad_token_id"] = special_id("<|endoftext|>")
    cfg["eos_token_id"] = special_id("<|im_end|>")
    cfg["_comment"] = ("Synthetic, random weights (tools/bigmodel/make_synthetic.py, seed "
                       f"{args.seed}, scale-down {F}, embed-std {args.embed_std}, out-std "
                       f"{args.out_std}): OLMoE-1B-7B shape with the tokenizer of "
                       "resources/models/colibri-moe-tiny, so vocab_size is that tokenizer's size "
                       "(not OLMoE's 50304). For the expert-streaming demo; the text is noise.")
    return dict(sorted(cfg.items()))


def tensor_seed(seed, name):
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "little") >> 1


def std_of(name, kind, args):
    if kind == "embed":
        return args.embed_std
    if name.endswith(("o_proj.weight", "down_proj.weight")):
        return args.out_std
    return STD


def draw(name, shape, kind, args):
    if kind == "norm":
        return torch.ones(*shape, dtype=torch.bfloat16)
    g = torch.Generator().manual_seed(tensor_seed(args.seed, name))
    x = torch.randn(*shape, generator=g, dtype=torch.float32)
    return x.mul_(std_of(name, kind, args)).to(torch.bfloat16)


def plan_shards(plan, shard_bytes):
    """Greedy in plan order (embeddings, layer 0 ... layer L-1, final norm, head): a shard is
    closed when the next tensor would pass shard_bytes. Returns [[(name, shape, kind), ...]]."""
    shards, cur, size = [], [], 0
    for entry in plan:
        n = BF16_BYTES
        for s in entry[1]:
            n *= s
        if cur and size + n > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append(entry)
        size += n
    shards.append(cur)
    return shards


def header_bytes(entries):
    """safetensors header for entries in data order: u64 LE length + JSON padded to 8 bytes."""
    header = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, shape, _ in entries:
        n = BF16_BYTES
        for s in shape:
            n *= s
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)
    return struct.pack("<Q", len(hjson)) + hjson, off


def write_shard(path, entries, args):
    head, total = header_bytes(entries)
    with open(path + ".partial", "wb") as f:
        f.write(head)
        for name, shape, kind in entries:
            f.write(gen_fixtures.tensor_bytes(draw(name, shape, kind, args)))
        f.flush()
        os.fsync(f.fileno())
    os.rename(path + ".partial", path)
    return total


def readme(cfg, n_params, total, n_shards, args):
    return f"""# Synthetic OLMoE-shaped checkpoint (random weights)

Written by `tools/bigmodel/make_synthetic.py` (seed {args.seed}, scale-down {args.scale_down});
see docs/bigmodel.md in the Colibri repository. **The weights are random**: the model's text is
noise. It exists to exercise expert streaming at full size.

- architecture: OlmoeForCausalLM, {cfg['num_hidden_layers']} layers, hidden {cfg['hidden_size']},
  {cfg['num_experts']} experts of FFN {cfg['intermediate_size']}, top-{cfg['num_experts_per_tok']},
  {cfg['num_attention_heads']} heads, q/k norm, untied head
- parameters: {n_params:,}; {total:,} bytes of BF16 in {n_shards} shard(s)
- tokenizer: the default model's (resources/models/colibri-moe-tiny: tokenizer.json,
  tokenizer_config.json, generation_config.json copied), so vocab_size = {cfg['vocab_size']}
  (not OLMoE's 50304) and bos/eos/pad are that tokenizer's ids
- init: embedding N(0, {args.embed_std}^2), o_proj and down_proj N(0, {args.out_std}^2), the
  other matrices N(0, {STD}^2), norm weights 1
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (must be empty or absent)")
    ap.add_argument("--layers", type=int, default=16, help="num_hidden_layers (default 16)")
    ap.add_argument("--experts", type=int, default=64, help="num_experts (default 64)")
    ap.add_argument("--top-k", type=int, default=8, help="num_experts_per_tok (default 8, "
                    "at most --experts)")
    ap.add_argument("--scale-down", type=int, default=1, metavar="F",
                    help="divide hidden size, expert FFN and head count by F (default 1)")
    ap.add_argument("--shard-size", type=float, default=2000.0, metavar="MB",
                    help="largest shard in MB (10^6 bytes; default 2000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--embed-std", type=float, default=EMBED_STD,
                    help=f"std of the token embedding (default {EMBED_STD}; HF init: {STD})")
    ap.add_argument("--out-std", type=float, default=STD,
                    help=f"std of o_proj and down_proj (default {STD})")
    ap.add_argument("--force", action="store_true", help="replace a non-empty --out")
    args = ap.parse_args(argv)
    if args.layers < 1 or args.experts < 1 or args.top_k < 1 or args.scale_down < 1:
        die("--layers, --experts, --top-k and --scale-down must be >= 1")
    if not (args.embed_std > 0 and args.out_std > 0):
        die("--embed-std and --out-std must be > 0")
    if args.shard_size <= 0:
        die("--shard-size must be > 0")
    if os.path.isdir(args.out) and os.listdir(args.out):
        if not args.force:
            die(f"{args.out} is not empty (use --force to replace it)")
        shutil.rmtree(args.out)
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    t0 = time.time()

    cfg = make_config(args)
    plan = gen_fixtures.tensor_plan("olmoe", cfg)
    n_params = 0
    for _, shape, _ in plan:
        p = 1
        for s in shape:
            p *= s
        n_params += p
    for fn in COPIED:
        shutil.copyfile(os.path.join(TOKENIZER_DIR, fn), os.path.join(args.out, fn))
    gen_fixtures.write_json(os.path.join(args.out, "config.json"), cfg)

    shards = plan_shards(plan, int(args.shard_size * 1e6))
    weight_map, total = {}, 0
    for i, entries in enumerate(shards):
        fn = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        total += write_shard(os.path.join(args.out, fn), entries, args)
        for name, _, _ in entries:
            weight_map[name] = fn
        print(f"{fn}: {len(entries)} tensors, {time.time() - t0:.0f} s", flush=True)
    # The index last: a folder without it is unfinished.
    gen_fixtures.write_json(os.path.join(args.out, "model.safetensors.index.json"),
                            {"metadata": {"total_size": total},
                             "weight_map": dict(sorted(weight_map.items()))})
    with open(os.path.join(args.out, "README.md"), "w", encoding="utf-8") as f:
        f.write(readme(cfg, n_params, total, len(shards), args))
    print(f"{args.out}: {n_params:,} parameters, {total:,} bytes BF16 in {len(shards)} shards, "
          f"{time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
