#!/usr/bin/python3
"""End-to-end tests of `coli trace` and `coli route-stats` on the generated fixture checkpoints.

Usage: test_routing_cli.py --coli PATH --fixtures DIR --work DIR [unittest args]

Shapes come from each fixture's config.json, read here: top_k = num_experts_per_tok, the expert
count, the layer count. The trace's token ids are checked against `coli generate`'s greedy text
(the same model and prompt), and route-stats' shares against counts taken from `coli trace` of the
same text.
"""

import argparse
import json
import os
import subprocess
import sys
import unittest

ARGS = None
FAMILIES = ("olmoe", "qwen2moe", "qwen3moe", "mixtral", "granitemoe", "deepseekv2", "deepseekv3")


def fixture(name):
    return os.path.join(ARGS.fixtures, name)


def config(name):
    with open(os.path.join(fixture(name), "config.json")) as f:
        return json.load(f)


def n_experts(cfg):
    for key in ("num_local_experts", "num_experts", "n_routed_experts"):
        if key in cfg:
            return cfg[key]
    raise KeyError("no expert count in config.json")


def coli(*args, timeout=120):
    return subprocess.run([ARGS.coli, *args], capture_output=True, timeout=timeout)


def work(name):
    os.makedirs(ARGS.work, exist_ok=True)
    return os.path.join(ARGS.work, name)


def read_trace(text):
    lines = [json.loads(l) for l in text.splitlines() if l.strip()]
    return lines[0], lines[1:]


class TraceTest(unittest.TestCase):
    def test_one_record_per_token_with_top_k_per_moe_layer(self):
        for name in FAMILIES:
            with self.subTest(family=name):
                cfg = config(name)
                out = work(f"trace-{name}.jsonl")
                r = coli("trace", fixture(name), "-p", "The quick brown fox", "-n", "5",
                         "-o", out, "-t", "1")
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                self.assertEqual(r.stdout, b"")  # the trace went to the file
                with open(out) as f:
                    header, records = read_trace(f.read())
                self.assertEqual(header["format"], "coli-routing-trace")
                self.assertEqual(header["top_k"], cfg["num_experts_per_tok"])
                self.assertEqual(header["n_experts"], n_experts(cfg))
                self.assertEqual(header["n_layers"], cfg["num_hidden_layers"])
                moe = header["moe_layers"]
                self.assertGreater(len(moe), 0)
                self.assertTrue(all(0 <= l < cfg["num_hidden_layers"] for l in moe))
                prompt = header["prompt_tokens"]
                self.assertGreater(prompt, 0)
                # Every prompt token, then each generated one (5 unless EOS came first).
                generated = [rec for rec in records if rec["generated"]]
                self.assertEqual(len(records), prompt + len(generated))
                self.assertGreaterEqual(len(generated), 1)
                self.assertLessEqual(len(generated), 5)
                self.assertEqual([rec["pos"] for rec in records], list(range(len(records))))
                for rec in records:
                    self.assertEqual(len(rec["experts"]), len(moe))
                    self.assertEqual(len(rec["weights"]), len(moe))
                    for ids, ws in zip(rec["experts"], rec["weights"]):
                        self.assertEqual(len(ids), header["top_k"])
                        self.assertEqual(len(ws), header["top_k"])
                        self.assertEqual(len(set(ids)), len(ids))
                        self.assertTrue(all(0 <= e < header["n_experts"] for e in ids))
                        # DeepSeek multiplies every weight by routed_scaling_factor; V3 selects
                        # by the bias-corrected scores, so its weights need not be in order.
                        scale = cfg.get("routed_scaling_factor", 1.0)
                        self.assertTrue(all(0 < w <= scale * (1 + 1e-6) for w in ws))
                        if name != "deepseekv3":
                            self.assertEqual(ws, sorted(ws, reverse=True))
                        if cfg.get("norm_topk_prob") or name == "granitemoe" or \
                                name == "mixtral":  # Mixtral always renormalises over the top-k
                            self.assertAlmostEqual(sum(ws), scale, places=5)

    def test_generated_tokens_match_greedy_generate(self):
        # Byte-level BPE families: each token's piece is its exact bytes, so the pieces concatenate
        # to `generate`'s text (up to the first piece that is half a UTF-8 character).
        compared = 0
        for name in ("qwen3moe", "qwen2moe", "olmoe"):
            with self.subTest(family=name):
                r = coli("trace", fixture(name), "-p", "Hello world", "-n", "6", "-t", "1")
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                header, records = read_trace(r.stdout.decode())
                generated = [rec for rec in records if rec["generated"]]
                pieces = "".join(rec["piece"] for rec in generated).split("\ufffd")[0]
                g = coli("generate", fixture(name), "-p", "Hello world", "-n",
                         str(len(generated)), "--temp", "0", "--repeat-penalty", "1",
                         "--ignore-eos", "-t", "1")
                self.assertEqual(g.returncode, 0, g.stderr.decode())
                self.assertTrue(g.stdout.decode("utf-8", "replace").startswith(pieces))
                compared += len(pieces)
        self.assertGreater(compared, 0, "every continuation began with half a character")

    def test_errors(self):
        r = coli("trace", fixture("mixtral"))
        self.assertEqual(r.returncode, 2)  # -p is required
        r = coli("trace", work("no-such-model"), "-p", "x")
        self.assertEqual(r.returncode, 3)
        r = coli("trace", fixture("mixtral"), "-p", "x", "-o", work("no/such/dir/t.jsonl"))
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"no/such/dir/t.jsonl", r.stderr)


DOMAIN_A = "In the beginning God created the heaven and the earth. " * 6
DOMAIN_B = "def main(argv):\n    return sum(int(x) for x in argv[1:])\n" * 6


class RouteStatsTest(unittest.TestCase):
    def setUp(self):
        self.a, self.b = work("domain-a.txt"), work("domain-b.txt")
        with open(self.a, "w") as f:
            f.write(DOMAIN_A)
        with open(self.b, "w") as f:
            f.write(DOMAIN_B)

    def run_stats(self, name, *extra):
        out = work(f"route-stats-{name}.json")
        r = coli("route-stats", fixture(name), "--domain", f"prose={self.a}", "--domain",
                 f"code={self.b}", "--json", out, "-t", "1", *extra)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        with open(out) as f:
            return r, json.load(f)

    def test_shares_sum_to_one_per_layer_per_domain(self):
        for name in FAMILIES:
            with self.subTest(family=name):
                cfg = config(name)
                r, j = self.run_stats(name, "--window", "16")
                self.assertIn(b"summary:", r.stdout)
                self.assertEqual(j["top_k"], cfg["num_experts_per_tok"])
                self.assertEqual([d["name"] for d in j["domains"]], ["prose", "code"])
                for d in j["domains"]:
                    self.assertGreater(d["tokens"], 16)
                    self.assertEqual(d["windows"], -(-d["tokens"] // 16))
                self.assertGreater(len(j["layers"]), 0)
                for layer in j["layers"]:
                    self.assertEqual(len(layer["balanced"]), n_experts(cfg))
                    self.assertAlmostEqual(sum(layer["balanced"]), 1.0, places=9)
                    for dom, shares in layer["shares"].items():
                        self.assertEqual(len(shares), n_experts(cfg))
                        self.assertAlmostEqual(sum(shares), 1.0, places=9, msg=dom)
                        self.assertTrue(all(0 <= s <= 1 for s in shares))
                    for e, bal in enumerate(layer["balanced"]):
                        mean = (layer["shares"]["prose"][e] + layer["shares"]["code"][e]) / 2
                        self.assertAlmostEqual(bal, mean, places=12)
                    # Two domains: a share is at most 2x the mean, so nobody passes 3x.
                    self.assertEqual(layer["specialists"], [])

    def test_shares_equal_counts_from_trace(self):
        # qwen3moe's tokenizer adds no BOS, so `coli trace -p TEXT` runs the same ids as one
        # route-stats window over TEXT: the shares must be the trace's counts / (tokens * top_k).
        name = "qwen3moe"
        r, j = self.run_stats(name, "--window", "4096")
        t = coli("trace", fixture(name), "-p", DOMAIN_A, "-t", "1")
        self.assertEqual(t.returncode, 0, t.stderr.decode())
        header, records = read_trace(t.stdout.decode())
        prose = j["domains"][0]
        self.assertEqual(prose["windows"], 1)
        self.assertEqual(prose["tokens"], header["prompt_tokens"])
        k, n = header["top_k"], header["prompt_tokens"]
        for i, layer in enumerate(j["layers"]):
            self.assertEqual(layer["layer"], header["moe_layers"][i])
            counts = [0] * header["n_experts"]
            for rec in records:
                for e in rec["experts"][i]:
                    counts[e] += 1
            expected = [c / (n * k) for c in counts]
            for got, want in zip(layer["shares"]["prose"], expected):
                self.assertAlmostEqual(got, want, places=12)

    def test_windows_and_max_tokens(self):
        r, j = self.run_stats("mixtral", "--max-tokens", "20", "--window", "7")
        k = config("mixtral")["num_experts_per_tok"]
        for d in j["domains"]:
            self.assertEqual(d["tokens"], 20)
            self.assertEqual(d["windows"], 3)  # 7 + 7 + 6
        for layer in j["layers"]:
            for shares in layer["shares"].values():
                for s in shares:  # whole slots out of 20 * top_k
                    self.assertAlmostEqual(s * 20 * k, round(s * 20 * k), places=6)

    def test_errors(self):
        r = coli("route-stats", fixture("mixtral"))
        self.assertEqual(r.returncode, 2)  # --domain is required
        r = coli("route-stats", fixture("mixtral"), "--domain", "nofile")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"NAME=FILE", r.stderr)
        r = coli("route-stats", fixture("mixtral"), "--domain", f"x={work('missing.txt')}")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"missing.txt", r.stderr)
        r = coli("route-stats", fixture("mixtral"), "--domain", f"x={self.a}", "--domain",
                 f"x={self.b}")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"twice", r.stderr)
        empty = work("empty.txt")
        open(empty, "w").close()
        r = coli("route-stats", fixture("mixtral"), "--domain", f"x={empty}")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"no tokens", r.stderr)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--fixtures", required=True)
    p.add_argument("--work", required=True)
    ARGS, rest = p.parse_known_args()
    for name in FAMILIES:
        if not os.path.exists(os.path.join(fixture(name), "config.json")):
            print(f"fixture {name} missing: run via ctest (fixtures_generate)", file=sys.stderr)
            return 1
    prog = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
