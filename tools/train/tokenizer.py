#!/usr/bin/python3
"""Byte-level BPE tokenizer of the default model: training, encoding and the data token files.

The format is Hugging Face `tokenizers`' tokenizer.json, in the GPT-2/Qwen byte-level form that
tests/fixtures/bpe.py (ours) also writes: Split with Qwen's (GPT-4 cl100k style) regex, then
ByteLevel; ByteLevel decoder; BPE model over the GPT-2 byte-to-unicode alphabet; special tokens
<|endoftext|>, <|im_start|>, <|im_end|> after the learned vocabulary.

The trainer is the textbook BPE (count adjacent pairs inside pre-tokens, merge the most frequent),
made incremental (pair -> words index and a lazy max-heap) so that ~4k merges on a few MB take a
minute; ties are broken by the smallest (left, right) pair so that output is deterministic.
Pre-tokens are cut with the exact regex of tokenizer.json (the `regex` module knows \\p{L}).

  train:  /usr/bin/python3 tools/train/tokenizer.py train [--data DIR] [--vocab 4096]
  encode: /usr/bin/python3 tools/train/tokenizer.py encode [--data DIR]
          -> DIR/tokens/<domain>.<split>.bin (uint16 ids, documents joined by <|endoftext|>)
             and DIR/tokens/meta.json (token and byte counts)
"""
import argparse
import collections
import heapq
import json
import os
import sys

import numpy as np
import regex

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TOKENIZER = os.path.join(HERE, "tokenizer.json")
SEP = "\x1e"

SPLIT_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
DOMAINS = ["kjv_en", "fortunes_en", "fortunes_de", "fortunes_es", "dict_en", "pydoc", "pycode"]


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table, in its canonical order."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [(b, chr(c)) for b, c in zip(bs, cs)]


def train_merges(word_counts, n_vocab_learned):
    """word_counts: {tuple(symbols): count}. Merges until the vocabulary (256 byte symbols plus
    distinct merge results) reaches n_vocab_learned. Returns the merges in rank order."""
    words = [list(w) for w in word_counts]
    counts = list(word_counts.values())
    pairs = collections.Counter()
    where = collections.defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[(a, b)] += counts[i]
            where[(a, b)].add(i)
    heap = [(-c, p) for p, c in pairs.items()]
    heapq.heapify(heap)
    vocab = {ch for _, ch in bytes_to_unicode()}
    merges = []
    while len(vocab) < n_vocab_learned and heap:
        negc, p = heapq.heappop(heap)
        if pairs.get(p, 0) != -negc:
            continue  # stale entry
        if -negc < 2:
            break
        a, b = p
        merged = a + b
        merges.append(p)
        vocab.add(merged)
        changed = set()
        for i in sorted(where.pop(p, ())):
            w = words[i]
            c = counts[i]
            if len(w) < 2:
                continue
            for x, y in zip(w, w[1:]):
                pairs[(x, y)] -= c
                changed.add((x, y))
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(merged)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for x, y in zip(out, out[1:]):
                pairs[(x, y)] += c
                where[(x, y)].add(i)
                changed.add((x, y))
        pairs.pop(p, None)
        for q in changed:
            c = pairs.get(q, 0)
            if c > 0:
                heapq.heappush(heap, (-c, q))
            else:
                pairs.pop(q, None)
    return merges


def build_tokenizer_json(merges):
    table = bytes_to_unicode()
    vocab = {}
    for _, ch in table:
        vocab[ch] = len(vocab)
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    added = []
    for s in SPECIALS:
        added.append({"id": len(vocab) + len(added), "content": s, "single_word": False,
                      "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": False}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": SPLIT_REGEX}, "behavior": "Isolated",
             "invert": False},
            byte_level]},
        "post_processor": dict(byte_level),
        "decoder": dict(byte_level),
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False, "vocab": vocab,
                  "merges": [f"{a} {b}" for a, b in merges]},
    }


class Tokenizer:
    """Encoder/decoder for the tokenizer.json written above (BPE by merge rank, as HF's)."""

    def __init__(self, path=DEFAULT_TOKENIZER):
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        self.vocab = tj["model"]["vocab"]
        self.ranks = {}
        for r, m in enumerate(tj["model"]["merges"]):
            a, b = m.split(" ") if isinstance(m, str) else m
            self.ranks.setdefault((a, b), r)
        self.special = {t["content"]: t["id"] for t in tj["added_tokens"]}
        self.vocab_size = max(list(self.vocab.values()) + list(self.special.values())) + 1
        table = bytes_to_unicode()
        self.byte_char = dict(table)
        self.char_byte = {c: b for b, c in table}
        self.id_bytes = [b""] * self.vocab_size
        for tok, i in self.vocab.items():
            self.id_bytes[i] = bytes(self.char_byte[c] for c in tok)
        for s, i in self.special.items():
            self.id_bytes[i] = s.encode("utf-8")
        self.split = regex.compile(SPLIT_REGEX)
        self.cache = {}
        self.eot = self.special["<|endoftext|>"]

    def _bpe(self, word):
        syms = [self.byte_char[b] for b in word.encode("utf-8")]
        while len(syms) > 1:
            best, bi = None, -1
            for i in range(len(syms) - 1):
                r = self.ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best):
                    best, bi = r, i
            if best is None:
                break
            a, b = syms[bi], syms[bi + 1]
            out, j = [], 0
            while j < len(syms):
                if j + 1 < len(syms) and syms[j] == a and syms[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            syms = out
        return [self.vocab[s] for s in syms]

    def encode(self, text):
        """Plain text only (special-token strings are not recognised here)."""
        ids = []
        cache = self.cache
        for w in self.split.findall(text):
            r = cache.get(w)
            if r is None:
                r = self._bpe(w)
                if len(cache) < 2_000_000:
                    cache[w] = r
            ids.extend(r)
        return ids

    def decode_bytes(self, ids):
        return b"".join(self.id_bytes[i] for i in ids)

    def decode(self, ids):
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def token_byte_lengths(self):
        """Bytes of text each id stands for; <|endoftext|> counts 1 (the document break)."""
        n = np.array([len(b) for b in self.id_bytes], dtype=np.int64)
        for s, i in self.special.items():
            n[i] = 1 if s == "<|endoftext|>" else 0
        return n


def read_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in f.read().split(SEP) if d]


def balanced_sample(data, per_domain):
    """About per_domain bytes of whole documents from each domain's training text, spread evenly
    over the text (every k-th document), so that no domain dominates the vocabulary."""
    parts = []
    for d in DOMAINS:
        docs = read_docs(os.path.join(data, "text", d + ".train.txt"))
        total = sum(len(x.encode("utf-8")) for x in docs)
        stride = max(1, round(total / per_domain))
        parts.extend(docs[::stride])
    return parts


def cmd_train(a):
    docs = balanced_sample(a.data, a.sample_bytes)
    split = regex.compile(SPLIT_REGEX)
    counts = collections.Counter()
    for d in docs:
        counts.update(split.findall(d))
    byte_char = dict(bytes_to_unicode())
    word_counts = {}
    for w in sorted(counts):
        key = tuple(byte_char[b] for b in w.encode("utf-8"))
        word_counts[key] = word_counts.get(key, 0) + counts[w]
    print(f"sample {sum(len(d) for d in docs):,d} chars, {len(word_counts):,d} distinct "
          f"pre-tokens", flush=True)
    merges = train_merges(word_counts, a.vocab - len(SPECIALS))
    tj = build_tokenizer_json(merges)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {a.out}: {len(tj['model']['vocab'])} tokens + {len(SPECIALS)} specials, "
          f"{len(merges)} merges")


def cmd_encode(a):
    tok = Tokenizer(a.tokenizer)
    odir = os.path.join(a.data, "tokens")
    os.makedirs(odir, exist_ok=True)
    meta = {"tokenizer": os.path.abspath(a.tokenizer), "vocab_size": tok.vocab_size,
            "eot": tok.eot, "files": {}}
    for d in DOMAINS:
        for split in ("train", "heldout"):
            docs = read_docs(os.path.join(a.data, "text", f"{d}.{split}.txt"))
            ids = []
            nbytes = 0
            for doc in docs:
                ids.append(tok.eot)
                ids.extend(tok.encode(doc))
                nbytes += len(doc.encode("utf-8")) + 1
            arr = np.array(ids, dtype=np.uint16)
            arr.tofile(os.path.join(odir, f"{d}.{split}.bin"))
            meta["files"][f"{d}.{split}"] = {"tokens": int(arr.size), "bytes": nbytes,
                                             "bytes_per_token": round(nbytes / arr.size, 4)}
            print(f"{d:12s} {split:8s} {arr.size:>11,d} tokens {nbytes:>11,d} bytes "
                  f"{nbytes / arr.size:.3f} B/token", flush=True)
    with open(os.path.join(odir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", default="/work/train-state/data")
    t.add_argument("--vocab", type=int, default=4096, help="total size, specials included")
    t.add_argument("--sample-bytes", type=int, default=1_000_000, help="per domain")
    t.add_argument("--out", default=DEFAULT_TOKENIZER)
    e = sub.add_parser("encode")
    e.add_argument("--data", default="/work/train-state/data")
    e.add_argument("--tokenizer", default=DEFAULT_TOKENIZER)
    a = ap.parse_args()
    {"train": cmd_train, "encode": cmd_encode}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
