#!/usr/bin/python3
"""End-to-end tests of `coli atlas` (the topic probe) on the generated fixture checkpoints, with a
small topic set (tests/cli/data/atlas-topics.json, below issue 12's minimum: the test-only
--test-min-prompts/--test-min-tokens lower it).

Usage: test_atlas_cli.py --coli PATH --fixtures DIR --work DIR [unittest args]

What is checked: the table names every topic; --json is the Atlas's format (one entry per MoE
layer's expert with shares, dominant topic, specialist flag and a position in [-1, 1]); the
usage database holds the run (counts that add up to tokens x top_k per topic and MoE layer, one
position per expert) and nothing else (no heat, no pins); small, malformed and missing topic
files are refused with exit 2 and the file named; a model folder without weights is exit 3.
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import unittest

ARGS = None
HERE = os.path.dirname(os.path.abspath(__file__))
TOPICS = os.path.join(HERE, "data", "atlas-topics.json")
SMALL = ("--test-min-prompts", "0", "--test-min-tokens", "0")


def fixture(name):
    return os.path.join(ARGS.fixtures, name)


def config(name):
    with open(os.path.join(fixture(name), "config.json")) as f:
        return json.load(f)


def moe_layers(cfg):
    n = cfg["num_hidden_layers"]
    dense = set(cfg.get("mlp_only_layers") or [])
    step = cfg.get("decoder_sparse_step") or 1
    return [l for l in range(n) if l not in dense and (l + 1) % step == 0]


def n_experts(cfg):
    return cfg.get("num_local_experts", cfg.get("num_experts"))


def coli(*args, timeout=300):
    return subprocess.run([ARGS.coli, *args], capture_output=True, timeout=timeout)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def work(name):
    os.makedirs(ARGS.work, exist_ok=True)
    path = os.path.join(ARGS.work, name)
    if os.path.exists(path):
        os.remove(path)
    return path


class AtlasTest(unittest.TestCase):
    def probe(self, name, db, out):
        return coli("atlas", fixture(name), "--topics", TOPICS, "--usage-db", db, "--json", out,
                    "-t", "1", *SMALL)

    def test_table_json_and_database_on_every_family(self):
        with open(TOPICS) as f:
            topics = json.load(f)["topics"]
        for name in ("mixtral", "qwen2moe", "qwen3moe", "olmoe", "granitemoe"):
            with self.subTest(family=name):
                cfg = config(name)
                db, out = work(f"atlas-{name}.db"), work(f"atlas-{name}.json")
                r = self.probe(name, db, out)
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                text = r.stdout.decode()
                for t in topics:
                    self.assertIn(t["label"], text)
                self.assertIn("5-NN", text)
                self.assertIn("stored as probe 1 in " + db, text)

                j = read_json(out)
                self.assertEqual(j["format"], "colibri-atlas")
                self.assertEqual(j["version"], 1)
                self.assertEqual(j["topics"], [t["label"] for t in topics])
                self.assertEqual(j["layers"], cfg["num_hidden_layers"])
                self.assertEqual(j["experts_per_layer"], n_experts(cfg))
                self.assertEqual(j["moe_layers"], moe_layers(cfg))
                self.assertEqual(j["top_k"], cfg["num_experts_per_tok"])
                E, T, K = n_experts(cfg), len(topics), cfg["num_experts_per_tok"]
                experts = j["experts"]
                self.assertEqual(len(experts), len(moe_layers(cfg)) * E)
                self.assertEqual(sorted((x["layer"], x["expert"]) for x in experts),
                                 [(l, e) for l in moe_layers(cfg) for e in range(E)])
                for layer in moe_layers(cfg):
                    for t in range(T):
                        s = sum(x["shares"][t] for x in experts if x["layer"] == layer)
                        self.assertAlmostEqual(s, 1.0, places=9)
                for x in experts:
                    self.assertEqual(len(x["position"]), 3)
                    for c in x["position"]:
                        self.assertLessEqual(abs(c), 1.0 + 1e-12)
                    if x["specialist"]:
                        self.assertIn(x["dominant_topic"], range(T))
                    else:
                        self.assertIsNone(x["dominant_topic"])
                specialists = sum(x["specialist"] for x in experts)
                self.assertEqual(j["figures"]["specialists"], specialists)
                self.assertEqual(sum(t["specialists"] for t in j["topic_details"]), specialists)
                self.assertGreaterEqual(j["figures"]["loo_agreement"], 0.0)
                self.assertLessEqual(j["figures"]["loo_agreement"], 1.0)

                con = sqlite3.connect(db)
                probes = con.execute("SELECT id, topic_set, n_layers, n_experts, top_k "
                                     "FROM atlas_probes").fetchall()
                self.assertEqual(probes, [(1, "cli-test", cfg["num_hidden_layers"], E, K)])
                tokens = dict(con.execute("SELECT topic, tokens FROM atlas_topics"))
                self.assertEqual([d["tokens"] for d in j["topic_details"]],
                                 [tokens[t] for t in range(T)])
                for layer in moe_layers(cfg):
                    for t in range(T):
                        (slots,) = con.execute(
                            "SELECT coalesce(sum(slots), 0) FROM atlas_counts WHERE layer = ? "
                            "AND topic = ?", (layer, t)).fetchone()
                        self.assertEqual(slots, tokens[t] * K)
                (n,) = con.execute("SELECT count(*) FROM atlas_positions").fetchone()
                self.assertEqual(n, len(experts))
                (pairs,) = con.execute("SELECT count(*) FROM atlas_coactivation").fetchone()
                self.assertGreater(pairs, 0)
                # The probe learns nothing: no heat, no pins.
                for table in ("expert_usage", "pins"):
                    (rows,) = con.execute(f"SELECT count(*) FROM {table}").fetchone()
                    self.assertEqual(rows, 0, table)
                con.close()

    def test_deterministic_and_a_second_run_is_the_newest(self):
        db = work("atlas-twice.db")
        a, b = work("atlas-a.json"), work("atlas-b.json")
        self.assertEqual(self.probe("mixtral", db, a).returncode, 0)
        r = self.probe("mixtral", db, b)
        self.assertEqual(r.returncode, 0)
        self.assertIn("stored as probe 2", r.stdout.decode())
        ja, jb = read_json(a), read_json(b)
        self.assertEqual(ja["experts"], jb["experts"])
        self.assertEqual(ja["figures"], jb["figures"])

    def test_small_topics_are_refused_without_the_test_override(self):
        db = work("atlas-small.db")
        r = coli("atlas", fixture("mixtral"), "--topics", TOPICS, "--usage-db", db, "-t", "1")
        self.assertEqual(r.returncode, 2, r.stderr.decode())
        err = r.stderr.decode()
        self.assertIn('topic "code" has 6 prompts', err)
        self.assertIn("at least 20 prompts and 2000 tokens", err)
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("SELECT count(*) FROM atlas_probes").fetchone(), (0,))
        con.close()

    def test_bad_topic_files_are_named(self):
        bad = work("bad-topics.json")
        with open(bad, "w") as f:
            f.write('{"format": "colibri-topics", "version": 1, "name": "x", "topics": [\n')
        r = coli("atlas", fixture("mixtral"), "--topics", bad, "--usage-db", work("b.db"), *SMALL)
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad + ": not valid JSON", r.stderr.decode())
        with open(bad, "w") as f:
            json.dump({"format": "colibri-topics", "version": 1, "name": "x",
                       "topics": [{"id": "a", "label": "A", "prompts": []}]}, f)
        r = coli("atlas", fixture("mixtral"), "--topics", bad, "--usage-db", work("b.db"), *SMALL)
        self.assertEqual(r.returncode, 2)
        self.assertIn('topic "a" (.topics[0]) has no prompts', r.stderr.decode())
        with open(bad, "wb") as f:
            f.write(b'{"format": "colibri-topics", "version": 1, "name": "\xff"}')
        r = coli("atlas", fixture("mixtral"), "--topics", bad, "--usage-db", work("b.db"), *SMALL)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not UTF-8", r.stderr.decode())
        missing = os.path.join(ARGS.work, "no-such-topics.json")
        r = coli("atlas", fixture("mixtral"), "--topics", missing, "--usage-db", work("b.db"))
        self.assertEqual(r.returncode, 2)
        self.assertIn(missing, r.stderr.decode())

    def test_model_without_weights_is_a_model_error(self):
        empty = os.path.join(ARGS.work, "empty-model")
        os.makedirs(empty, exist_ok=True)
        r = coli("atlas", empty, "--topics", TOPICS, "--usage-db", work("e.db"), *SMALL)
        self.assertEqual(r.returncode, 3, r.stderr.decode())
        self.assertIn(empty, r.stderr.decode())

    def test_other_models_get_the_general_set_by_default(self):
        # The fixture is not the shipped model: general.json (12 topics, issue 12's sizes).
        out = work("atlas-general.json")
        r = coli("atlas", fixture("mixtral"), "--usage-db", work("g.db"), "--json", out, "-t", "1")
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertIn("general.json", r.stdout.decode())
        j = read_json(out)
        self.assertEqual(j["topic_set"]["name"], "general")
        self.assertGreaterEqual(len(j["topics"]), 10)

    def test_help_lists_the_options_but_not_the_test_ones(self):
        r = coli("atlas", "--help")
        self.assertEqual(r.returncode, 0)
        text = r.stdout.decode()
        for flag in ("--topics", "--usage-db", "--json"):
            self.assertIn(flag, text)
        self.assertNotIn("--test-min", text)
        self.assertIn("atlas", coli("--help").stdout.decode())


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--fixtures", required=True)
    p.add_argument("--work", required=True)
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
