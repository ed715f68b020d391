#!/usr/bin/python3
"""Loss-curve table (Markdown) and plot (SVG, and PNG through ImageMagick's `convert`) from
train.py's log.csv: held-out bits per byte per domain against training tokens, with the order-2
byte n-gram baseline (baseline.json) as dashed lines.

  /usr/bin/python3 tools/train/report.py --log /work/train-state/log.csv \
      [--log2 /work/train-state/log_phase2.csv] --png docs/images/default-model-loss.png
Prints the Markdown table on stdout. Phase 2 (finetune.py) rows continue the curve; a vertical
line marks where phase 2 starts.
"""
import argparse
import csv
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
COLORS = {"kjv_en": "#1f77b4", "fortunes_en": "#ff7f0e", "fortunes_de": "#2ca02c",
          "fortunes_es": "#d62728", "dict_en": "#9467bd", "pydoc": "#8c564b",
          "pycode": "#e377c2"}


def read_log(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def table(rows, domains, n, phase2_start=None):
    pick = rows if len(rows) <= n else [rows[round(i * (len(rows) - 1) / (n - 1))]
                                        for i in range(n)]
    out = ["| Tokens | " + " | ".join(domains) + " | mean |",
           "|---:|" + "---:|" * (len(domains) + 1)]
    for r in pick:
        mark = " (phase 2)" if phase2_start is not None and int(r["tokens"]) > phase2_start \
            else ""
        out.append(f"| {int(r['tokens']) / 1e6:.2f}M{mark} | " +
                   " | ".join(f"{float(r['bpb_' + d]):.3f}" for d in domains) +
                   f" | {float(r['bpb_mean']):.3f} |")
    return "\n".join(out)


def svg(rows, domains, baseline, phase2_start=None, W=900, H=520):
    L, R, T, B = 70, 170, 40, 60
    xs = [int(r["tokens"]) / 1e6 for r in rows]
    xmax = max(xs[-1], 1e-6)
    ys = [float(r["bpb_" + d]) for r in rows for d in domains]
    ymin = 0.0
    ymax = max(5.0, max(ys)) if ys else 5.0
    ymax = min(ymax, 5.0)

    def px(x):
        return L + (W - L - R) * x / xmax

    def py(y):
        return T + (H - T - B) * (1 - (min(y, ymax) - ymin) / (ymax - ymin))

    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         '<g font-family="DejaVu Sans" font-size="12">']
    for k in range(0, int(ymax) + 1):
        y = py(k)
        s.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#ddd"/>')
        s.append(f'<text x="{L - 8}" y="{y + 4:.1f}" text-anchor="end">{k}</text>')
    for k in range(6):
        x = xmax * k / 5
        s.append(f'<text x="{px(x):.1f}" y="{H - B + 18}" text-anchor="middle">{x:.1f}M</text>')
    s.append(f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>')
    s.append(f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>')
    s.append(f'<text x="{(L + W - R) / 2}" y="{H - 15}" text-anchor="middle">training tokens'
             '</text>')
    s.append(f'<text x="{L}" y="{T - 12}">held-out bits per byte</text>')
    if phase2_start is not None:
        x = px(phase2_start / 1e6)
        s.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H - B}" stroke="#888" '
                 'stroke-dasharray="2,3"/>')
        s.append(f'<text x="{x - 4:.1f}" y="{T + 12}" text-anchor="end" fill="#555">'
                 'phase 2: 512-token context + chat</text>')
    for i, d in enumerate(domains):
        c = COLORS.get(d, "black")
        pts = " ".join(f"{px(x):.1f},{py(float(r['bpb_' + d])):.1f}" for x, r in zip(xs, rows))
        s.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"/>')
        if baseline and d in baseline:
            y = py(baseline[d])
            s.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="{c}" '
                     'stroke-dasharray="6,4" stroke-width="1"/>')
        ly = T + 10 + 20 * i
        s.append(f'<line x1="{W - R + 10}" y1="{ly}" x2="{W - R + 35}" y2="{ly}" stroke="{c}" '
                 'stroke-width="2"/>')
        s.append(f'<text x="{W - R + 40}" y="{ly + 4}">{d}</text>')
    ly = T + 10 + 20 * len(domains) + 10
    s.append(f'<line x1="{W - R + 10}" y1="{ly}" x2="{W - R + 35}" y2="{ly}" stroke="black" '
             'stroke-dasharray="6,4"/>')
    s.append(f'<text x="{W - R + 40}" y="{ly + 4}">order-2 n-gram</text>')
    s.append("</g></svg>")
    return "\n".join(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log", default="/work/train-state/log.csv")
    ap.add_argument("--baseline", default=os.path.join(HERE, "baseline.json"))
    ap.add_argument("--log2", default=None, help="finetune.py's log_phase2.csv")
    ap.add_argument("--png", default=None)
    ap.add_argument("--rows", type=int, default=12)
    a = ap.parse_args()
    rows = read_log(a.log)
    phase2_start = None
    if a.log2 and os.path.exists(a.log2):
        rows2 = read_log(a.log2)
        if rows2:
            phase2_start = int(rows2[0]["tokens"])
            rows = [r for r in rows if int(r["tokens"]) <= phase2_start] + rows2[1:]
    domains = [k[4:] for k in rows[0] if k.startswith("bpb_") and k != "bpb_mean"]
    base = None
    if os.path.exists(a.baseline):
        with open(a.baseline) as f:
            b = json.load(f)
        base = {d: v["bpb_all_domains"] for d, v in b["domains"].items()}
    print(table(rows, domains, a.rows, phase2_start))
    if a.png:
        svg_path = os.path.splitext(a.png)[0] + ".svg"
        os.makedirs(os.path.dirname(os.path.abspath(a.png)), exist_ok=True)
        with open(svg_path, "w") as f:
            f.write(svg(rows, domains, base, phase2_start))
        subprocess.run(["convert", svg_path, a.png], check=True)


if __name__ == "__main__":
    main()
