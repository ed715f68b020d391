#!/usr/bin/python3
"""`coli usage path | reset [MODEL_DIR] | pin | unpin | pins | reset-exclusions` on a usage database (storage/, docs/storage.md): the
default location follows XDG_DATA_HOME; reset forgets one model's heat and pins (found by the
identity of its weights, computed here independently with hashlib) or every model's; a damaged
database is refused with its name and left unchanged."""
import argparse
import glob
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import unittest

ARGS = None


def coli(*args, env=None):
    return subprocess.run([ARGS.coli, *args], capture_output=True, text=True, timeout=120,
                          env=env)


def identity(model_dir):
    """docs/storage.md: SHA-256 over "colibri-model-identity 1\\n" and, per *.safetensors shard
    sorted by name, "<len>:<name> <bytes> <sha256>\\n"."""
    h = hashlib.sha256(b"colibri-model-identity 1\n")
    for path in sorted(glob.glob(os.path.join(model_dir, "*.safetensors"))):
        name = os.path.basename(path)
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        h.update(f"{len(name)}:{name} {os.path.getsize(path)} {digest}\n".encode())
    return h.hexdigest()


class Usage(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.join(ARGS.work, self.id().split(".")[-1])
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.db = os.path.join(self.dir, "usage.db")

    def rows(self, model):
        with sqlite3.connect(self.db) as c:
            return (c.execute("SELECT COUNT(*) FROM expert_usage WHERE model=?", (model,)).fetchone()[0],
                    c.execute("SELECT COUNT(*) FROM pins WHERE model=?", (model,)).fetchone()[0])

    def test_path_follows_xdg_data_home(self):
        env = dict(os.environ, XDG_DATA_HOME=os.path.join(self.dir, "xdg"))
        r = coli("usage", "path", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), os.path.join(self.dir, "xdg", "colibri", "colibri.db"))

    def test_reset_one_model_then_all(self):
        r = coli("usage", "reset", "--db", self.db)  # creates the database, nothing to delete
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 rows deleted", r.stdout)
        mixtral = os.path.join(ARGS.fixtures, "mixtral")
        with sqlite3.connect(self.db) as c:
            c.execute("PRAGMA foreign_keys=ON")
            for mid, ident in ((1, identity(mixtral)), (2, "0" * 64)):
                c.execute("INSERT INTO models(id, identity, path, created, last_used) "
                          "VALUES (?, ?, ?, 0, 0)", (mid, ident, "/x"))
                for layer in range(2):
                    for expert in range(3):
                        c.execute("INSERT INTO expert_usage(model, layer, expert, heat, last_seen)"
                                  " VALUES (?, ?, ?, 1.5, 10)", (mid, layer, expert))
                c.execute("INSERT INTO pins(model, layer, expert, tier) VALUES (?, 0, 0, 'ram')",
                          (mid,))
        self.assertEqual(self.rows(1), (6, 1))
        r = coli("usage", "reset", mixtral, "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("7 rows deleted", r.stdout)
        self.assertEqual(self.rows(1), (0, 0))
        self.assertEqual(self.rows(2), (6, 1), "another model's usage must be kept")
        r = coli("usage", "reset", os.path.join(ARGS.fixtures, "olmoe"), "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no usage recorded", r.stdout)
        r = coli("usage", "reset", "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.rows(2), (0, 0))

    def test_user_pins_and_exclusions(self):
        qwen = os.path.join(ARGS.fixtures, "qwen3moe")
        r = coli("usage", "pin", qwen, "1", "3", "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pinned layer 1 expert 3", r.stdout)
        r = coli("usage", "pin", qwen, "2", "0", "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Not a routed expert: a usage error naming the model's shape, nothing written.
        r = coli("usage", "pin", qwen, "9", "0", "--db", self.db)
        self.assertEqual(r.returncode, 2)
        self.assertIn("layer 9 has no routed experts", r.stderr)
        r = coli("usage", "pin", qwen, "1", "16", "--db", self.db)
        self.assertEqual(r.returncode, 2)
        self.assertIn("expert 16 out of range", r.stderr)
        # Unpinning a user pin drops it; any other expert is excluded from learned pins.
        r = coli("usage", "unpin", qwen, "2", "0", "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("unpinned layer 2 expert 0", r.stdout)
        r = coli("usage", "unpin", qwen, "3", "5", "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("excluded from learned pins", r.stdout)
        with sqlite3.connect(self.db) as c:
            model = c.execute("SELECT id FROM models WHERE identity=?", (identity(qwen),)).fetchone()[0]
            self.assertEqual(c.execute("SELECT layer, expert FROM user_pins WHERE model=?",
                                       (model,)).fetchall(), [(1, 3)])
            self.assertEqual(c.execute("SELECT layer, expert FROM pin_exclusions WHERE model=?",
                                       (model,)).fetchall(), [(3, 5)])
        r = coli("usage", "pins", qwen, "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("user pins, oldest first, layer/expert (1): 1/3", r.stdout)
        self.assertIn("excluded from learned pins (1): 3/5", r.stdout)
        r = coli("usage", "reset-exclusions", qwen, "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 exclusion of", r.stdout)
        r = coli("usage", "pins", qwen, "--db", self.db)
        self.assertIn("excluded from learned pins (0):", r.stdout)
        self.assertIn("(1): 1/3", r.stdout)
        # A model without usage: said so, nothing created.
        r = coli("usage", "pins", os.path.join(ARGS.fixtures, "mixtral"), "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no usage recorded", r.stdout)

    def test_damaged_database_is_refused_and_kept(self):
        with open(self.db, "wb") as f:
            f.write(b"this is not a database" * 100)
        before = open(self.db, "rb").read()
        r = coli("usage", "reset", "--db", self.db)
        self.assertEqual(r.returncode, 3)
        self.assertIn(self.db, r.stderr)
        self.assertEqual(open(self.db, "rb").read(), before)

    def test_missing_model_folder(self):
        r = coli("usage", "reset", os.path.join(self.dir, "nope"), "--db", self.db)
        self.assertEqual(r.returncode, 3)
        self.assertIn("nope", r.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--work", required=True)
    a, rest = ap.parse_known_args()
    ARGS = a
    unittest.main(argv=[sys.argv[0]] + rest)
