#!/usr/bin/env python3
"""Draw the benchmark reports (build/reports/*.json) as PNG and SVG plots, with matplotlib.

Usage: plots.py [--reports DIR] [--out DIR] [--only NAME[,NAME...]] [--ici-svg FILE]

  --reports DIR   where the JSON reports are (default build/reports)
  --out DIR       where the plots go, as NAME.png and NAME.svg (default build/reports/plots)
  --only NAMES    draw only these plots (comma-separated names below)
  --ici-svg FILE  also write the ICI plot to FILE as SVG (make plots and the bench_ici target
                  pass build/reports/ici.svg, where make bench has always put it)

Plots (NAME: report -> what it shows):
  roofline:    chip.json -> FLOP/cycle against arithmetic intensity (FLOP per compulsory byte),
               the roofline of each preset and every run of the report on it
  mxu:         mxu.json -> MXU utilization and simulation speed per preset
  hbm:         hbm.json -> bandwidth (with the pattern's bound) and read/write latency per pattern
  ici:         ici.json -> average latency against accepted throughput, a panel per router
               configuration and torus, a line per traffic pattern
  collectives: collectives.json -> busbw against size per collective, a line per pod
  pod:         pod.json -> the ICI transfers: latency and fraction of a link's peak against size
  train:       train.json -> the training loss against the step

A report that is missing is skipped with a one-line note. A report that is malformed (not JSON,
a missing field, a field of the wrong type) is named with the field on stderr, the other plots
are still drawn, and the exit code is 1. Needs Debian's python3-matplotlib: when the python3
running this script cannot import matplotlib (a pyenv or venv python3 first on PATH), the script
runs itself again with /usr/bin/python3, where that package installs it.
"""
import argparse
import json
import math
import os
import sys

DEBIAN_PYTHON = "/usr/bin/python3"
REEXEC_ENV = "TP_PLOTS_REEXEC"  # set when this script re-runs itself with DEBIAN_PYTHON
PROG = "plots.py"

# Plot name -> report file; in the order they are drawn.
PLOTS = {
    "roofline": "chip.json",
    "mxu": "mxu.json",
    "hbm": "hbm.json",
    "ici": "ici.json",
    "collectives": "collectives.json",
    "pod": "pod.json",
    "train": "train.json",
}
PATTERN_ORDER = ["uniform", "transpose", "bitcomp", "tornado", "neighbor", "hotspot"]
COLLECTIVE_ORDER = ["all_reduce", "reduce_scatter", "all_gather"]


def import_pyplot():
    """matplotlib.pyplot on the Agg backend, or a clear message naming the package."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        # Once only (the environment marks the second run): a pyenv or venv python3 first on PATH
        # does not see Debian's /usr/lib/python3/dist-packages, where python3-matplotlib is.
        if os.environ.get(REEXEC_ENV) != "1" and os.access(DEBIAN_PYTHON, os.X_OK):
            env = dict(os.environ, **{REEXEC_ENV: "1"})
            os.execve(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(__file__)] + sys.argv[1:], env)
        sys.exit(f"{PROG}: matplotlib is not installed for {sys.executable} ({e}); install Debian's "
                 "python3-matplotlib (as root: apt-get install python3-matplotlib, or make deps)")
    matplotlib.rcParams.update({
        "svg.fonttype": "none",     # text stays text: small SVGs
        "svg.hashsalt": "tensorpod",  # the same SVG ids on every run
        "font.size": 9,
        "axes.grid": True,
        "grid.color": "#e4e4e4",
        "axes.axisbelow": True,
    })
    return plt


class ReportError(Exception):
    """A malformed report: the message names the file and the field."""


def _kind_ok(v, kind):
    if kind == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if kind == "string":
        return isinstance(v, str)
    if kind == "list":
        return isinstance(v, list)
    if kind == "object":
        return isinstance(v, dict)
    raise ValueError(kind)


def get(obj, name, where, kind="number", optional=False, nullable=False):
    """obj[name], checked to be of kind; where names the file and the object ("f.json: results[3]")."""
    if not isinstance(obj, dict):
        raise ReportError(f"{where}: expected an object, found {type(obj).__name__}")
    if name not in obj:
        if optional:
            return None
        raise ReportError(f"{where}: missing field '{name}'")
    v = obj[name]
    if v is None and nullable:
        return None
    if not _kind_ok(v, kind):
        raise ReportError(f"{where}: field '{name}' is {json.dumps(v)[:40]}, expected a {kind}")
    return v


def entries(data, name, where, optional=False, allow_empty=False):
    """The list data[name] as (where, entry) pairs."""
    items = get(data, name, where, "list", optional=optional)
    if items is None:
        return []
    if not items and not allow_empty:
        raise ReportError(f"{where}: '{name}' is empty")
    return [(f"{where}: {name}[{i}]", e) for i, e in enumerate(items)]


def nums(e, where, *names):
    return [get(e, n, where) for n in names]


def save(plt, fig, out_dir, name, extra_svg=None):
    """Write fig as out_dir/name.png and .svg (and extra_svg); return the paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, f"{name}.png"), os.path.join(out_dir, f"{name}.svg")]
    fig.savefig(paths[0], dpi=100)
    fig.savefig(paths[1], metadata={"Date": None})
    if extra_svg:
        d = os.path.dirname(extra_svg)
        if d:
            os.makedirs(d, exist_ok=True)
        fig.savefig(extra_svg, metadata={"Date": None})
        paths.append(extra_svg)
    plt.close(fig)
    return paths


def colours(plt, n):
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return [cycle[i % len(cycle)] for i in range(n)]


def order_by(values, order):
    return sorted(values, key=lambda v: (order.index(v) if v in order else len(order), str(v)))


# ---- roofline: chip.json -----------------------------------------------------------------------

def read_roofline(data, where):
    runs, roofs = [], {}
    for w, r in entries(data, "results", where):
        preset, memory = get(r, "preset", w, "string"), get(r, "memory", w, "string")
        m, k, n, cycles, fpc, peak, bw, comp = nums(
            r, w, "m", "k", "n", "cycles", "flops_per_cycle", "peak_flops_per_cycle",
            "memory_bytes_per_cycle", "compulsory_bytes")
        if comp <= 0 or peak <= 0 or bw <= 0:
            raise ReportError(f"{w}: compulsory_bytes, peak_flops_per_cycle and memory_bytes_per_cycle "
                              "must be positive")
        moved = get(r, "hbm_bytes", w, optional=True)
        roofs.setdefault((preset, memory), (peak, bw))
        runs.append({"preset": preset, "memory": memory, "shape": (m, k, n), "flops_per_cycle": fpc,
                     "intensity": 2 * m * k * n / comp,
                     "moved_intensity": 2 * m * k * n / moved if moved else None,
                     "fraction": get(r, "fraction_of_roofline", w, optional=True), "kind": "bench"})
    notes = []
    for w, r in entries(data, "loops", where, optional=True, allow_empty=True):
        preset = get(r, "preset", w, "string")
        m, k, n, cycles = nums(r, w, "m", "k", "n", "cycles")
        roof = [(mem, v) for (p, mem), v in roofs.items() if p == preset]
        if not roof or cycles <= 0:
            notes.append(f"{w}: no results entry for preset '{preset}' to take its roofline from; not drawn")
            continue
        memory, (peak, bw) = roof[0]
        comp = 4 * (m * k + k * n + m * n)  # A and W read once, C written once, 4 bytes an element
        fpc = 2 * m * k * n / cycles
        bound = max(2 * m * k * n / peak, comp / bw)
        runs.append({"preset": preset, "memory": memory, "shape": (m, k, n), "flops_per_cycle": fpc,
                     "intensity": 2 * m * k * n / comp, "moved_intensity": None,
                     "fraction": bound / cycles, "kind": "loop"})
    return {"runs": runs, "roofs": roofs, "notes": notes}


def draw_roofline(plt, d):
    fig, ax = plt.subplots(figsize=(10.5, 5))
    keys = list(d["roofs"])
    colour = dict(zip(keys, colours(plt, len(keys))))
    xs = [r["intensity"] for r in d["runs"]] + [r["moved_intensity"] for r in d["runs"] if r["moved_intensity"]]
    xs += [peak / bw for peak, bw in d["roofs"].values()]
    lo, hi = min(xs) / 4, max(xs) * 4
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for key in keys:
        peak, bw = d["roofs"][key]
        ax.plot(grid, [min(peak, x * bw) for x in grid], color=colour[key], lw=1.8,
                label=f"roofline {key[0]} ({key[1]}): {peak:g} FLOP/cycle, {bw:g} B/cycle")
        ax.axvline(peak / bw, color=colour[key], lw=0.8, ls=":")
    moved_label = "the same run at its measured traffic (hbm_bytes)"
    for r in d["runs"]:
        c = colour[(r["preset"], r["memory"])]
        m, k, n = r["shape"]
        shape = f"{m}^3" if m == k == n else f"{m}x{k}x{n}"
        frac = f", {r['fraction']:.3f} of roofline" if r["fraction"] is not None else ""
        what = "loop program" if r["kind"] == "loop" else "bench"
        ax.plot(r["intensity"], r["flops_per_cycle"], ls="none", color=c, ms=8, mec="black", mew=0.6,
                marker="s" if r["kind"] == "loop" else "o",
                label=f"{r['preset']} {shape} ({what}){frac}")
        mi = r["moved_intensity"]
        if mi and abs(mi / r["intensity"] - 1) > 0.01:
            ax.plot([mi, r["intensity"]], [r["flops_per_cycle"]] * 2, color=c, lw=0.8, ls="--")
            ax.plot(mi, r["flops_per_cycle"], ls="none", marker="o", ms=7, mfc="none", color=c,
                    label=moved_label)
            moved_label = None
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP per compulsory byte: 2mkn / 4(mk + kn + mn))")
    ax.set_ylabel("attainable / achieved (FLOP/cycle)")
    ax.set_title("Chip roofline (chip.json): compiled matmuls on the Verilated chip\n"
                 "dotted: ridge point (peak / memory bandwidth)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    return fig


# ---- MXU: mxu.json -----------------------------------------------------------------------------

def read_mxu(data, where):
    rows = []
    for w, r in entries(data, "results", where):
        rows.append({"preset": get(r, "preset", w, "string"), "n": get(r, "n", w),
                     "utilization": get(r, "utilization", w), "macs_per_s": get(r, "sim_macs_per_s", w)})
    return rows


def draw_mxu(plt, rows):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 4))
    names = [f"{r['preset']}\n(n = {r['n']:g})" for r in rows]
    xs = range(len(rows))
    c = colours(plt, 2)
    bars = a1.bar(xs, [r["utilization"] for r in rows], color=c[0], label="utilization: MACs / (n^2 x cycles)")
    for b, r in zip(bars, rows):
        a1.annotate(f"{r['utilization']:.4f}", (b.get_x() + b.get_width() / 2, b.get_height() - 0.03),
                    ha="center", va="top", fontsize=8, color="white")
    a1.axhline(1.0, color="black", lw=0.8, ls="--", label="peak (one n x n MAC step per cycle)")
    a1.set_ylim(0, 1.15)
    a1.set_xticks(list(xs), names)
    a1.set_xlabel("preset")
    a1.set_ylabel("MXU utilization (fraction of peak)")
    a1.set_title("MXU utilization per preset")
    a1.legend(fontsize=7, loc="lower right")
    bars = a2.bar(xs, [r["macs_per_s"] / 1e6 for r in rows], color=c[1], label="simulated MACs per wall-clock second")
    for b, r in zip(bars, rows):
        a2.annotate(f"{r['macs_per_s'] / 1e6:.1f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center", va="bottom", fontsize=8)
    a2.set_xticks(list(xs), names)
    a2.set_xlabel("preset")
    a2.set_ylabel("simulation speed (M MAC/s, one thread)")
    a2.set_title("Verilated tp_mxu simulation speed")
    a2.set_ylim(0, max(r["macs_per_s"] for r in rows) / 1e6 * 1.2)
    a2.legend(fontsize=7, loc="lower right")
    fig.suptitle("MXU benchmark (mxu.json): back-to-back weight tiles through tp_mxu")
    fig.tight_layout()
    return fig


# ---- HBM: hbm.json -----------------------------------------------------------------------------

def read_hbm(data, where):
    rows = []
    for w, r in entries(data, "results", where):
        row = {"pattern": get(r, "pattern", w, "string")}
        for f in ("bytes", "cycles", "bandwidth_fraction", "bound_fraction", "avg_read_latency",
                  "p99_read_latency", "avg_write_latency", "p99_write_latency"):
            row[f] = get(r, f, w)
        if row["cycles"] <= 0:
            raise ReportError(f"{w}: field 'cycles' must be positive")
        rows.append(row)
    simulated = get(data, "simulated", where, "string", optional=True)
    return {"rows": rows, "simulated": simulated}


def draw_hbm(plt, d):
    rows = d["rows"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.4))
    xs = list(range(len(rows)))
    names = [r["pattern"] for r in rows]
    c = colours(plt, 5)
    bw = [r["bytes"] / r["cycles"] for r in rows]
    peaks = [b / r["bandwidth_fraction"] for b, r in zip(bw, rows) if r["bandwidth_fraction"] > 0]
    peak = max(peaks) if peaks else None
    a1.bar(xs, bw, color=c[0], width=0.6, label="achieved (bytes / cycles)")
    if peak:
        a1.plot(xs, [r["bound_fraction"] * peak for r in rows], ls="none", marker="_", ms=22, mew=2.5,
                color="black", label="the pattern's bound (refresh, tFAW)")
        a1.axhline(peak, color="grey", ls="--", lw=0.8, label=f"peak: {peak:.3g} B/cycle (data bus always busy)")
        a1.set_ylim(0, peak * 1.2)
    a1.set_xticks(xs, names, rotation=25, ha="right")
    a1.set_xlabel("access pattern")
    a1.set_ylabel("bandwidth (bytes/cycle)")
    a1.set_title("bandwidth per pattern")
    a1.legend(fontsize=7, loc="upper right")
    width = 0.2
    series = [("avg_read_latency", "read, average"), ("p99_read_latency", "read, p99"),
              ("avg_write_latency", "write, average"), ("p99_write_latency", "write, p99")]
    for i, (f, label) in enumerate(series):
        a2.bar([x + (i - 1.5) * width for x in xs], [r[f] for r in rows], width=width, color=c[i + 1], label=label)
    a2.set_xticks(xs, names, rotation=25, ha="right")
    a2.set_xlabel("access pattern")
    a2.set_ylabel("latency, acceptance to response (cycles)")
    a2.set_title("latency per pattern (0: the pattern has no such requests)")
    a2.legend(fontsize=7, loc="upper left")
    sim = f", {d['simulated']}" if d["simulated"] else ""
    fig.suptitle(f"HBM controller benchmark (hbm.json{sim})")
    fig.tight_layout()
    return fig


# ---- ICI: ici.json -----------------------------------------------------------------------------

def read_ici(data, where):
    def key(e, w):  # one panel per router configuration and torus size
        return (get(e, "variant", w, "string", optional=True) or "", get(e, "k", w),
                get(e, "vcs", w), get(e, "buffer_flits", w), get(e, "packet_flits", w))

    panels = {}
    for w, r in entries(data, "results", where):
        kk = key(r, w)
        pattern = get(r, "pattern", w, "string")
        offered = get(r, "offered", w)
        acc = get(r, "accepted", w, nullable=True)
        lat = get(r, "avg_latency", w, nullable=True)
        if acc is not None and lat is not None:  # a point where nothing was measured has nulls
            panels.setdefault(kk, {}).setdefault(pattern, []).append((offered, acc, lat))
    summary = {}
    for w, s in entries(data, "summary", where, optional=True, allow_empty=True):
        kk = key(s, w)
        summary.setdefault(kk, []).append({
            "pattern": get(s, "pattern", w, "string"),
            "saturation": get(s, "saturation", w, nullable=True),
            "ideal_uniform": get(s, "ideal_uniform", w, optional=True, nullable=True)})
    if not panels:
        raise ReportError(f"{where}: no result has both 'accepted' and 'avg_latency'")
    return {"panels": panels, "summary": summary}


def draw_ici(plt, d):
    panels, summary = d["panels"], d["summary"]
    patterns = order_by({p for lines in panels.values() for p in lines}, PATTERN_ORDER)
    colour = dict(zip(patterns, colours(plt, len(patterns))))
    keys = sorted(panels, key=lambda k: (k[1], k[0]))  # a row per torus size
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    height = 3.3 * rows + 0.8
    fig, axes = plt.subplots(rows, cols, figsize=(4.1 * cols, height), squeeze=False)
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)
    for ax, kk in zip(axes.flat, keys):
        variant, k, vcs, buf, pkt = kk
        lines = panels[kk]
        lat_min = min(p[2] for ps in lines.values() for p in ps)
        cap = max(min(5 * lat_min, 200.0), 2 * lat_min)  # latencies far past saturation are clipped
        top = min(max(p[2] for ps in lines.values() for p in ps), cap) * 1.05
        for s in summary.get(kk, []):
            if s["pattern"] in lines and s["saturation"]:
                ax.axvline(s["saturation"], color=colour[s["pattern"]], ls="--", lw=0.8, alpha=0.6)
        ideal = next((s["ideal_uniform"] for s in summary.get(kk, []) if s["ideal_uniform"]), None)
        if ideal:
            ax.axvline(ideal, color="grey", ls=":", lw=1)
        for p in order_by(lines, PATTERN_ORDER):
            pts = sorted(lines[p])
            ax.plot([a for _, a, _ in pts], [min(lat, top) for _, _, lat in pts], color=colour[p], lw=1.3,
                    marker="o", ms=2.5, label=p)
            clipped = [(a, lat) for _, a, lat in pts if lat > top]
            if clipped:
                ax.plot([a for a, _ in clipped], [top] * len(clipped), ls="none", marker="^", ms=5,
                        color=colour[p], clip_on=False)
        ax.set_ylim(0, top)
        ax.set_xlim(0, None)
        size = f"{k:g}x{k:g}"
        ax.set_title(f"{size}, {variant + ': ' if variant else ''}{vcs:g} VCs x {buf:g} flits, {pkt:g}-flit packets",
                     fontsize=8.5)
        ax.set_xlabel("accepted throughput (flits/node/cycle)")
        ax.set_ylabel("average latency (cycles)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    for ax in axes.flat[1:len(keys)]:
        for h, l in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(l, h)
    extra = [plt.Line2D([], [], color="black", ls="--", lw=0.8), plt.Line2D([], [], color="grey", ls=":"),
             plt.Line2D([], [], color="black", ls="none", marker="^")]
    fig.legend(list(seen.values()) + extra,
               list(seen) + ["saturation (pattern's colour)", "ideal uniform throughput (8/k)",
                             "latency above the panel (clipped)"],
               loc="upper center", ncol=min(9, len(seen) + 3), fontsize=7.5, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.28 / height))
    fig.suptitle("ICI router (ici.json): latency against accepted throughput, offered load swept to 1.0",
                 y=1 - 0.05 / height)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.22 / height))  # the suptitle is made room for, not the legend
    return fig


# ---- collectives: collectives.json -------------------------------------------------------------

def read_collectives(data, where):
    lines, link = {}, {}
    for w, r in entries(data, "results", where):
        coll = get(r, "collective", w, "string")
        pod, backend = get(r, "pod", w, "string"), get(r, "backend", w, "string")
        size, busbw = get(r, "bytes", w), get(r, "busbw", w)
        lines.setdefault(coll, {}).setdefault((pod, backend), []).append((size, busbw))
        lb = get(r, "link_bytes_per_cycle", w, optional=True)
        if lb:
            link[coll] = max(link.get(coll, 0), lb)
    return {"lines": lines, "link": link}


def pod_order(key):
    pod, backend = key
    try:
        x, y = (int(v) for v in pod.split("x"))
    except ValueError:
        x, y = 0, 0
    return (x * y, pod, backend)


def draw_collectives(plt, d):
    colls = order_by(d["lines"], COLLECTIVE_ORDER)
    fig, axes = plt.subplots(1, len(colls), figsize=(4.2 * len(colls), 3.9), squeeze=False)
    all_keys = sorted({k for c in colls for k in d["lines"][c]}, key=pod_order)
    colour = dict(zip(all_keys, colours(plt, len(all_keys))))
    top = max(b for c in colls for ps in d["lines"][c].values() for _, b in ps)
    top = max([top] + list(d["link"].values())) * 1.15
    for ax, c in zip(axes.flat, colls):
        for key in sorted(d["lines"][c], key=pod_order):
            pts = sorted(d["lines"][c][key])
            ax.plot([s for s, _ in pts], [b for _, b in pts], marker="o", ms=4, color=colour[key],
                    label=f"{key[0]} {key[1]}")
        if c in d["link"]:
            ax.axhline(d["link"][c], color="black", ls="--", lw=0.8, label=f"one link: {d['link'][c]:g} B/cycle")
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, top)
        ax.set_title(c.replace("_", "-"))
        ax.set_xlabel("size (bytes per chip, nccl-tests' convention)")
        ax.set_ylabel("busbw (bytes/cycle)")
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Ring collectives (collectives.json): busbw against size, per pod and backend")
    fig.tight_layout()
    return fig


# ---- pod: pod.json -----------------------------------------------------------------------------

def read_pod(data, where):
    lines = {}
    for w, r in entries(data, "results", where):
        if get(r, "test", w, "string") != "transfer":
            continue  # the neighbour exchange and the simulation speed are single figures
        preset = get(r, "preset", w, "string")
        hops, size, cycles, frac = nums(r, w, "hops", "bytes", "cycles", "fraction_of_link_peak")
        lines.setdefault((preset, hops), []).append((size, cycles, frac))
    if not lines:
        raise ReportError(f"{where}: no result with \"test\": \"transfer\"")
    return lines


def draw_pod(plt, lines):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    keys = sorted(lines, key=lambda k: (k[0] != "tiny", k[0], k[1]))
    colour = dict(zip(keys, colours(plt, len(keys))))
    for key in keys:
        pts = sorted(lines[key])
        label = f"{key[0]}, {key[1]:g} hop{'s' if key[1] != 1 else ''}"
        a1.plot([s for s, _, _ in pts], [c for _, c, _ in pts], marker="o", ms=4, color=colour[key], label=label)
        a2.plot([s for s, _, _ in pts], [f for _, _, f in pts], marker="o", ms=4, color=colour[key], label=label)
    for ax in (a1, a2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("transfer size (bytes)")
        ax.legend(fontsize=7)
    a1.set_yscale("log", base=2)
    a1.set_ylabel("latency (cycles)")
    a1.set_title("latency: the receiver's cycles until data and semaphore are in", fontsize=9)
    a2.set_ylim(0, 1.05)
    a2.set_ylabel("fraction of one link's peak")
    a2.set_title("bits / (cycles x flit bits)", fontsize=9)
    a2.legend(fontsize=7, loc="lower right")
    fig.suptitle("Pod ICI transfers (pod.json): one chip sends to the chip h hops away on a 1 x 2h ring")
    fig.tight_layout()
    return fig


# ---- training: train.json ----------------------------------------------------------------------

def read_train(data, where):
    runs = []
    for w, r in entries(data, "results", where):
        run = {"slice": get(r, "slice", w, "string"), "preset": get(r, "preset", w, "string"),
               "backend": get(r, "backend", w, "string"),
               "cycles_per_step": get(r, "cycles_per_step", w),
               "collective_fraction": get(r, "collective_fraction", w)}
        loss = get(r, "loss", w, "list")
        if not loss:
            raise ReportError(f"{w}: field 'loss' is an empty list")
        for i, v in enumerate(loss):
            if not _kind_ok(v, "number"):
                raise ReportError(f"{w}: field 'loss'[{i}] is {json.dumps(v)[:40]}, expected a number")
        steps = r.get("steps") if isinstance(r, dict) else None
        if isinstance(steps, list):
            steps = get(r, "steps", w, "list")
            if len(steps) != len(loss) or not all(_kind_ok(s, "number") for s in steps):
                raise ReportError(f"{w}: field 'steps' is a list but not {len(loss)} numbers, one per loss")
            xs = steps
        else:
            n = get(r, "steps", w)  # the number of steps; the losses are spread evenly over them
            xs = [(i + 1) * n / len(loss) for i in range(len(loss))]
        run["steps"], run["loss"] = xs, loss
        runs.append(run)
    return runs


def draw_train(plt, runs):
    fig, ax = plt.subplots(figsize=(7, 4.3))
    for r, c in zip(runs, colours(plt, len(runs))):
        ax.plot(r["steps"], r["loss"], color=c, marker="o" if len(r["loss"]) <= 40 else None, ms=3,
                label=f"{r['slice']} {r['preset']} {r['backend']}: {r['cycles_per_step']:.0f} cycles/step, "
                      f"{100 * r['collective_fraction']:.1f}% in collectives")
    ax.set_xlabel("training step")
    ax.set_ylabel("loss (the training's loss function, unitless)")
    ax.set_title("Training (train.json): loss per step")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


READERS = {"roofline": read_roofline, "mxu": read_mxu, "hbm": read_hbm, "ici": read_ici,
           "collectives": read_collectives, "pod": read_pod, "train": read_train}
DRAWERS = {"roofline": draw_roofline, "mxu": draw_mxu, "hbm": draw_hbm, "ici": draw_ici,
           "collectives": draw_collectives, "pod": draw_pod, "train": draw_train}


def parse_args(argv):
    ap = argparse.ArgumentParser(prog=PROG, description="Draw build/reports/*.json as PNG and SVG plots.")
    ap.add_argument("--reports", default="build/reports", metavar="DIR", help="the JSON reports (default: %(default)s)")
    ap.add_argument("--out", default="build/reports/plots", metavar="DIR",
                    help="where NAME.png and NAME.svg go (default: %(default)s)")
    ap.add_argument("--only", metavar="NAMES", help=f"comma-separated plots to draw, of: {', '.join(PLOTS)}")
    ap.add_argument("--ici-svg", metavar="FILE", help="also write the ICI plot to FILE as SVG")
    args = ap.parse_args(argv)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        bad = [n for n in names if n not in PLOTS]
        if bad:
            ap.error(f"--only: unknown plot {', '.join(bad)} (known: {', '.join(PLOTS)})")
        args.only = names
    else:
        args.only = list(PLOTS)
    return args


def main(argv):
    args = parse_args(argv)
    if not os.path.isdir(args.reports):
        sys.exit(f"{PROG}: no reports directory {args.reports} (make bench writes build/reports)")
    plt = import_pyplot()
    errors, found = [], 0
    for name in args.only:
        path = os.path.join(args.reports, PLOTS[name])
        if not os.path.exists(path):
            print(f"{PROG}: no {path}, skipping the {name} plot")
            continue
        found += 1
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            errors.append(f"{path}: not a readable JSON file: {e}")
            continue
        try:
            parsed = READERS[name](data, path)
        except ReportError as e:
            errors.append(str(e))
            continue
        for note in parsed.get("notes", []) if isinstance(parsed, dict) else []:
            print(f"{PROG}: {note}")
        fig = DRAWERS[name](plt, parsed)
        paths = save(plt, fig, args.out, name, args.ici_svg if name == "ici" else None)
        print(f"{PROG}: wrote {', '.join(paths)}")
    for e in errors:
        print(f"{PROG}: error: {e}", file=sys.stderr)
    if errors:
        return 1
    if found == 0:
        print(f"{PROG}: error: none of {', '.join(PLOTS[n] for n in args.only)} in {args.reports} "
              "(make bench writes them)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
