#!/usr/bin/python3
"""Extracts the training text of the default model from installed Debian packages.

Writes, for every domain, DATA/text/<domain>.train.txt and DATA/text/<domain>.heldout.txt.
Documents are separated by the record separator "\\x1e" (it never occurs in the cleaned text).
Each document goes to the held-out split when a hash of (seed, domain, document key) falls under
--heldout-frac, so the split does not depend on file order or on the other documents.
Also writes tools/train/manifest.json: per source the Debian package, its version (dpkg-query),
its licence (curated from /usr/share/doc/<pkg>/copyright, whose sha256 is recorded) and bytes.

The text itself is never committed: it stays under DATA (default /work/train-state/data).

Usage: /usr/bin/python3 tools/train/prepare_data.py [--data DIR] [--seed N] [--heldout-frac F]
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SEP = "\x1e"

FORTUNE_DIR = "/usr/share/games/fortunes"
DICTD_DIR = "/usr/share/dictd"
PYDOC_DIR = "/usr/share/doc/python3.11/html/_sources"
STDLIB_DIR = "/usr/lib/python3.11"

# Licence of the TEXT we take (not of the package's software), as read in each copyright file.
LICENCES = {
    "bible-kjv-text": "Public domain (KJV text, copyright expired; package software GPL-2+)",
    "fortunes": "BSD (the package 'falls under the BSD copyright', Regents of the University "
                "of California); the quotations themselves are of mixed origin",
    "fortunes-de": "GPL-2+",
    "fortunes-es": "GPL-2+",
    "dict-gcide": "GPL-2+ (GCIDE; Webster 1913 text is public domain, additions GPL)",
    "dict-jargon": "Public domain (Jargon File text; packaging GPL-2+)",
    "python3.11-doc": "PSF-2.0 (Python documentation)",
    "libpython3.11-stdlib": "PSF-2.0 (some modules carry additional permissive notices)",
}


def pkg_version(pkg):
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                         text=True)
    if out.returncode != 0:
        sys.exit(f"prepare_data: Debian package {pkg} is not installed "
                 f"(apt-get install {pkg}; see tools/train/packages.txt)")
    return out.stdout.strip()


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def clean(text):
    """Removes backspace overstrikes (nroff bold/underline in fortunes) and C0 controls."""
    out = []
    for ch in text:
        if ch == "\b":
            if out:
                out.pop()
            continue
        if ch == "\r":
            continue
        if ord(ch) < 32 and ch not in "\n\t":
            continue
        if ch == "\x7f":
            continue
        out.append(ch)
    s = "".join(out)
    s = re.sub(r"[ \t]+\n", "\n", s)  # trailing blanks carry no information
    return s.strip("\n") + "\n"


def read_text(path):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


# ----------------------------------------------------------------------------- extractors
# Each yields (document key, text).

def kjv_docs(bible=("bible",)):
    """One document per chapter, verse references stripped, one verse per line. `bible`: the
    reader's command line before its options (tools/topics runs an unpacked copy)."""
    out = subprocess.run([*bible, "-f", "Gen1:1-Rev22:21"], capture_output=True, text=True,
                         check=True).stdout
    chapters = {}
    order = []
    for line in out.splitlines():
        m = re.match(r"^(\w+?)(\d+):(\d+) (.*)$", line)
        if not m:
            continue
        key = f"{m.group(1)}{m.group(2)}"
        if key not in chapters:
            chapters[key] = []
            order.append(key)
        chapters[key].append(m.group(4))
    for key in order:
        yield key, "\n".join(chapters[key])


def fortune_files(directory, skip):
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        if name.endswith((".dat", ".u8")) or name in skip:
            continue
        yield name, path


def fortune_docs(directory, skip=()):
    """One document per fortune (the '%' separated entries of each file)."""
    for name, path in fortune_files(directory, skip):
        text = read_text(path)
        for i, entry in enumerate(re.split(r"\n%\n", "\n" + text)):
            entry = entry.strip("\n%")
            if entry.strip():
                yield f"{name}:{i}", entry


B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64num(s):
    n = 0
    for c in s:
        n = n * 64 + B64.index(c)
    return n


def dictd_docs(name):
    """One document per dictionary entry, cut with the dictd .index (base64 offset, length)."""
    with gzip.open(os.path.join(DICTD_DIR, name + ".dict.dz"), "rb") as f:
        data = f.read()
    seen = set()
    spans = []
    with open(os.path.join(DICTD_DIR, name + ".index"), encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0].startswith("00-") or parts[0].startswith("00database"):
                continue
            span = (b64num(parts[1]), b64num(parts[2]))
            if span not in seen:
                seen.add(span)
                spans.append(span)
    spans.sort()
    for off, length in spans:
        yield f"{name}:{off}", data[off:off + length].decode("utf-8", errors="replace")


def pydoc_docs():
    for root, dirs, files in os.walk(PYDOC_DIR):
        dirs.sort()
        for fn in sorted(files):
            if fn.endswith(".rst.txt"):
                path = os.path.join(root, fn)
                yield os.path.relpath(path, PYDOC_DIR), read_text(path)


def pycode_docs():
    """Standard-library sources, without the test suites and third-party directories."""
    for root, dirs, files in os.walk(STDLIB_DIR):
        dirs[:] = sorted(d for d in dirs if d not in (
            "test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__",
            "config-3.11-x86_64-linux-gnu", "lib2to3"))
        for fn in sorted(files):
            if fn.endswith(".py"):
                path = os.path.join(root, fn)
                yield os.path.relpath(path, STDLIB_DIR), read_text(path)


# domain -> list of (package, extractor, where)
DOMAINS = {
    "kjv_en": [("bible-kjv-text", kjv_docs, "bible -f Gen1:1-Rev22:21 (bible-kjv reader)")],
    "fortunes_en": [("fortunes", lambda: fortune_docs(FORTUNE_DIR, skip={"ascii-art"}),
                     FORTUNE_DIR + "/* (without ascii-art)")],
    "fortunes_de": [("fortunes-de", lambda: fortune_docs(FORTUNE_DIR + "/de", skip={"asciiart"}),
                     FORTUNE_DIR + "/de/* (without asciiart)")],
    "fortunes_es": [("fortunes-es", lambda: fortune_docs(FORTUNE_DIR + "/es"),
                     FORTUNE_DIR + "/es/*")],
    "dict_en": [("dict-gcide", lambda: dictd_docs("gcide"), DICTD_DIR + "/gcide.dict.dz"),
                ("dict-jargon", lambda: dictd_docs("jargon"), DICTD_DIR + "/jargon.dict.dz")],
    "pydoc": [("python3.11-doc", pydoc_docs, PYDOC_DIR + "/**/*.rst.txt")],
    "pycode": [("libpython3.11-stdlib", pycode_docs,
                STDLIB_DIR + "/**/*.py (without test/, tests/, idlelib tests, lib2to3)")],
}


def held_out(seed, domain, key, frac):
    h = hashlib.sha256(f"{seed}\0{domain}\0{key}".encode()).digest()
    return int.from_bytes(h[:8], "little") / 2.0**64 < frac


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/work/train-state/data")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--heldout-frac", type=float, default=0.02)
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    a = ap.parse_args()
    tdir = os.path.join(a.data, "text")
    os.makedirs(tdir, exist_ok=True)
    manifest = {"generator": "tools/train/prepare_data.py", "seed": a.seed,
                "heldout_frac": a.heldout_frac,
                "split_rule": "document to held-out iff sha256(seed, domain, key)[:8] / 2^64 < "
                              "heldout_frac",
                "document_separator": "U+001E", "domains": {}}
    for domain, sources in DOMAINS.items():
        dom = {"sources": [], "bytes_train": 0, "bytes_heldout": 0, "docs_train": 0,
               "docs_heldout": 0}
        with open(os.path.join(tdir, domain + ".train.txt"), "w", encoding="utf-8") as ft, \
                open(os.path.join(tdir, domain + ".heldout.txt"), "w", encoding="utf-8") as fh:
            for pkg, extract, where in sources:
                src = {"package": pkg, "version": pkg_version(pkg), "licence": LICENCES[pkg],
                       "copyright_file": f"/usr/share/doc/{pkg}/copyright",
                       "copyright_sha256": sha256_file(f"/usr/share/doc/{pkg}/copyright"),
                       "extracted_from": where, "bytes_train": 0, "bytes_heldout": 0,
                       "docs_train": 0, "docs_heldout": 0}
                for key, text in extract():
                    text = clean(text)
                    if not text.strip():
                        continue
                    n = len(text.encode("utf-8"))
                    split = "heldout" if held_out(a.seed, domain, key, a.heldout_frac) else "train"
                    (fh if split == "heldout" else ft).write(text + SEP)
                    src["bytes_" + split] += n
                    src["docs_" + split] += 1
                for k in ("bytes_train", "bytes_heldout", "docs_train", "docs_heldout"):
                    dom[k] += src[k]
                dom["sources"].append(src)
                print(f"{domain:12s} {pkg:22s} {src['version']:22s} train {src['bytes_train']:>10,d} B"
                      f" ({src['docs_train']} docs)  held-out {src['bytes_heldout']:>9,d} B"
                      f" ({src['docs_heldout']} docs)", flush=True)
        manifest["domains"][domain] = dom
    with open(a.manifest, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", tdir, "and", a.manifest)


if __name__ == "__main__":
    main()
