#!/usr/bin/python3
"""End-to-end tests of the `coli` command-line tool on the generated fixture checkpoints.

Usage: test_cli.py --coli PATH --fixtures DIR --work DIR --version X.Y.Z [unittest args]

Facts `coli info` prints are checked against config.json and the safetensors headers, read here
independently of the engine. Generation is checked for the split of stdout (text only) and stderr
(statistics), determinism, stdin prompts, exit codes, and Ctrl+C (SIGINT) behaviour.
"""

import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import unittest

ARGS = None
FAMILIES = ("olmoe", "qwen2moe", "qwen3moe", "mixtral", "granitemoe", "deepseekv2", "deepseekv3")
LARGEST = "qwen3moe"
DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2}


def fixture(name):
    return os.path.join(ARGS.fixtures, name)


def coli(*args, stdin=None, timeout=120):
    return subprocess.run([ARGS.coli, *args], input=stdin, capture_output=True, timeout=timeout)


def safetensors_tensors(model_dir):
    """{name: (dtype, shape, nbytes)} over every shard, from the headers (8-byte length + JSON)."""
    files = sorted(f for f in os.listdir(model_dir) if f.endswith(".safetensors"))
    out = {}
    for fn in files:
        with open(os.path.join(model_dir, fn), "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        for name, t in header.items():
            if name == "__metadata__":
                continue
            b, e = t["data_offsets"]
            out[name] = (t["dtype"], t["shape"], e - b)
    return out


def is_expert_tensor(name):
    # Routed experts: one tensor per expert (".experts.N.") or stacked (Granite's input/output
    # linear). Shared experts (Qwen2-MoE "shared_expert") are dense.
    return ".experts." in name or "block_sparse_moe.input_linear" in name or \
        "block_sparse_moe.output_linear" in name


class Reader(threading.Thread):
    """Collects a pipe's bytes in the background so the child never blocks on a full pipe."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe, self.data, self.lock = pipe, b"", threading.Lock()
        self.start()

    def run(self):
        while True:
            chunk = os.read(self.pipe.fileno(), 4096)
            if not chunk:
                self.pipe.close()
                return
            with self.lock:
                self.data += chunk

    def text(self):
        with self.lock:
            return self.data.decode("utf-8", "replace")

    def wait_for(self, predicate, timeout, what):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if predicate(self.text()):
                return
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}; got {self.text()[-2000:]!r}")


class Info(unittest.TestCase):
    def test_info_matches_config_and_headers(self):
        for name in FAMILIES:
            with self.subTest(name):
                with open(os.path.join(fixture(name), "config.json")) as f:
                    cfg = json.load(f)
                r = coli("info", fixture(name))
                self.assertEqual(r.returncode, 0, r.stderr)
                out = r.stdout.decode()
                self.assertEqual(r.stderr, b"")
                line = dict(re.findall(r"^([a-z ]+):\s+(.*)$", out, re.M))
                self.assertEqual(line["family"], cfg["model_type"])
                self.assertEqual(line["architecture"], cfg["architectures"][0])
                self.assertTrue(line["layers"].startswith(f"{cfg['num_hidden_layers']} "))
                n_exp = cfg.get("num_experts", cfg.get("num_local_experts", cfg.get("n_routed_experts")))
                self.assertTrue(line["experts"].startswith(
                    f"{n_exp} per layer, top-{cfg['num_experts_per_tok']}"), line["experts"])
                self.assertEqual(line["context length"],
                                 f"{cfg['max_position_embeddings']} tokens")
                self.assertEqual(line["vocab"], str(cfg["vocab_size"]))

                j = json.loads(coli("info", "--json", fixture(name)).stdout)
                # DeepSeek-V3's multi-token-prediction layer (past num_hidden_layers) is not
                # part of the model that runs.
                layers = cfg["num_hidden_layers"]
                tensors = {n: v for n, v in safetensors_tensors(fixture(name)).items()
                           if not re.match(r"model\.layers\.(\d+)\.", n) or
                           int(re.match(r"model\.layers\.(\d+)\.", n).group(1)) < layers}
                total = sum(_prod(s) for _, s, _ in tensors.values())
                expert_bytes = sum(b for n, (_, _, b) in tensors.items() if is_expert_tensor(n))
                all_bytes = sum(b for _, _, b in tensors.values())
                moe_layers = j["moe_layers"]
                per_expert = expert_bytes // (moe_layers * n_exp)
                dtype = next(iter(tensors.values()))[0]
                per_expert_params = per_expert // DTYPE_BYTES[dtype]
                active = total - (n_exp - cfg["num_experts_per_tok"]) * per_expert_params * \
                    moe_layers
                self.assertEqual(j["total_params"], total)
                self.assertEqual(j["expert_bytes"], expert_bytes)
                self.assertEqual(j["dense_bytes"], all_bytes - expert_bytes)
                self.assertEqual(j["bytes_per_expert"], per_expert)
                self.assertEqual(j["active_params"], active)
                self.assertEqual(j["experts_per_layer"], n_exp)
                self.assertEqual(j["layers"], cfg["num_hidden_layers"])
                self.assertIn(dtype, j["storage"])
                self.assertIn(f"{total:,}", line["parameters"])
                self.assertIn(f"{per_expert:,}", line["bytes per expert"])

    def test_info_kv_cache_from_config(self):
        """KV cache bytes per token (f32, all layers) as config.json alone gives them, on every
        fixture and on containers (one of them converted from the FP8 checkpoint)."""
        models = [(name, fixture(name)) for name in FAMILIES]
        for name in ("deepseekv3fp8", "qwen3moe"):
            box = os.path.join(ARGS.work, f"kv-container-{name}")
            shutil.rmtree(box, ignore_errors=True)
            r = coli("convert", fixture(name), box, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            models.append((f"{name} (container)", box))
        for name, path in models:
            with self.subTest(name):
                with open(os.path.join(path, "config.json")) as f:
                    cfg = json.load(f)
                want, full = kv_cache_bytes(cfg)
                r = coli("info", path)
                self.assertEqual(r.returncode, 0, r.stderr)
                m = re.search(r"^KV cache: +([0-9,]+) bytes per token \(f32, (\d+) layers; (.*)\)$",
                              r.stdout.decode(), re.M)
                self.assertIsNotNone(m, r.stdout.decode())
                self.assertEqual(m.group(1), f"{want:,}")
                self.assertEqual(int(m.group(2)), cfg["num_hidden_layers"])
                j = json.loads(coli("info", "--json", path).stdout)
                self.assertEqual(j["kv_bytes_per_token"], want)
                if full is None:
                    self.assertNotIn("kv_full_bytes_per_token", j)
                    self.assertNotIn("MLA", m.group(3))
                else:
                    self.assertEqual(j["kv_full_bytes_per_token"], full)
                    self.assertEqual(
                        m.group(3),
                        f"MLA latent {cfg['kv_lora_rank']} + rope key {cfg['qk_rope_head_dim']} "
                        f"per layer, {full / want:.1f}x smaller than full K/V")

    def test_info_missing_dir_exits_3(self):
        missing = os.path.join(ARGS.work, "no-such-model")
        r = coli("info", missing)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(missing, r.stderr.decode())


def kv_cache_bytes(cfg):
    """(bytes per token, full K/V bytes per token or None) of the f32 KV cache over every layer,
    from config.json: MLA (DeepSeek) caches kv_lora_rank + qk_rope_head_dim floats per layer, where
    full K/V would be num_attention_heads x (qk_nope + qk_rope + v_head_dim); the other families
    cache K and V of num_key_value_heads x head_dim (head_dim: the key, else hidden / heads)."""
    layers = cfg["num_hidden_layers"]
    if cfg.get("kv_lora_rank"):
        per_layer = cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]
        full = cfg["num_attention_heads"] * (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"] +
                                             cfg["v_head_dim"])
        return layers * per_layer * 4, layers * full * 4
    heads = cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    kv_heads = cfg.get("num_key_value_heads") or heads
    return layers * kv_heads * 2 * head_dim * 4, None


def _prod(shape):
    p = 1
    for s in shape:
        p *= s
    return p


class Generate(unittest.TestCase):
    def test_text_on_stdout_stats_on_stderr(self):
        r = coli("generate", fixture(LARGEST), "-p", "Hello", "-n", "8", "--temp", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode()
        self.assertNotEqual(out, "")
        for key in ("prompt tokens:", "generated tokens:", "ttft:", "prefill:", "decode:",
                    "time:", "stop reason:", "tok/s"):
            self.assertIn(key, err)
            self.assertNotIn(key, out)
        self.assertRegex(err, r"generated tokens:\s+8\b")
        self.assertRegex(err, r"stop reason:\s+(max tokens|eos)")
        # The engine thread's time split: five shares of the wall time (rounded: 100 +- 3).
        m = re.search(r"time:\s+attention (\d+)% \u00b7 expert FFN (\d+)% \u00b7 expert wait (\d+)% "
                      r"\u00b7 sampling (\d+)% \u00b7 other (\d+)% of ([\d.]+) ms", err)
        self.assertIsNotNone(m, err)
        self.assertLessEqual(abs(sum(int(g) for g in m.groups()[:5]) - 100), 3, m.group(0))
        self.assertGreater(float(m.group(6)), 0)
        # Greedy is deterministic.
        r2 = coli("generate", fixture(LARGEST), "-p", "Hello", "-n", "8", "--temp", "0")
        self.assertEqual(r.stdout, r2.stdout)

    def test_every_family_generates(self):
        for name in FAMILIES:
            with self.subTest(name):
                r = coli("generate", fixture(name), "-p", "The cat", "-n", "6", "--seed", "3",
                         "--ignore-eos")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertRegex(r.stderr.decode(), r"generated tokens:\s+6\b")

    def test_same_seed_same_output(self):
        base = ["generate", fixture(LARGEST), "-p", "Once upon", "-n", "24", "--temp", "1.0",
                "--top-k", "0", "--top-p", "1", "--min-p", "0", "--ignore-eos"]
        a = coli(*base, "--seed", "42")
        b = coli(*base, "--seed", "42")
        c = coli(*base, "--seed", "43")
        for r in (a, b, c):
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(a.stdout, b.stdout)
        self.assertNotEqual(a.stdout, c.stdout)
        self.assertIn("seed 42", a.stderr.decode())

    def test_prompt_from_stdin_equals_flag(self):
        base = ["generate", fixture(LARGEST), "-n", "12", "--seed", "9", "--ignore-eos"]
        flag = coli(*base, "-p", "Tell me a story")
        piped = coli(*base, "-p", "-", stdin=b"Tell me a story")
        echoed = coli(*base, "-p", "-", stdin=b"Tell me a story\n")
        for r in (flag, piped, echoed):
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(flag.stdout, piped.stdout)
        self.assertEqual(flag.stdout, echoed.stdout)
        self.assertRegex(piped.stderr.decode(), r"prompt tokens:\s+\d+")

    def test_chat_flag_and_system(self):
        plain = coli("generate", fixture(LARGEST), "-p", "Hi", "-n", "4", "--temp", "0")
        chat = coli("generate", fixture(LARGEST), "-p", "Hi", "-n", "4", "--temp", "0", "--chat")
        system = coli("generate", fixture(LARGEST), "-p", "Hi", "-n", "4", "--temp", "0",
                      "--system", "Be brief.")
        for r in (plain, chat, system):
            self.assertEqual(r.returncode, 0, r.stderr)
        ntok = [int(re.search(r"prompt tokens:\s+(\d+)", r.stderr.decode()).group(1))
                for r in (plain, chat, system)]
        # The template adds role markers; a system message adds more.
        self.assertLess(ntok[0], ntok[1])
        self.assertLess(ntok[1], ntok[2])

    def test_out_of_range_sampling_exits_2_naming_flag(self):
        for flag, value in (("--temp", "-1"), ("--top-p", "1.5"), ("--min-p", "-0.1"),
                            ("--top-k", "-3"), ("--repeat-penalty", "0")):
            with self.subTest(flag):
                r = coli("generate", fixture(LARGEST), "-p", "Hi", flag, value)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(flag, r.stderr.decode())
                self.assertEqual(r.stdout, b"")
        # Usage errors come before model errors.
        r = coli("generate", os.path.join(ARGS.work, "nope"), "-p", "Hi", "--temp", "-1")
        self.assertEqual(r.returncode, 2)

    def test_usage_errors_exit_2(self):
        for args in (["generate", fixture(LARGEST)],                  # no -p
                     ["generate", fixture(LARGEST), "-p", "x", "--bogus"],
                     ["generate", fixture(LARGEST), "-p", "x", "-n", "0"],
                     ["generate", fixture(LARGEST), "-p", "x", "-n", "many"],
                     ["frobnicate"], []):
            with self.subTest(args):
                r = coli(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                err = r.stderr.decode()
                self.assertNotIn("terminate called", err)
                self.assertNotIn("what():", err)

    def test_missing_dir_exits_3_naming_it(self):
        missing = os.path.join(ARGS.work, "does-not-exist")
        r = coli("generate", missing, "-p", "Hi")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(missing, r.stderr.decode())
        self.assertEqual(r.stdout, b"")

    def test_corrupt_config_exits_3(self):
        bad = os.path.join(ARGS.work, "corrupt-config")
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(fixture(LARGEST), bad)
        with open(os.path.join(bad, "config.json"), "w") as f:
            f.write('{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": ')
        for sub in (["generate", bad, "-p", "Hi"], ["info", bad], ["chat", bad]):
            with self.subTest(sub[0]):
                r = coli(*sub, stdin=b"")
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn("config.json", r.stderr.decode())

    def test_corrupt_tokenizer_exits_3(self):
        bad = os.path.join(ARGS.work, "corrupt-tokenizer")
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(fixture(LARGEST), bad)
        with open(os.path.join(bad, "tokenizer.json"), "w") as f:
            f.write("[]")
        r = coli("generate", bad, "-p", "Hi")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("tokenizer.json", r.stderr.decode())

    def test_stop_string_ends_output_before_it(self):
        base = ["generate", fixture(LARGEST), "-p", "Once", "-n", "40", "--seed", "8",
                "--ignore-eos"]
        full = coli(*base)
        self.assertEqual(full.returncode, 0, full.stderr)
        text = full.stdout.decode("utf-8")  # strict: the engine never emits broken UTF-8
        self.assertGreater(len(text), 12)
        stop = text[len(text) // 2:len(text) // 2 + 3]
        r = coli(*base, f"--stop={stop}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode("utf-8"), text[:text.find(stop)])
        self.assertRegex(r.stderr.decode(), r"stop reason:\s+stop string")

    def test_context_limits_exit_4(self):
        small = os.path.join(ARGS.work, "small-context")
        shutil.rmtree(small, ignore_errors=True)
        shutil.copytree(fixture(LARGEST), small)
        cfg_path = os.path.join(small, "config.json")
        with open(cfg_path) as f:
            cfg = json.load(f)
        cfg["max_position_embeddings"] = 16
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        r = coli("generate", small, "-p", "Hi", "-n", "100", "--ignore-eos", "--seed", "1")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertRegex(r.stderr.decode(), r"stop reason:\s+context full")
        self.assertNotEqual(r.stdout, b"")
        r = coli("generate", small, "-p", "word " * 40, "-n", "4")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("context", r.stderr.decode())

    def test_sigint_during_generate_exits_130(self):
        p = subprocess.Popen([ARGS.coli, "generate", fixture(LARGEST), "-p", "Go", "-n", "100000",
                              "--ignore-eos", "--seed", "1"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        out, err = Reader(p.stdout), Reader(p.stderr)
        try:
            out.wait_for(lambda t: len(t) > 0, 60, "generated text")
            p.send_signal(signal.SIGINT)
            rc = p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
        out.join(5)
        err.join(5)
        self.assertEqual(rc, 130, err.text())
        self.assertRegex(err.text(), r"stop reason:\s+cancelled")


class Meta(unittest.TestCase):
    def test_version(self):
        r = coli("--version")
        self.assertEqual(r.returncode, 0)
        self.assertIn(ARGS.version, r.stdout.decode())

    def test_help_everywhere(self):
        for args in (["--help"], ["info", "--help"], ["generate", "--help"], ["chat", "--help"]):
            with self.subTest(args):
                r = coli(*args)
                self.assertEqual(r.returncode, 0, r.stderr)
                text = r.stdout.decode()
                self.assertIn("Exit codes", text)
                self.assertIn("130", text)
        text = coli("generate", "--help").stdout.decode()
        for flag in ("--prompt", "--max-tokens", "--temp", "--top-k", "--top-p", "--min-p",
                     "--repeat-penalty", "--seed", "--threads", "--system", "--chat"):
            self.assertIn(flag, text)


def copy_fixture(name, edit_file=None, edit=None):
    """A fresh copy of the largest fixture under the work dir; edit(dict) changes one JSON file."""
    d = os.path.join(ARGS.work, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(fixture(LARGEST), d)
    if edit_file:
        path = os.path.join(d, edit_file)
        with open(path) as f:
            j = json.load(f)
        edit(j)
        with open(path, "w") as f:
            json.dump(j, f)
    return d


class UserTrial(unittest.TestCase):
    """Problems a new-user trial found: each must give a clear message and the documented code."""

    def test_absurd_layer_count_stops_early_exit_3(self):
        for layers in (100000, 1000):  # past the config cap; under it but not in the checkpoint
            with self.subTest(layers=layers):
                d = copy_fixture(f"layers-{layers}", "config.json",
                                 lambda j: j.update(num_hidden_layers=layers))
                start = time.monotonic()
                r = coli("info", d, timeout=60)
                elapsed = time.monotonic() - start
                err = r.stderr.decode()
                self.assertEqual(r.returncode, 3, err)
                self.assertIn("config.json", err)
                self.assertIn("num_hidden_layers", err)
                self.assertNotIn("internal error", err)
                self.assertLess(len(err), 2000, "no endless list of missing tensors")
                self.assertLess(elapsed, 10, "refused from the config, not after planning")

    def test_bad_generation_config_sampling_is_a_warning(self):
        d = copy_fixture("gen-temp", "generation_config.json",
                         lambda j: j.update(temperature=-5))
        r = coli("generate", d, "-p", "Hi", "-n", "3", "--temp", "0")
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 0, err)
        self.assertRegex(err, r"coli: warning: .*generation_config\.json.*temperature")
        self.assertIn("temp 0.00", err)  # the flag wins
        # Without the flag the built-in default replaces the bad value.
        r = coli("generate", d, "-p", "Hi", "-n", "3", "--seed", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("temp 0.80", r.stderr.decode())
        # The EOS ids stay strict.
        d = copy_fixture("gen-eos", "generation_config.json",
                         lambda j: j.update(eos_token_id="x"))
        r = coli("generate", d, "-p", "Hi", "-n", "3", "--temp", "0")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("eos_token_id", r.stderr.decode())

    def test_usage_errors_follow_the_documented_format(self):
        m = fixture(LARGEST)
        cases = (
            (["generate", m], ["--prompt is required"]),
            (["generate", m, "-p", "x", "-n", "abc"], ["max-tokens", "'abc' is not an integer"]),
            (["generate", m, "-p", "x", "--temp", "warm"], ["--temp", "'warm' is not a number"]),
            (["bogus"], ["unknown command 'bogus'", "generate", "chat", "info"]),
            ([], ["command is required"]),
            (["generate", m, "-p", "x", "--top-p", "2"], ["--top-p must be in (0, 1]"]),
            (["chat", m, "--repeat-penalty", "11"], ["--repeat-penalty must be in (0, 10]"]),
            (["generate", m, "-p", "x", "--seed", "-1"], ["--seed: -1 is out of range"]),
            (["generate", m, "-p", "x", "--bogus"], ["--bogus"]),
        )
        for args, needles in cases:
            with self.subTest(args):
                r = coli(*args, stdin=b"")
                err = r.stderr.decode()
                self.assertEqual(r.returncode, 2, err)
                self.assertTrue(err.startswith("coli: error: "), err)
                for n in needles:
                    self.assertIn(n, err)
                for internal in ("topP", "repeatPenalty", "temperature must"):
                    self.assertNotIn(internal, err)
                self.assertEqual(r.stdout, b"")

    def test_negative_seed_is_refused(self):
        r = coli("generate", fixture(LARGEST), "-p", "x", "-n", "2", "--seed", "-1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertNotIn("seed 18446744073709551615", r.stderr.decode())  # not wrapped
        r = coli("generate", fixture(LARGEST), "-p", "x", "-n", "2", "--seed",
                 "18446744073709551615")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("seed 18446744073709551615", r.stderr.decode())

    def test_empty_system_implies_chat(self):
        base = ["generate", fixture(LARGEST), "-p", "Hi", "-n", "2", "--temp", "0"]
        runs = [coli(*base), coli(*base, "--chat"), coli(*base, "--system", "")]
        for r in runs:
            self.assertEqual(r.returncode, 0, r.stderr)
        ntok = [int(re.search(r"prompt tokens:\s+(\d+)", r.stderr.decode()).group(1))
                for r in runs]
        self.assertLess(ntok[0], ntok[1])   # the template adds role markers
        self.assertLess(ntok[1], ntok[2])   # an (empty) system message adds its own

    def test_piped_chat_prints_its_seed(self):
        r = coli("chat", fixture(LARGEST), "-n", "2", stdin=b"Hello\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        seed = re.search(r"seed (\d+)", r.stderr.decode())
        self.assertIsNotNone(seed, r.stderr)
        # The printed seed reproduces the run.
        again = coli("chat", fixture(LARGEST), "-n", "2", "--seed", seed.group(1),
                     stdin=b"Hello\n")
        self.assertEqual(again.stdout, r.stdout)

    def test_info_on_a_file_says_not_a_directory(self):
        path = os.path.join(fixture(LARGEST), "config.json")
        for sub in (["info", path], ["generate", path, "-p", "x"]):
            with self.subTest(sub[0]):
                r = coli(*sub)
                err = r.stderr.decode()
                self.assertEqual(r.returncode, 3, err)
                self.assertIn("not a directory", err)
                self.assertNotIn("config.json/config.json", err)


class Chat(unittest.TestCase):
    def test_two_lines_two_answers(self):
        r = coli("chat", fixture(LARGEST), "-n", "8", "--seed", "5",
                 stdin=b"Hello there\nHow are you?\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        err = r.stderr.decode()
        turns = re.findall(r"^\[(\d+) prompt tokens \((\d+) reused\), (\d+) tokens.*stop: "
                           r"([a-z ]+)\]$", err, re.M)
        self.assertEqual(len(turns), 2, err)
        self.assertEqual(turns[0][1], "0")
        # Turn 2 reuses the cached conversation.
        self.assertGreater(int(turns[1][1]), 0)
        self.assertGreater(int(turns[1][0]), int(turns[0][0]))
        self.assertNotEqual(r.stdout.strip(), b"")
        self.assertNotIn(b"> ", r.stdout)  # no prompt when stdin is not a terminal

    def test_reset_and_eof(self):
        r = coli("chat", fixture(LARGEST), "-n", "4", "--seed", "5",
                 stdin=b"Hello\n/reset\nHello")  # last line without newline, then EOF
        self.assertEqual(r.returncode, 0, r.stderr)
        err = r.stderr.decode()
        turns = re.findall(r"^\[(\d+) prompt tokens \((\d+) reused\)", err, re.M)
        self.assertEqual(len(turns), 2, err)
        # After /reset the same first message is the same prompt, with nothing reused.
        self.assertEqual(turns[0], turns[1])
        self.assertIn("[new conversation]", err)

    def test_empty_stdin_exits_0(self):
        r = coli("chat", fixture(LARGEST), stdin=b"")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_sigint_cancels_the_answer_not_the_program(self):
        p = subprocess.Popen([ARGS.coli, "chat", fixture(LARGEST), "-n", "100000", "--ignore-eos",
                              "--seed", "1"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        out, err = Reader(p.stdout), Reader(p.stderr)
        try:
            for turn, line in enumerate((b"Write forever\n", b"Again\n")):
                seen = len(out.text())
                p.stdin.write(line)
                p.stdin.flush()
                out.wait_for(lambda t: len(t) > seen + 4, 60, f"answer {turn + 1}")
                p.send_signal(signal.SIGINT)
                err.wait_for(lambda t: t.count("stop: cancelled") == turn + 1, 30,
                             f"answer {turn + 1} cancelled")
                self.assertIsNone(p.poll(), "chat must survive Ctrl+C during an answer")
            p.stdin.close()
            rc = p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
        self.assertEqual(rc, 0, err.text())
        self.assertEqual(err.text().count("stop: cancelled"), 2)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--version", required=True)
    ARGS, rest = ap.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0], "-v", *rest])


if __name__ == "__main__":
    main()
