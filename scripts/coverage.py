#!/usr/bin/env python3
"""Merge the coverage a coverage build's tests wrote (make coverage; docs/verification.md,
"Coverage") and report it per RTL module.

Usage: coverage.py --dat DIR --out coverage.json [--annotate DIR]

DIR holds one Verilator coverage file per model run (sw/sim/coverage.h). They are merged with
verilator_coverage into DIR/../merged.dat; --annotate writes verilator_coverage's annotated sources
there. The JSON has, per RTL module (its parameterizations together: a point hit in any of them
is hit) and kind (`line`, `toggle`), the points, how many were hit and the percentage.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys


def parse_points(path):
    """(kind, module, file, line, column, what, count) for every point of a Verilator coverage file."""
    points = []
    with open(path, encoding="latin-1") as f:
        for raw in f:
            if not raw.startswith("C '"):
                continue
            end = raw.rfind("'")
            keys, count = raw[3:end], int(raw[end + 1:].strip())
            fields = {}
            for item in keys.split("\x01"):
                if "\x02" in item:
                    k, v = item.split("\x02", 1)
                    fields[k] = v
            page = fields.get("page", "")
            m = re.match(r"v_(line|toggle|branch|expr|user)/(.*)", page)
            if not m:
                continue
            kind = "line" if m.group(1) in ("line", "branch") else m.group(1)
            points.append((kind, m.group(2), fields.get("f", ""), int(fields.get("l", "0") or 0), fields.get("n", ""),
                           fields.get("o", ""), count))
    return points


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dat", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--annotate")
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.dat, "*.dat")))
    if not files:
        sys.exit(f"coverage: no coverage files in {args.dat} (run the tests of a -DTP_COVERAGE=ON build first)")
    merged = os.path.join(os.path.dirname(os.path.abspath(args.dat)), "merged.dat")
    subprocess.run(["verilator_coverage", "--write", merged] + files, check=True, stdout=subprocess.DEVNULL)
    if args.annotate:
        os.makedirs(args.annotate, exist_ok=True)
        subprocess.run(["verilator_coverage", "--annotate", args.annotate, "--annotate-min", "1", merged], check=True,
                       stdout=subprocess.DEVNULL)
    # Per RTL module: Verilator names each parameterization of a module apart (tp_mxu__N8_A100);
    # their points are one module's, a point (file, line, column, what) hit in any of them is hit.
    # The lowered copies of the RTL (tb/CMakeLists.txt's lowered_<block>/, scripts/yosys_lower.py)
    # are Verilated too, by their own tests: their points are the rewrite's lines, not rtl/'s, and
    # would count every module they hold twice. They are left out.
    modules, seen, lowered = {}, {}, 0
    for kind, module, src, line, col, what, count in parse_points(merged):
        if any(part.startswith("lowered_") for part in os.path.dirname(src).split(os.sep)):
            lowered += 1
            continue
        base = module.split("__")[0]
        m = modules.setdefault(base, {"module": base, "file": os.path.relpath(src) if src else "", "variants": set()})
        m["variants"].add(module)
        key = (base, kind, src, line, col, what)
        seen[key] = seen.get(key, False) or count > 0
    for (base, kind, *_), hit in seen.items():
        k = modules[base].setdefault(kind, {"points": 0, "hit": 0})
        k["points"] += 1
        k["hit"] += hit
    results = []
    for name in sorted(modules):
        m = modules[name]
        for kind in ("line", "toggle"):
            k = m.setdefault(kind, {"points": 0, "hit": 0})
            k["percent"] = round(100.0 * k["hit"] / k["points"], 2) if k["points"] else None
        results.append({"module": name, "file": m["file"], "variants": sorted(m["variants"]),
                        "line": m["line"]["percent"],
                        "toggle": m["toggle"]["percent"], "line_points": m["line"]["points"],
                        "line_hit": m["line"]["hit"], "toggle_points": m["toggle"]["points"],
                        "toggle_hit": m["toggle"]["hit"]})
    report = {"benchmark": "coverage", "runs": len(files), "merged": merged, "annotated": args.annotate,
              "lowered_points_ignored": lowered,
              "goal": {"line": 98.0, "toggle": 80.0}, "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print(f"coverage: {len(files)} model runs merged into {merged}"
          + (f" ({lowered} points of the lowered copies left out)" if lowered else ""))
    print(f"  {'module':<18} {'line %':>8} {'points':>8} {'toggle %':>9} {'points':>8}")
    for r in results:
        fmt = lambda v: f"{v:.1f}" if v is not None else "-"
        print(f"  {r['module']:<18} {fmt(r['line']):>8} {r['line_points']:>8} {fmt(r['toggle']):>9} "
              f"{r['toggle_points']:>8}")
    print(f"coverage: wrote {args.out}" + (f"; annotated sources in {args.annotate}" if args.annotate else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
