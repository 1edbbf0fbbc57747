#!/usr/bin/env python3
"""Plots evidence recall against mean context tokens, one point per strategy and
window, from memory_bench's JSON lines. Plain SVG, no dependencies.

    python3 scripts/plot_recall.py docs/bench/locomo.json docs/bench/recall_vs_tokens.svg
"""
import json
import math
import sys

results = json.load(open(sys.argv[1]))
out = sys.argv[2]
W, H, L, R, T, B = 720, 440, 70, 30, 40, 60
colors = {"full": "#c0392b", "window": "#2980b9", "summary": "#27ae60", "layered": "#8e44ad"}
tokens = [r["context_tokens"]["mean"] for r in results]
lo, hi = math.log10(max(1, min(tokens) / 1.5)), math.log10(max(tokens) * 1.5)


def x(t):
    return L + (math.log10(t) - lo) / (hi - lo) * (W - L - R)


def y(recall):
    return T + (1 - recall) * (H - T - B)


svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{W/2}" y="22" text-anchor="middle" font-size="15">LoCoMo evidence recall (categories 1-4) vs mean context tokens</text>']
for r in [0, 0.25, 0.5, 0.75, 1.0]:
    svg.append(f'<line x1="{L}" x2="{W-R}" y1="{y(r)}" y2="{y(r)}" stroke="#ddd"/>')
    svg.append(f'<text x="{L-8}" y="{y(r)+4}" text-anchor="end">{r:.2f}</text>')
decade = math.floor(lo)
while decade <= hi:
    for m in (1, 2, 5):
        t = m * 10 ** decade
        if lo <= math.log10(t) <= hi:
            svg.append(f'<line x1="{x(t)}" x2="{x(t)}" y1="{T}" y2="{H-B}" stroke="#eee"/>')
            svg.append(f'<text x="{x(t)}" y="{H-B+16}" text-anchor="middle">{t:,}</text>')
    decade += 1
svg.append(f'<text x="{W/2}" y="{H-18}" text-anchor="middle">mean context tokens per question (log scale)</text>')
svg.append(f'<text transform="translate(18,{H/2}) rotate(-90)" text-anchor="middle">evidence recall</text>')
for r in results:
    cx, cy = x(r["context_tokens"]["mean"]), y(r["evidence_recall"]["overall"])
    c = colors.get(r["strategy"], "#555")
    label = f'{r["strategy"]} w{r["window"]}' + (f' b{r["budget"]}' if r.get("budget") else "")
    svg.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{c}"/>')
    svg.append(f'<text x="{cx+9:.1f}" y="{cy-8:.1f}" fill="{c}">{label}: {r["evidence_recall"]["overall"]:.3f}</text>')
svg.append("</svg>")
open(out, "w").write("\n".join(svg))
