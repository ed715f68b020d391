#!/usr/bin/python3
"""Records a token stream for the app's replay tests and GUI stall benchmark (docs/app.md).

The default model cannot write a long Markdown answer with code fences (its context is 512 tokens
and it never saw Markdown), so the text comes from a Markdown document and the timing from the
model: the document is cut into the default model's token pieces (its own tokenizer.json, the
byte-level BPE of tools/train/tokenizer.py; a piece is emitted when its bytes complete UTF-8, as
the engine does), and each piece gets the delay of one token of a real decode of the default
model, measured by reading `coli generate MODEL -p PROMPT --ignore-eos -n 400` through a pipe
(coli flushes stdout after each piece) and timestamping each read; runs are repeated until there
is a delay for every piece. The first piece's delay is the first run's time to first token as
coli reports it ("ttft:" on stderr, which excludes loading the model).

Output (tests/app/data/*.replay, format in app/token_replay.h): comment lines with the source,
the model, the runs' decode rates and the machine's load average, then one line per piece:
<delay in microseconds> TAB <piece as a JSON string>.

  /usr/bin/python3 tools/replay/make_replay.py --coli build/release/cli/coli \\
      [--model resources/models/colibri-moe-tiny] [--markdown tools/replay/markdown_answer.md] \\
      [--out tests/app/data/markdown_answer.replay]

Needs python3-regex (tools/train/packages.txt) for the tokenizer's pre-tokenizer regex.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
from tokenizer import Tokenizer  # noqa: E402  (tools/train/tokenizer.py)


def pieces_of(tok, text):
    """The text as the engine would stream it: one piece per token, complete UTF-8 only."""
    pieces, pending = [], b""
    for i in tok.encode(text):
        pending += tok.id_bytes[i]
        try:
            pieces.append(pending.decode("utf-8"))
            pending = b""
        except UnicodeDecodeError:
            continue  # a character split over tokens: wait for the rest
    if pending:
        raise SystemExit("the document does not end on complete UTF-8")
    if "".join(pieces) != text:
        raise SystemExit("tokenizer round trip changed the text")
    return pieces


def decode_timing(coli, model, prompt, n, threads):
    """(ttft seconds, [inter-token gaps in seconds], decode tok/s) of one real decode."""
    cmd = [coli, "generate", model, "-p", prompt, "--ignore-eos", "-n", str(n), "--temp", "0"]
    if threads:
        cmd += ["-t", str(threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stamps = []
    fd = proc.stdout.fileno()
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        stamps.append(time.monotonic())
    err = proc.stderr.read().decode("utf-8", "replace")
    if proc.wait() != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    ttft = re.search(r"^ttft:\s+([0-9.]+) ms", err, re.M)
    rate = re.search(r"^decode:\s+([0-9.]+) tok/s", err, re.M)
    if not ttft or not rate:
        raise SystemExit(f"no ttft/decode line in coli's summary:\n{err}")
    # One read per piece while the reader keeps up; a read holding several pieces gives one gap.
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    return float(ttft.group(1)) / 1e3, gaps, float(rate.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--coli", required=True, help="the coli CLI (build/release/cli/coli)")
    ap.add_argument("--model", default=os.path.join(ROOT, "resources/models/colibri-moe-tiny"))
    ap.add_argument("--markdown", default=os.path.join(HERE, "markdown_answer.md"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/app/data/markdown_answer.replay"))
    ap.add_argument("--prompt", default="Tell me a fortune.")
    ap.add_argument("-n", type=int, default=400, help="tokens per timing run")
    ap.add_argument("-t", "--threads", type=int, default=0)
    a = ap.parse_args()

    tok = Tokenizer(os.path.join(a.model, "tokenizer.json"))
    with open(a.markdown, encoding="utf-8") as f:
        text = f.read()
    pieces = pieces_of(tok, text)

    load = os.getloadavg()
    ttft, gaps, rates = None, [], []
    while len(gaps) < len(pieces) - 1:
        t, g, r = decode_timing(a.coli, a.model, a.prompt, a.n, a.threads)
        ttft = t if ttft is None else ttft
        gaps += g
        rates.append(r)
    delays = [ttft] + gaps[: len(pieces) - 1]

    rel = os.path.relpath(a.markdown, ROOT)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("# colibri token replay, version 1: <delay in microseconds>\\t<piece as JSON>\n")
        f.write(f"# text: {rel} ({len(text.encode())} bytes), cut into {len(pieces)} pieces by "
                f"{os.path.relpath(a.model, ROOT)}/tokenizer.json\n")
        f.write(f"# timing: {len(rates)} runs of `coli generate MODEL -p {json.dumps(a.prompt)} "
                f"--ignore-eos -n {a.n} --temp 0`, decode "
                + ", ".join(f"{r:.0f}" for r in rates) + " tok/s; first delay = ttft "
                f"{ttft * 1e3:.1f} ms; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
        f.write("# made by tools/replay/make_replay.py\n")
        for d, p in zip(delays, pieces):
            f.write(f"{round(d * 1e6)}\t{json.dumps(p, ensure_ascii=False)}\n")
    total = sum(delays)
    print(f"{a.out}: {len(pieces)} pieces, {total:.2f} s of stream "
          f"({(len(pieces) - 1) / (total - ttft):.0f} tok/s), {len(rates)} timing runs, "
          f"load {load[0]:.2f}")


if __name__ == "__main__":
    main()
