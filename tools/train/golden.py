#!/usr/bin/python3
"""Golden outputs of the torch model for the shipped default model (issue 3's engine check).

  /usr/bin/python3 tools/train/golden.py MODEL_DIR [--out tests/default_model/golden.json]

Loads MODEL_DIR (an export.py directory) into tools/train/model.py's MoEModel in float32 (the
BF16 weights widened exactly) and writes, for 5 prompts (3 plain text, 2 through the chat
template): the prompt text, whether it is a chat request, the prompt token ids of tokenizer.py
(the engine must produce the same ids), the full logits of the last prompt position, 32 greedy
tokens (eos not special-cased, so the engine test must ignore eos) and, for each greedy step,
the top-8 logits with their ids and the margin between the best two. The C++ test
tests/default_model/test_default_model.cpp compares the engine with these (logits within 1e-3,
greedy tokens identical).
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from export import chat_ids, load_export  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

PROMPTS = [
    ("text", "And God said unto Moses,"),
    ("text", "Wer zuletzt lacht,"),
    ("text", "def parse_args(argv):\n    "),
    ("chat", "Define lantern."),
    ("chat", "Tell me a fortune."),
]
N_GREEDY = 32
TOP = 8


def r(x):
    return float(f"{x:.6g}")


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "tests", "default_model",
                                                  "golden.json"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = load_export(a.model_dir)
    tok = Tokenizer(os.path.join(a.model_dir, "tokenizer.json"))
    cases = []
    for kind, text in PROMPTS:
        ids = chat_ids(tok, text) if kind == "chat" else tok.encode(text)
        logits, _, _ = model(torch.tensor([ids]))
        last = logits[0, -1]
        seq, steps = list(ids), []
        for _ in range(N_GREEDY):
            lg = model(torch.tensor([seq]))[0][0, -1]
            v, ix = lg.topk(TOP)
            steps.append({"top_ids": ix.tolist(), "top_logits": [r(x) for x in v.tolist()],
                          "margin": r(float(v[0] - v[1]))})
            seq.append(int(ix[0]))
        cases.append({"kind": kind, "text": text, "prompt_ids": ids,
                      "last_logits": [r(x) for x in last.tolist()],
                      "greedy": seq[len(ids):], "steps": steps})
        print(f"{kind} {text!r}: {len(ids)} prompt tokens -> {tok.decode(seq[len(ids):])!r} "
              f"(min margin {min(s['margin'] for s in steps):.4f})")
    with open(os.path.abspath(a.out), "w") as f:
        json.dump({"model_dir": os.path.basename(os.path.normpath(a.model_dir)),
                   "generator": "tools/train/golden.py", "tolerance": 1e-3,
                   "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {os.path.abspath(a.out)} ({os.path.getsize(a.out):,d} bytes)")


if __name__ == "__main__":
    main()
