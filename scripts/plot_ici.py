#!/usr/bin/env python3
"""Plot the ICI benchmark (latency vs accepted throughput) as one SVG, python3 stdlib only.

Usage: plot_ici.py [build/reports/ici.json] [build/reports/ici.svg]

One panel per (k, vcs, buffer_flits, packet_flits) configuration, one line per traffic pattern:
x = accepted throughput (flits/node/cycle), y = average latency (cycles). Latencies far above
the panel's zero-load latency are clipped (marked by a triangle at the top edge). A dashed
vertical line per pattern marks its saturation throughput (from "summary"), a grey one the
ideal uniform-traffic throughput.
"""
import json
import math
import sys
from collections import defaultdict
from xml.sax.saxutils import escape

PATTERN_ORDER = ["uniform", "transpose", "bitcomp", "tornado", "neighbor", "hotspot"]
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
PANEL_W, PANEL_H = 380, 270  # one panel, including its margins
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 58, 16, 30, 44  # plot area inside a panel
LEGEND_H = 34
COLS = 3


def nice_ticks(hi, n=5):
    """Round tick values from 0 to at least hi, about n of them."""
    if hi <= 0:
        hi = 1.0
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    count = math.ceil(hi / step - 1e-9)
    return [i * step for i in range(count + 1)]


def fmt_tick(v):
    return f"{v:g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"


def config_key(r):
    return (r["k"], r["vcs"], r["buffer_flits"], r["packet_flits"])


def panel_title(key):
    k, vcs, buf, pkt = key
    size = f"{k}x{k}" if isinstance(k, int) else str(k)
    return f"{size}, {vcs} VCs x {buf} flits, {pkt}-flit packets"


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def draw_panel(out, x0, y0, key, lines, summary, colour_of):
    """Append one panel's SVG elements; lines: pattern -> [(accepted, latency)] by offered load."""
    pw, ph = PANEL_W - MARGIN_L - MARGIN_R, PANEL_H - MARGIN_T - MARGIN_B
    left, top = x0 + MARGIN_L, y0 + MARGIN_T
    pts = [p for ps in lines.values() for p in ps]
    lat_min = min(p[1] for p in pts)
    cap = max(min(5 * lat_min, 200.0), 2 * lat_min)
    xticks = nice_ticks(max([p[0] for p in pts] + [s.get("ideal_uniform") or 0 for s in summary]) * 1.05)
    yticks = nice_ticks(min(max(p[1] for p in pts), cap))
    xmax, ymax = xticks[-1], yticks[-1]

    def sx(v):
        return left + pw * v / xmax

    def sy(v):
        return top + ph * (1 - v / ymax)

    clip = f"clip{len(out)}"
    out.append(f'<clipPath id="{clip}"><rect x="{left}" y="{top}" width="{pw}" height="{ph}"/></clipPath>')
    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{y0 + 18}" class="title">{escape(panel_title(key))}</text>')
    for v in xticks:
        out.append(f'<line x1="{sx(v):.1f}" y1="{top}" x2="{sx(v):.1f}" y2="{top + ph}" class="grid"/>')
        out.append(f'<text x="{sx(v):.1f}" y="{top + ph + 14}" class="tick" text-anchor="middle">{fmt_tick(v)}</text>')
    for v in yticks:
        out.append(f'<line x1="{left}" y1="{sy(v):.1f}" x2="{left + pw}" y2="{sy(v):.1f}" class="grid"/>')
        out.append(f'<text x="{left - 5}" y="{sy(v) + 4:.1f}" class="tick" text-anchor="end">{fmt_tick(v)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>')
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + 32}" class="label" text-anchor="middle">'
               "accepted (flits/node/cycle)</text>")
    out.append(f'<text transform="translate({x0 + 14},{top + ph / 2}) rotate(-90)" class="label" '
               'text-anchor="middle">avg latency (cycles)</text>')
    ideal = next((s["ideal_uniform"] for s in summary if number(s.get("ideal_uniform"))), None)
    if ideal:
        out.append(f'<line x1="{sx(ideal):.1f}" y1="{top}" x2="{sx(ideal):.1f}" y2="{top + ph}" '
                   'stroke="#999" stroke-dasharray="2,3"/>')
    for s in summary:
        if s.get("pattern") in lines and number(s.get("saturation")) and s["saturation"] > 0:
            x = sx(s["saturation"])
            out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="{colour_of[s["pattern"]]}" '
                       f'stroke-dasharray="5,4" opacity="0.6" clip-path="url(#{clip})"/>')
    for pattern, ps in lines.items():
        c = colour_of[pattern]
        path = " ".join(f"{sx(a):.1f},{sy(lat):.1f}" for a, lat in ps)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="1.5" clip-path="url(#{clip})"/>')
        for a, lat in ps:
            if lat <= ymax:
                out.append(f'<circle cx="{sx(a):.1f}" cy="{sy(lat):.1f}" r="2.6" fill="{c}"/>')
            else:  # clipped: a triangle pointing up at the top edge
                x = sx(a)
                out.append(f'<path d="M{x:.1f},{top - 1} l-4,7 h8 z" fill="{c}"/>')


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "build/reports/ici.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else "build/reports/ici.svg"
    with open(src) as f:
        data = json.load(f)

    panels = defaultdict(lambda: defaultdict(list))  # config -> pattern -> [(offered, accepted, latency)]
    for r in data.get("results", []):
        if number(r.get("accepted")) and number(r.get("avg_latency")):
            panels[config_key(r)][r["pattern"]].append((r.get("offered", 0), r["accepted"], r["avg_latency"]))
    summaries = defaultdict(list)
    for s in data.get("summary", []):
        summaries[config_key(s)].append(s)
    if not panels:
        sys.exit(f"{src}: no results to plot")

    patterns = sorted({p for lines in panels.values() for p in lines},
                      key=lambda p: (PATTERN_ORDER.index(p) if p in PATTERN_ORDER else len(PATTERN_ORDER), p))
    colour_of = {p: COLOURS[i % len(COLOURS)] for i, p in enumerate(patterns)}
    keys = sorted(panels, key=lambda k: tuple(str(v).zfill(8) for v in k))
    cols = min(COLS, len(keys))
    rows = math.ceil(len(keys) / cols)
    width, height = cols * PANEL_W, LEGEND_H + rows * PANEL_H

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
           "<style>.title{font-size:13px;font-weight:bold;text-anchor:middle}.tick{font-size:10px;fill:#444}"
           ".label{font-size:11px;fill:#222}.grid{stroke:#e4e4e4}.frame{fill:none;stroke:#333}</style>",
           f'<rect width="{width}" height="{height}" fill="white"/>']
    x = 12
    for p in patterns:  # legend
        out.append(f'<line x1="{x}" y1="18" x2="{x + 22}" y2="18" stroke="{colour_of[p]}" stroke-width="2"/>')
        out.append(f'<circle cx="{x + 11}" cy="18" r="3" fill="{colour_of[p]}"/>')
        out.append(f'<text x="{x + 28}" y="22" class="label">{escape(p)}</text>')
        x += 40 + 7 * len(p)
    out.append(f'<text x="{x + 10}" y="22" class="tick">dashed: saturation (colour), ideal uniform (grey)</text>')

    for i, key in enumerate(keys):
        lines = {p: [(a, lat) for _, a, lat in sorted(v)] for p, v in panels[key].items()}
        lines = dict(sorted(lines.items(), key=lambda kv: patterns.index(kv[0])))
        draw_panel(out, (i % cols) * PANEL_W, LEGEND_H + (i // cols) * PANEL_H, key, lines, summaries[key], colour_of)
    out.append("</svg>")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {dst}: {len(keys)} panels, {len(patterns)} patterns")


if __name__ == "__main__":
    main()
