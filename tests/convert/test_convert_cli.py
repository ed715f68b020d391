#!/usr/bin/python3
"""`coli convert` end to end: exit codes, messages, resume after a failed write, `coli info`,
and `coli generate` on the container it writes.

Usage: test_convert_cli.py --coli PATH --fixtures DIR --work DIR [unittest args]

The container is checked here independently of the engine: the safetensors headers and the
manifest are read with Python's json and struct.
"""

import argparse
import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import unittest

ARGS = None


def fixture(name):
    return os.path.join(ARGS.fixtures, name)


def coli(*args, limit_bytes=None, timeout=300):
    def limit():
        # A file-size limit makes write(2) fail with EFBIG (SIGXFSZ ignored): a write error
        # partway through, as a full disk would give.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return subprocess.run([ARGS.coli, *args], capture_output=True, timeout=timeout,
                          preexec_fn=limit if limit_bytes else None)


def work(name):
    p = os.path.join(ARGS.work, name)
    shutil.rmtree(p, ignore_errors=True)
    return p


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return n, json.loads(f.read(n))


class Convert(unittest.TestCase):
    def test_converts_and_info_names_the_format(self):
        dst = work("q3")
        r = coli("convert", fixture("qwen3moe"), dst)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        self.assertRegex(out, r"ratio 0\.\d+")
        with open(os.path.join(dst, "colibri.json")) as f:
            m = json.load(f)
        self.assertEqual(m["format"], "colibri")
        self.assertEqual(m["quantisation"]["experts"], "int4-g64")
        for e in m["experts"]:
            self.assertEqual(e["offset"] % 4096, 0)
            n, h = header(os.path.join(dst, e["file"]))
            self.assertEqual((8 + n) % 4096, 0)
            b, end = h[e["tensor"]]["data_offsets"]
            self.assertEqual(8 + n + b, e["offset"])
            self.assertEqual(end - b, e["length"])
            self.assertEqual(h[e["tensor"]]["dtype"], "U8")
        # What the reference safetensors implementation (Rust, `Metadata::validate`) demands:
        # tensors back to back from offset 0 to the end of the file, sizes = shape x dtype.
        sizes = {"U8": 1, "BF16": 2, "F32": 4}
        for shard in m["shards"]:
            path = os.path.join(dst, shard["file"])
            with open(path, "rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
                raw = f.read(n)
            text = raw.rstrip(b" ")
            self.assertTrue(text.startswith(b"{") and text.endswith(b"}"))
            h = json.loads(text)
            spans = sorted(tuple(t["data_offsets"]) + (t["dtype"], tuple(t["shape"]))
                           for k, t in h.items() if k != "__metadata__")
            end = 0
            for b, e, dtype, shape in spans:
                self.assertEqual(b, end)
                count = 1
                for x in shape:
                    count *= x
                self.assertEqual(e - b, count * sizes[dtype])
                end = e
            self.assertEqual(8 + n + end, os.path.getsize(path))
            self.assertEqual(shard["bytes"], os.path.getsize(path))
        info = coli("info", dst)
        self.assertEqual(info.returncode, 0, info.stderr)
        self.assertIn("colibri container (int4-g64 experts, int8-g64 dense", info.stdout.decode())
        j = json.loads(coli("info", "--json", dst).stdout)
        self.assertEqual(j["format"], "colibri")
        hf = coli("info", fixture("qwen3moe"))
        self.assertIn("format:           Hugging Face checkpoint", hf.stdout.decode())

    def test_options_reach_the_manifest(self):
        dst = work("opts")
        r = coli("convert", fixture("olmoe"), dst, "--experts", "int8", "--dense", "bf16",
                 "--embed", "bf16")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(dst, "colibri.json")) as f:
            q = json.load(f)["quantisation"]
        self.assertEqual((q["experts"], q["dense"], q["embeddings"], q["lm_head"]),
                         ("int8-g64", "bf16", "bf16", "bf16"))

    def test_refusals_and_their_exit_codes(self):
        dst = work("refuse")
        self.assertEqual(coli("convert", fixture("olmoe"), dst).returncode, 0)
        r = coli("convert", fixture("olmoe"), dst)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"already holds a colibri container (use --force", r.stderr)
        other = work("refuse-other")
        os.makedirs(other)
        with open(os.path.join(other, "notes.txt"), "w") as f:
            f.write("mine")
        r = coli("convert", fixture("olmoe"), other)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"not empty", r.stderr)
        self.assertEqual(coli("convert", fixture("olmoe"), dst, "--force").returncode, 0)
        r = coli("convert", fixture("olmoe"), os.path.join(fixture("olmoe"), "out"))
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"inside the source folder", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(fixture("olmoe"), "out")))
        r = coli("convert", fixture("olmoe"), work("bad-flag"), "--experts", "int3")
        self.assertEqual(r.returncode, 2)
        r = coli("convert", os.path.join(ARGS.work, "no-such-model"), work("x"))
        self.assertEqual(r.returncode, 3)
        self.assertIn(b"not a directory", r.stderr)

    def test_unconvertible_dtype_exits_3(self):
        src = work("i64-src")
        shutil.copytree(fixture("olmoe"), src)
        path = os.path.join(src, "model.safetensors")
        n, h = header(path)
        with open(path, "rb") as f:
            data = f.read()[8 + n:]
        # Re-lay the data with one weight's bytes doubled and typed I64 (same element count).
        victim = "model.layers.0.self_attn.q_proj.weight"
        out, chunks, off = {}, [], 0
        for name, t in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0]
                              if kv[0] != "__metadata__" else -1):
            if name == "__metadata__":
                out[name] = t
                continue
            b, e = t["data_offsets"]
            blob = data[b:e]
            if name == victim:
                t = dict(t, dtype="I64")
                blob = bytes(len(blob) * 4)  # BF16 -> I64: 4x the bytes
            out[name] = dict(t, data_offsets=[off, off + len(blob)])
            chunks.append(blob)
            off += len(blob)
        text = json.dumps(out).encode()
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
        r = coli("convert", src, work("i64-dst"))
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(victim.encode(), r.stderr)
        self.assertIn(b"I64", r.stderr)

    def test_failed_write_exits_5_and_a_rerun_resumes(self):
        dst = work("resume")
        ref = work("resume-ref")
        self.assertEqual(coli("convert", fixture("qwen3moe"), ref, "--shard-size", "1")
                         .returncode, 0)
        shards = sorted(f for f in os.listdir(ref) if f.endswith(".safetensors"))
        self.assertGreaterEqual(len(shards), 2)
        # RLIMIT_FSIZE limits each file, and the first shard is the largest: the first shard's
        # write fails. (Keeping finished shards is tested in C++ through the fault layer.)
        r = coli("convert", fixture("qwen3moe"), dst, "--shard-size", "1", limit_bytes=100000)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn(b"cannot convert", r.stderr)
        self.assertIn(b".partial", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(dst, "colibri.json")))
        r = coli("convert", fixture("qwen3moe"), dst, "--shard-size", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 kept from an interrupted run", r.stdout.decode())
        for f in sorted(os.listdir(ref)):
            with open(os.path.join(ref, f), "rb") as a, open(os.path.join(dst, f), "rb") as b:
                self.assertEqual(a.read(), b.read(), f)
        self.assertEqual(sorted(os.listdir(ref)), sorted(os.listdir(dst)))


# Run in a child process so that this test process stays small: a child's ru_maxrss includes
# the memory it inherited at fork, before exec'ing coli.
BIG_VOCAB = r"""
import json, struct, sys
import numpy as np
path, vocab = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    h = json.loads(f.read(n))
    data = f.read()
rng = np.random.default_rng(1)
out, chunks, off = {}, [], 0
for name, t in sorted((kv for kv in h.items() if kv[0] != "__metadata__"),
                      key=lambda kv: kv[1]["data_offsets"][0]):
    b, e = t["data_offsets"]
    blob = data[b:e]
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        d = t["shape"][1]
        blob = (rng.standard_normal((vocab, d), dtype=np.float32) * 0.02).tobytes()
        t = dict(t, dtype="F32", shape=[vocab, d])
    out[name] = dict(t, data_offsets=[off, off + len(blob)])
    chunks.append(blob)
    off += len(blob)
text = json.dumps(out).encode()
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text)
    for c in chunks:
        f.write(c)
"""


class Streaming(unittest.TestCase):
    def test_peak_memory_stays_below_one_tensor(self):
        """An OLMoE fixture whose embeddings and LM head are 64 MiB f32 each (vocab 262144): the
        conversion's peak RSS must stay below one of those tensors (it holds <= 16 MiB of f32 and
        the encoded bytes of one piece at a time), let alone a shard (about 128 MiB here)."""
        if ARGS.sanitized:
            self.skipTest("peak RSS is not measurable under AddressSanitizer (shadow memory and "
                          "the allocator's quarantine); measured in the Release build")
        src, dst = work("big-vocab"), work("big-vocab-out")
        self.addCleanup(shutil.rmtree, src, True)  # 128 MiB: not left in the build folder
        self.addCleanup(shutil.rmtree, dst, True)
        shutil.copytree(fixture("olmoe"), src)
        with open(os.path.join(src, "config.json")) as f:
            cfg = json.load(f)
        vocab = 262144
        cfg["vocab_size"] = vocab
        with open(os.path.join(src, "config.json"), "w") as f:
            json.dump(cfg, f)
        subprocess.run([sys.executable, "-c", BIG_VOCAB, os.path.join(src, "model.safetensors"),
                        str(vocab)], check=True)
        tensor_bytes = vocab * cfg["hidden_size"] * 4
        # A small intermediate process whose only child is coli reports that child's peak.
        measure = ("import resource, subprocess, sys; "
                   "r = subprocess.run(sys.argv[1:], capture_output=True); "
                   "sys.stderr.buffer.write(r.stderr); "
                   "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
                   "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
        r = subprocess.run([sys.executable, "-c", measure, ARGS.coli, "convert", src, dst],
                           capture_output=True, timeout=300)
        rc, peak_kib, own_kib = map(int, r.stdout.split())
        self.assertEqual(rc, 0, r.stderr)
        peak = peak_kib * 1024
        print(f"[figures] convert peak RSS {peak / 2**20:.1f} MiB (of which up to "
              f"{own_kib / 1024:.1f} MiB inherited at fork) for two {tensor_bytes / 2**20:.0f} MiB "
              f"tensors, source {os.path.getsize(os.path.join(src, 'model.safetensors')) / 2**20:.0f}"
              f" MiB", file=sys.stderr)
        self.assertLess(peak, tensor_bytes)


class Generate(unittest.TestCase):
    """The engine runs a container: the same text as the original checkpoint quantised in
    memory the same way (--quantise), deterministic, and --quantise refused on a container."""

    QUANTISE = {"default": "experts=int4-g64,dense=int8,embed=int8,lm_head=int8",
                "int8": "experts=int8,dense=int8,embed=int8,lm_head=int8"}

    def generate(self, model, *extra):
        r = coli("generate", model, "-p", "The cat sat", "-n", "16", "--temp", "0",
                 "--ignore-eos", *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr.decode(), r"generated tokens:\s+16\b")
        return r.stdout

    def test_container_generates_what_the_same_quantisation_does(self):
        # mixtral: a 3-shard source; granitemoe: stacked experts.
        for family in ("mixtral", "granitemoe"):
            for variant, flags in (("default", []), ("int8", ["--experts", "int8"])):
                with self.subTest(family=family, variant=variant):
                    dst = work(f"gen-{family}-{variant}")
                    r = coli("convert", fixture(family), dst, *flags)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    text = self.generate(dst)
                    self.assertTrue(text)
                    self.assertEqual(text, self.generate(dst, "-t", "2"))
                    self.assertEqual(text, self.generate(fixture(family), "--quantise",
                                                         self.QUANTISE[variant]))

    def test_quantise_is_refused_on_a_container_and_checked(self):
        dst = work("gen-refuse")
        self.assertEqual(coli("convert", fixture("olmoe"), dst).returncode, 0)
        r = coli("generate", dst, "-p", "Hi", "-n", "2", "--quantise", "dense=int8")
        self.assertEqual(r.returncode, 3)
        self.assertIn(b"colibri container", r.stderr)
        for bad in ("dense", "dense=int3", "attention=int8", "dense=int8,dense=int4-g64"):
            r = coli("generate", fixture("olmoe"), "-p", "Hi", "-n", "2", "--quantise", bad)
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn(b"--quantise", r.stderr)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--fixtures", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--sanitized", action="store_true",
                   help="coli is an AddressSanitizer build (its RSS includes shadow memory)")
    ARGS, rest = p.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
