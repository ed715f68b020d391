#!/usr/bin/python3
"""Markdown tables and a heatmap from `coli route-stats --json` (the engine's routing counts).

  /usr/bin/python3 tools/train/routing_report.py STATS.json [--png docs/images/x.png]

Prints, per MoE layer, the share of routed slots each expert receives in each domain (percent),
its domain-balanced share, and marks cells that are >= ratio x the balanced share (issue 3's
specialisation criterion, computed by the engine; this script only formats). The PNG (SVG
through ImageMagick `convert`) shows share / balanced per layer, expert and domain.
"""
import argparse
import json
import os
import subprocess


def tables(st):
    doms = [d["name"] for d in st["domains"]]
    out = []
    for layer in st["layers"]:
        spec = {(s["expert"], s["domain"]) for s in layer["specialists"]}
        out += [f"**Layer {layer['layer']}** ({len(layer['specialists'])} specialists)", "",
                "| expert | " + " | ".join(doms) + " | balanced |",
                "|---:|" + "---:|" * (len(doms) + 1)]
        for e in range(st["n_experts"]):
            cells = []
            for d in doms:
                v = 100 * layer["shares"][d][e]
                cells.append(f"**{v:.1f}**" if (e, d) in spec else f"{v:.1f}")
            out.append(f"| {e} | " + " | ".join(cells) +
                       f" | {100 * layer['balanced'][e]:.1f} |")
        out.append("")
    return "\n".join(out)


def colour(r):
    """Ratio share/balanced -> fill: light blue at 0x, white at 1x, deep red at >= 4x."""
    if r <= 1:
        t = 1 - r
        return (int(255 - 90 * t), int(255 - 60 * t), 255)
    t = min((r - 1) / 3, 1.0)
    return (int(255 - 55 * t), int(255 - 235 * t), int(255 - 235 * t))


def heat_svg(st, cell=18, per_row=3):
    doms = [d["name"] for d in st["domains"]]
    E, L = st["n_experts"], len(st["layers"])
    left, top, gapx, gapy = 100, 50, 30, 50
    bw, bh = E * cell, len(doms) * cell
    rows = (L + per_row - 1) // per_row
    W = left + per_row * (bw + gapx)
    H = top + rows * (bh + gapy) - 20
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}">',
         f'<rect width="{W}" height="{H}" fill="white" stroke="none"/>',
         '<g font-family="DejaVu Sans" font-size="12">',
         f'<text x="10" y="20">Routing share / domain-balanced share per expert (engine, '
         f'held-out text). Blue 0x, white 1x, red >= 4x; black frame: >= {st["ratio"]:g}x '
         f'with balanced share >= {100 * st["min_balanced"]:g}%.</text>']
    for li, layer in enumerate(st["layers"]):
        x0 = left + (li % per_row) * (bw + gapx)
        y0 = top + (li // per_row) * (bh + gapy)
        s.append(f'<text x="{x0 + bw / 2}" y="{y0 - 6}" text-anchor="middle">layer '
                 f'{layer["layer"]}: experts 0..{E - 1}</text>')
        if li % per_row == 0:
            for j, d in enumerate(doms):
                s.append(f'<text x="{x0 - 6}" y="{y0 + j * cell + cell - 5}" '
                         f'text-anchor="end">{d}</text>')
        spec = {(sp["expert"], sp["domain"]) for sp in layer["specialists"]}
        for j, d in enumerate(doms):
            for e in range(E):
                b = layer["balanced"][e]
                r = layer["shares"][d][e] / b if b > 0 else 0.0
                s.append(f'<rect x="{x0 + e * cell}" y="{y0 + j * cell}" width="{cell}" '
                         f'height="{cell}" fill="rgb{colour(r)}" stroke="none"/>')
        for e, d in sorted(spec):
            j = doms.index(d)
            s.append(f'<rect x="{x0 + e * cell + 1}" y="{y0 + j * cell + 1}" width="{cell - 2}" '
                     f'height="{cell - 2}" fill="none" stroke="black" stroke-width="2"/>')
    s.append("</g></svg>")
    return "\n".join(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stats")
    ap.add_argument("--png", default=None)
    a = ap.parse_args()
    with open(a.stats) as f:
        st = json.load(f)
    print(tables(st))
    if a.png:
        svg_path = os.path.splitext(a.png)[0] + ".svg"
        os.makedirs(os.path.dirname(os.path.abspath(a.png)), exist_ok=True)
        with open(svg_path, "w") as f:
            f.write(heat_svg(st))
        subprocess.run(["convert", svg_path, a.png], check=True)


if __name__ == "__main__":
    main()
