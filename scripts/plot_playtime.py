#!/usr/bin/env python3
"""Plots prompt tokens per hour against hours played, one line per strategy, from
playtime_bench's JSON (solid: all prompt tokens; dashed: the part not cacheable as
a repeated prefix). Plain SVG, no dependencies.

    python3 scripts/plot_playtime.py docs/bench/playtime.json docs/bench/tokens_per_hour.svg
"""
import json
import math
import sys

report = json.load(open(sys.argv[1]))
out = sys.argv[2]
W, H, L, R, T, B = 770, 460, 80, 180, 48, 60
colors = {"full": "#c0392b", "basic": "#27ae60", "layered@1000": "#c39bd3",
          "layered@2000": "#8e44ad", "layered@4000": "#4a235a"}
order = report["order"]
strategies = report["strategies"]
hours = report["settings"]["hours"]
values = [v for name in order for field in ("tokens_per_hour", "uncached_tokens_per_hour")
          for v in strategies[name][field] if v > 0]
lo, hi = math.log10(min(values) / 1.5), math.log10(max(values) * 1.5)


def x(hour):
    return L + (hour - 1) / max(1, hours - 1) * (W - L - R)


def y(tokens):
    return T + (hi - math.log10(max(tokens, 1))) / (hi - lo) * (H - T - B)


s = report["settings"]
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{(W - R + L) / 2}" y="20" text-anchor="middle" font-size="15">Prompt tokens per hour of play, all NPCs</text>',
       f'<text x="{(W - R + L) / 2}" y="37" text-anchor="middle" fill="#555">{s["npcs"]} NPCs, {s["lines_per_hour"]} player lines/hour, LoCoMo lines; dashed: not a cached prefix (cache kept)</text>']
decade = math.floor(lo)
while decade <= hi:
    for m in (1, 2, 5):
        t = m * 10 ** decade
        if lo <= math.log10(t) <= hi:
            svg.append(f'<line x1="{L}" x2="{W - R}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e5e5e5"/>')
            svg.append(f'<text x="{L - 8}" y="{y(t) + 4:.1f}" text-anchor="end">{t:,}</text>')
    decade += 1
for hour in range(1, hours + 1):
    svg.append(f'<line x1="{x(hour):.1f}" x2="{x(hour):.1f}" y1="{T}" y2="{H - B}" stroke="#f0f0f0"/>')
    svg.append(f'<text x="{x(hour):.1f}" y="{H - B + 16}" text-anchor="middle">{hour}</text>')
svg.append(f'<text x="{(W - R + L) / 2}" y="{H - 18}" text-anchor="middle">hour of play</text>')
svg.append(f'<text transform="translate(18,{(H - B + T) / 2}) rotate(-90)" text-anchor="middle">prompt tokens in that hour (log scale)</text>')
for name in order:
    c = colors.get(name, "#555")
    for field, dash in (("uncached_tokens_per_hour", ' stroke-dasharray="5,4"'), ("tokens_per_hour", "")):
        series = strategies[name][field]
        points = " ".join(f"{x(h + 1):.1f},{y(v):.1f}" for h, v in enumerate(series))
        svg.append(f'<polyline points="{points}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
    series = strategies[name]["tokens_per_hour"]
    for h, v in enumerate(series):
        svg.append(f'<circle cx="{x(h + 1):.1f}" cy="{y(v):.1f}" r="3.5" fill="{c}"/>')
# Labels at the right end of each solid line, pushed apart so none overlap.
labels = sorted((y(strategies[n]["tokens_per_hour"][-1]), n) for n in order)
placed = []
for want, name in labels:
    at = max(want, placed[-1][0] + 15) if placed else want
    placed.append((at, name))
for at, name in placed:
    last = strategies[name]["tokens_per_hour"][-1]
    svg.append(f'<text x="{W - R + 10}" y="{at + 4:.1f}" fill="{colors.get(name, "#555")}">{name}: {last:,.0f}</text>')
svg.append("</svg>")
open(out, "w").write("\n".join(svg))
