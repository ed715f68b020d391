#!/usr/bin/python3
"""tools/bigmodel/make_synthetic.py at a tiny scale, read by `coli` as a user would.

Usage: test_bigmodel_cli.py --coli PATH --script PATH --work DIR [unittest args]

The script writes an OLMoE-shaped random checkpoint (docs/bigmodel.md); here with --scale-down 8
--layers 2 --experts 16 and small shards. Expected shapes and parameter counts are computed here
from the OLMoE layout (q/k/v/o, whole-projection q/k norms, router, per-expert gate/up/down,
untied head), not taken from the script; the tensors are read back with a safetensors parser
written here. Then `coli info` must report that shape and count, `coli generate -n 2` must run,
and so must both on its `coli convert` container.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import unittest

import numpy as np

ARGS = None
SCALE, LAYERS, EXPERTS, TOP_K = 8, 2, 16, 8
D, FFN, HEADS, HEAD_DIM = 2048 // SCALE, 1024 // SCALE, 16 // SCALE, 128
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER = os.path.join(SOURCE_DIR, "resources", "models", "colibri-moe-tiny", "tokenizer.json")


def run(*cmd, timeout=300):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)


def make(out, *extra):
    shutil.rmtree(out, ignore_errors=True)
    return run(ARGS.python, ARGS.script, "--out", out, "--scale-down", str(SCALE), "--layers",
               str(LAYERS), "--experts", str(EXPERTS), "--top-k", str(TOP_K), *extra)


def tokenizer_size():
    with open(TOKENIZER, encoding="utf-8") as f:
        tok = json.load(f)
    return len(tok["model"]["vocab"]) + len(tok["added_tokens"])


def expected_params(V):
    per_layer = (4 * D * D          # q, k, v, o (16 KV heads = MHA, so all [D, D])
                 + 2 * D            # q_norm, k_norm over the whole projection
                 + 2 * D            # input / post-attention RMSNorm
                 + EXPERTS * D      # router
                 + EXPERTS * 3 * D * FFN)
    total = 2 * V * D + LAYERS * per_layer + D  # embeddings, head, final norm
    active = total - LAYERS * (EXPERTS - TOP_K) * 3 * D * FFN
    return total, active


def read_tensors(folder):
    """{name: float32 array} from every *.safetensors in folder (BF16 only)."""
    out = {}
    for fn in sorted(os.listdir(folder)):
        if not fn.endswith(".safetensors"):
            continue
        with open(os.path.join(folder, fn), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
            data = f.read()
        header.pop("__metadata__", None)
        for name, e in header.items():
            assert e["dtype"] == "BF16", (name, e["dtype"])
            a, b = e["data_offsets"]
            u16 = np.frombuffer(data[a:b], dtype="<u2").astype(np.uint32) << 16
            out[name] = u16.view(np.float32).reshape(e["shape"])
    return out


class BigModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(ARGS.work, exist_ok=True)
        cls.dir = os.path.join(ARGS.work, "synth")
        r = make(cls.dir, "--shard-size", "3")
        assert r.returncode == 0, r.stderr
        cls.make_stdout = r.stdout

    def test_checkpoint_is_sharded_with_index_and_tokenizer(self):
        shards = sorted(f for f in os.listdir(self.dir) if f.endswith(".safetensors"))
        self.assertGreater(len(shards), 2, "3 MB shards of a ~11.6 MB model")
        with open(os.path.join(self.dir, "model.safetensors.index.json")) as f:
            index = json.load(f)
        self.assertEqual(sorted(set(index["weight_map"].values())), shards)
        sizes = sum(os.path.getsize(os.path.join(self.dir, s)) for s in shards)
        self.assertLess(index["metadata"]["total_size"], sizes)  # + the headers
        for s in shards[:-1]:
            self.assertLessEqual(os.path.getsize(os.path.join(self.dir, s)), 3e6 + 65536)
        with open(os.path.join(self.dir, "config.json")) as f:
            cfg = json.load(f)
        self.assertEqual(cfg["architectures"], ["OlmoeForCausalLM"])
        self.assertEqual(cfg["vocab_size"], tokenizer_size())
        with open(TOKENIZER, "rb") as a, open(os.path.join(self.dir, "tokenizer.json"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_weights_follow_the_hf_init_and_do_not_depend_on_sharding(self):
        w = read_tensors(self.dir)
        total, _ = expected_params(tokenizer_size())
        self.assertEqual(sum(a.size for a in w.values()), total)
        self.check_init(w, embed_std=1.0, out_std=0.02)
        self.assertFalse(np.array_equal(w["model.layers.0.mlp.experts.0.gate_proj.weight"],
                                        w["model.layers.0.mlp.experts.1.gate_proj.weight"]))
        one = os.path.join(ARGS.work, "synth-one-shard")
        r = make(one)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(f for f in os.listdir(one) if f.endswith(".safetensors")),
                         ["model-00001-of-00001.safetensors"])
        w1 = read_tensors(one)
        self.assertEqual(sorted(w1), sorted(w))
        for name in w:
            self.assertTrue(np.array_equal(w[name], w1[name]), name)
        other = os.path.join(ARGS.work, "synth-seed1")
        r = make(other, "--seed", "1", "--embed-std", "0.02", "--out-std", "0.0035")
        self.assertEqual(r.returncode, 0, r.stderr)
        w2 = read_tensors(other)
        self.check_init(w2, embed_std=0.02, out_std=0.0035)
        self.assertFalse(np.array_equal(w2["lm_head.weight"], w["lm_head.weight"]))

    def check_init(self, w, embed_std, out_std):
        """Norm weights exactly 1; matrices zero-mean with the std asked for (docs/bigmodel.md)."""
        for name, a in w.items():
            if a.ndim == 1:
                self.assertTrue(np.all(a == 1.0), name)
                continue
            std = 0.02
            if name == "model.embed_tokens.weight":
                std = embed_std
            elif name.endswith(("o_proj.weight", "down_proj.weight")):
                std = out_std
            self.assertAlmostEqual(float(a.std()), std, delta=0.1 * std, msg=name)
            self.assertLess(abs(float(a.mean())), 0.1 * std, name)

    def test_refuses_a_non_empty_folder(self):
        r = run(ARGS.python, ARGS.script, "--out", self.dir, "--layers", "1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not empty", r.stderr)

    def check_info(self, folder, fmt):
        """The shape `coli info --json` reports. A container's info is read from colibri.json and
        config.json and has no parameter count, family or head count (cli/cmd_info.cpp)."""
        r = run(ARGS.coli, "info", folder, "--json", "-t", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(r.stdout)
        V = tokenizer_size()
        self.assertEqual(info["format"], fmt)
        self.assertEqual(info["architecture"], "OlmoeForCausalLM")
        self.assertEqual((info["layers"], info["moe_layers"]), (LAYERS, LAYERS))
        self.assertEqual((info["experts_per_layer"], info["top_k"]), (EXPERTS, TOP_K))
        self.assertEqual(info["hidden_size"], D)
        self.assertEqual(info["vocab_size"], V)
        self.assertEqual(info["expert_bytes"], LAYERS * EXPERTS * info["bytes_per_expert"])
        if fmt == "huggingface":
            total, active = expected_params(V)
            self.assertEqual(info["family"], "olmoe")
            self.assertEqual((info["heads"], info["kv_heads"], info["head_dim"]),
                             (HEADS, HEADS, HEAD_DIM))
            self.assertEqual(info["total_params"], total)
            self.assertEqual(info["active_params"], active)
        return info

    def check_generate(self, folder):
        r = run(ARGS.coli, "generate", folder, "-p", "The quick brown fox", "-n", "2",
                "--temp", "0", "--ignore-eos", "-t", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("generated tokens: 2", r.stderr)
        return r.stdout

    def test_coli_info_and_generate_on_the_checkpoint_and_its_container(self):
        info = self.check_info(self.dir, "huggingface")
        self.assertEqual(info["bytes_per_expert"], 3 * D * FFN * 2)  # BF16
        self.assertIn("BF16", info["storage"])
        self.check_generate(self.dir)

        int4 = os.path.join(ARGS.work, "synth-int4")
        shutil.rmtree(int4, ignore_errors=True)
        r = run(ARGS.coli, "convert", self.dir, int4, "--experts", "int4-g64")
        self.assertEqual(r.returncode, 0, r.stderr)
        info = self.check_info(int4, "colibri")
        self.assertEqual(info["quantisation"]["experts"], "int4-g64")
        self.assertEqual(info["quantisation"]["dense"], "int8-g64")
        # int4-g64: 36 bytes per 64 values; gate/up [FFN, D], down [D, FFN]; the blob is one
        # 4096-aligned read (docs/container.md).
        parts = 2 * FFN * (D // 64) * 36 + D * (FFN // 64) * 36
        self.assertEqual(info["bytes_per_expert"], (parts + 4095) // 4096 * 4096)
        self.check_generate(int4)  # other weights, so not necessarily the same text


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--script", required=True, help="tools/bigmodel/make_synthetic.py")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--work", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
