"""Shared pieces of the `coli search` / `coli download` CLI tests (tests/hub/test_*_cli.py):
fixture repos, the local Hub (hub_server.py) as a context manager, and running coli with
HF_ENDPOINT pointing at it and XDG_DATA_HOME in the work folder (so the database and the default
models folder are the test's own)."""

import hashlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
TINY = os.path.join(SOURCE, "resources", "models", "colibri-moe-tiny")


def config_text(arch=None):
    with open(os.path.join(TINY, "config.json")) as f:
        cfg = json.load(f)
    if arch:
        cfg["architectures"] = [arch]
    return json.dumps(cfg, indent=2)


def make_repo(folder, weights, arch=None, meta=None, seed=1):
    """A repo folder: config.json (the tiny model's, or another architecture), a tokenizer and
    random weight files {name: bytes}. Returns {path: sha256} of every file."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    rng = random.Random(seed)
    files = {"config.json": config_text(arch).encode(), "tokenizer.json": b'{"model": {}}'}
    for name, size in weights.items():
        files[name] = rng.randbytes(size)
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    if meta is not None:
        with open(os.path.join(folder, "_hub.json"), "w") as f:
            json.dump(meta, f)
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Hub:
    """hub_server.py on 127.0.0.1 for the life of a `with` block."""

    def __init__(self, repos, extra=(), log=None):
        args = ["/usr/bin/python3", os.path.join(HERE, "hub_server.py")]
        for repo_id, folder in repos.items():
            args += ["--repo", "%s=%s" % (repo_id, folder)]
        if log:
            args += ["--log", log]
        args += list(extra)
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE)
        line = self.proc.stdout.readline().decode().split()
        assert len(line) == 4 and line[0] == "HUB", "hub_server.py did not start: %r" % line
        self.endpoint, self.cdn = line[1], line[3]

    def stats(self):
        with urllib.request.urlopen(self.endpoint + "/_colibri/stats") as r:
            return json.load(r)

    def settled_bytes_sent(self):
        """total_bytes_sent once the server has stopped writing to connections a client left (a
        write already under way may still land in the socket buffer and be counted)."""
        last = self.stats()["total_bytes_sent"]
        while True:
            time.sleep(0.3)
            now = self.stats()["total_bytes_sent"]
            if now == last:
                return now
            last = now

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.stdout.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def coli_env(work, endpoint, token=None):
    env = dict(os.environ)
    env["HF_ENDPOINT"] = endpoint
    env["XDG_DATA_HOME"] = os.path.join(work, "xdg")
    env["HF_HOME"] = os.path.join(work, "hf-home")  # no token file unless a test writes one
    env.pop("HF_TOKEN", None)
    if token:
        env["HF_TOKEN"] = token
    return env


def run_coli(coli, args, env, limit_bytes=None, timeout=120):
    def limit():
        # A file-size limit makes write(2) fail with EFBIG (SIGXFSZ ignored): a write error
        # partway through, as a full disk gives.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return subprocess.run([coli, *args], capture_output=True, env=env, timeout=timeout,
                          preexec_fn=limit if limit_bytes else None)


def wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def part_bytes(folder):
    total = 0
    if os.path.isdir(folder):
        for n in os.listdir(folder):
            if n.endswith(".part"):
                total += os.path.getsize(os.path.join(folder, n))
    return total
