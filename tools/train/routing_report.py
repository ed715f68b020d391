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


def heat_svg(st, cell=14):
    doms = [d["name"] for d in st["domains"]]
    E, L = st["n_experts"], len(st["layers"])
    left, top, gap = 90, 40, 24
    W = left + L * (E * cell + gap) + 40
    H = top + len(doms) * cell + 90
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         '<g font-family="DejaVu Sans" font-size="11">',
         f'<text x="{left}" y="16">routing share / domain-balanced share (engine, held-out '
         f'text); outlined: >= {st["ratio"]:g}x and balanced >= '
         f'{100 * st["min_balanced"]:g}%</text>']
    for j, d in enumerate(doms):
        s.append(f'<text x="{left - 6}" y="{top + j * cell + cell - 3}" text-anchor="end">'
                 f'{d}</text>')
    for li, layer in enumerate(st["layers"]):
        x0 = left + li * (E * cell + gap)
        s.append(f'<text x="{x0 + E * cell / 2}" y="{top - 6}" text-anchor="middle">layer '
                 f'{layer["layer"]}</text>')
        spec = {(sp["expert"], sp["domain"]) for sp in layer["specialists"]}
        for j, d in enumerate(doms):
            for e in range(E):
                b = layer["balanced"][e]
                r = layer["shares"][d][e] / b if b > 0 else 0.0
                # 0x white -> 1x light grey-blue -> >= 4x deep red
                t = min(r / 4.0, 1.0)
                col = (int(255 - 30 * min(r, 1)), int(255 - 215 * t), int(255 - 215 * t))
                if r > 1:
                    col = (255 - int(40 * t), int(225 - 200 * t), int(225 - 200 * t))
                stroke = ' stroke="black" stroke-width="1.5"' if (e, d) in spec else ""
                s.append(f'<rect x="{x0 + e * cell}" y="{top + j * cell}" width="{cell - 1}" '
                         f'height="{cell - 1}" fill="rgb{col}"{stroke}/>')
        s.append(f'<text x="{x0}" y="{top + len(doms) * cell + 14}">0</text>')
        s.append(f'<text x="{x0 + (E - 1) * cell}" y="{top + len(doms) * cell + 14}">'
                 f'{E - 1}</text>')
    s.append(f'<text x="{left}" y="{top + len(doms) * cell + 40}">experts 0..{E - 1} per layer;'
             ' colour: white 0x, grey 1x, red >= 4x</text>')
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
