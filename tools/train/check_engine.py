#!/usr/bin/python3
"""Checks that our engine runs an exported checkpoint as torch does (a quick check; the formal
test with checked-in goldens lives in tests/).

For each prompt: torch (tools/train/model.py on the exported, rounded weights, float32) encodes
the prompt with tools/train/tokenizer.py and decodes greedily; `coli generate DIR -p PROMPT
--temp 0 -n N` does the same in the engine. The continuations must be the same text. Also checks
that our Python tokenizer and the torch model agree with the exported tokenizer.json round trip.

  /usr/bin/python3 tools/train/check_engine.py --model DIR --coli build-train/cli/coli [-n 24]
Exit status 0 when every prompt matches.
"""
import argparse
import os
import re
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from export import generate, load_export  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

PROMPTS = [
    "In the beginning God created",
    "The quick brown fox",
    "Der Mensch ist",
    "El amor es",
    "def main(argv):\n    ",
    "Python is an interpreted language",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--coli", default="build-train/cli/coli")
    ap.add_argument("-n", type=int, default=24)
    a = ap.parse_args()
    torch.set_num_threads(1)
    tok = Tokenizer(os.path.join(a.model, "tokenizer.json"))
    model = load_export(a.model)
    eos = (tok.special["<|endoftext|>"], tok.special["<|im_end|>"])
    bad = 0
    for p in PROMPTS:
        ids = tok.encode(p)
        assert tok.decode(ids) == p, "tokenizer round trip"
        new = generate(model, ids, a.n, eos_ids=eos)
        want = tok.decode(new)
        r = subprocess.run([a.coli, "generate", a.model, "-p", p, "-n", str(a.n), "--temp", "0", "--repeat-penalty", "1",
                            "--threads", "1"], capture_output=True)
        got = r.stdout.decode("utf-8", errors="replace")
        err = r.stderr.decode("utf-8", errors="replace")
        m = re.search(r"prompt tokens:\s+(\d+)", err)
        n_engine = int(m.group(1)) if m else -1
        ok = r.returncode == 0 and got == want and n_engine == len(ids)
        bad += not ok
        print(f"{'OK  ' if ok else 'DIFF'} {p!r}: {len(ids)} prompt tokens (engine {n_engine}), "
              f"{len(new)} new")
        if not ok:
            print(f"  torch: {want!r}\n  coli : {got!r} (exit {r.returncode})\n"
                  f"  stderr: {err[-600:]}")
    print(f"{len(PROMPTS) - bad}/{len(PROMPTS)} prompts match")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
