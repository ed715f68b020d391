#!/usr/bin/python3
"""Chat-formatted examples built from the training documents, for the second training phase.

The model is trained on plain text only; without examples in the chat template's format it has
never seen `<|im_start|>assistant` and answers a chat turn with noise. Each example here wraps one
real document (a fortune, a dictionary entry, a Bible chapter, a Python documentation page or
function) in a ChatML conversation: a short request from a fixed list of templates, written by
us, and the document as the assistant's answer. The documents stay the only source of content;
the request templates are the only text we add (listed below, so the model card can state it).

Token ids are produced segment by segment exactly as the engine tokenizes the rendered template:
special tokens are single ids, the text between them is BPE-encoded on its own.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tokenizer import Tokenizer, read_docs  # noqa: E402

REQUESTS = {
    "fortunes_en": ["Tell me a fortune.", "Give me a quote.", "Say something funny.",
                    "Tell me a joke.", "Share some wisdom."],
    "fortunes_de": ["Erzähl mir einen Spruch.", "Tell me a fortune in German.",
                    "Sag etwas Lustiges.", "Hast du ein Zitat für mich?"],
    "fortunes_es": ["Dime un refrán.", "Tell me a fortune in Spanish.", "Cuéntame un chiste.",
                    "Dame una cita."],
    "dict_en": ["Define {w}.", "What does \"{w}\" mean?", "Look up {w} in the dictionary.",
                "What is the meaning of {w}?"],
    "kjv_en": ["Read me a passage from the King James Bible.", "Quote the Bible.",
               "Continue this verse: {v}"],
    "pydoc": ["Show me the Python documentation on {t}.", "Explain {t} in Python.",
              "What do the Python docs say about {t}?"],
    "pycode": ["Write a Python function named {f}.", "Show me the Python code of {f}.",
               "Implement {f} in Python."],
}

# Longest assistant answer kept, in characters (~800 tokens; phase 2 trains on 512-token windows,
# so the longest answers are seen cut, which only costs them their closing <|im_end|>).
MAX_ANSWER_CHARS = 2400

_HEADWORD = re.compile(r"^([A-Za-z][A-Za-z' -]{0,40}?) \\")
_JARGON = re.compile(r"^:?([A-Za-z0-9][^:\n]{0,40}):")
_RST_TITLE = re.compile(r"^(?:[=*#-]{3,}\n)?([^\n]{3,80})\n[=*#-]{3,}\n", re.M)
_DEF = re.compile(r"^( {0,4})def ([A-Za-z_][A-Za-z0-9_]*)\(", re.M)


def _cut(text):
    text = text.strip("\n")
    if len(text) <= MAX_ANSWER_CHARS:
        return text
    cut = text.rfind("\n", 0, MAX_ANSWER_CHARS)
    return text[:cut if cut > MAX_ANSWER_CHARS // 2 else MAX_ANSWER_CHARS]


def pairs_for(domain, doc, rng):
    """Zero or more (request, answer) pairs made from one document."""
    reqs = REQUESTS[domain]
    if domain.startswith("fortunes"):
        text = doc.strip("\n")
        if 0 < len(text) <= MAX_ANSWER_CHARS:
            yield reqs[rng.integers(len(reqs))], text
    elif domain == "dict_en":
        text = doc.strip("\n")
        m = _HEADWORD.match(text) or _JARGON.match(text)
        if m and len(text) <= MAX_ANSWER_CHARS:
            yield reqs[rng.integers(len(reqs))].format(w=m.group(1).strip()), text
    elif domain == "kjv_en":
        verses = [v for v in doc.split("\n") if v.strip()]
        if len(verses) < 4:
            return
        i = int(rng.integers(0, len(verses) - 3))
        k = int(rng.integers(len(reqs)))
        if "{v}" in reqs[k]:
            yield reqs[k].format(v=verses[i]), _cut("\n".join(verses[i + 1:i + 6]))
        else:
            yield reqs[k], _cut("\n".join(verses[i:i + 5]))
    elif domain == "pydoc":
        m = _RST_TITLE.search(doc)
        if m:
            title = m.group(1).strip().strip("`*:")
            body = doc[m.end():]
            if title and body.strip():
                yield reqs[rng.integers(len(reqs))].format(t=title), _cut(body)
    elif domain == "pycode":
        defs = list(_DEF.finditer(doc))
        for j in rng.permutation(len(defs))[:3]:
            m = defs[j]
            end = defs[j + 1].start() if j + 1 < len(defs) else len(doc)
            body = doc[m.start():end].rstrip()
            # Methods keep their indentation only relative to the def line.
            indent = len(m.group(1))
            body = "\n".join(line[indent:] if line[:indent].isspace() else line
                             for line in body.split("\n"))
            if 40 <= len(body) <= MAX_ANSWER_CHARS:
                yield reqs[rng.integers(len(reqs))].format(f=m.group(2)), body


class ChatEncoder:
    def __init__(self, tok: Tokenizer):
        self.tok = tok
        self.start = tok.special["<|im_start|>"]
        self.end = tok.special["<|im_end|>"]
        self.nl = tok.encode("\n")

    def conversation(self, turns):
        """Token ids of the rendered conversation and, per id, whether it belongs to an
        assistant answer (its text and its `<|im_end|>`): the tokens the chat loss counts."""
        ids, answer = [], []
        for req, ans in turns:
            for role, content in (("user", req), ("assistant", ans)):
                head = [self.start] + self.tok.encode(role + "\n")
                body = self.tok.encode(content) + [self.end]
                ids += head + body + self.nl
                answer += [False] * len(head) + [role == "assistant"] * len(body) + \
                    [False] * len(self.nl)
        return ids, answer


def build(data, domains, split, seed, tok):
    """All conversations of a split, one or two exchanges each, grouped by domain (for
    domain-balanced sampling): lists of (token ids, answer mask) pairs."""
    enc = ChatEncoder(tok)
    rng = np.random.default_rng(seed)
    out = {}
    for d in domains:
        pairs = []
        for doc in read_docs(os.path.join(data, "text", f"{d}.{split}.txt")):
            pairs.extend(pairs_for(d, doc, rng))
        order = rng.permutation(len(pairs))
        convs, i = [], 0
        while i < len(order):
            n = 2 if rng.random() < 0.3 and i + 1 < len(order) else 1
            ids, answer = enc.conversation([pairs[j] for j in order[i:i + n]])
            convs.append((np.array(ids, dtype=np.uint16), np.array(answer, dtype=bool)))
            i += n
        out[d] = convs
    return out


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/work/train-state/data")
    ap.add_argument("--show", type=int, default=2, help="examples to print per domain")
    a = ap.parse_args()
    from train import DOMAINS  # noqa: E402
    tok = Tokenizer()
    convs = build(a.data, DOMAINS, "heldout", 7, tok)
    for d, cs in convs.items():
        n = sum(len(c) for c, _ in cs)
        print(f"{d:12s} {len(cs):6d} conversations {n:9,d} tokens (held-out split)")
        for c, _ in cs[:a.show]:
            print("   ", repr(tok.decode(c.tolist())[:300]))
