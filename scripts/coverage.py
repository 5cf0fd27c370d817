#!/usr/bin/env python3
"""Merge the coverage a coverage build's tests wrote (make coverage; docs/verification.md,
"Coverage") and report it per RTL module.

Usage: coverage.py --dat DIR --out coverage.json [--annotate DIR] [--waivers FILE]

DIR holds one Verilator coverage file per model run (sw/sim/coverage.h). They are merged with
verilator_coverage into DIR/../merged.dat; --annotate writes verilator_coverage's annotated sources
there. The JSON has, per RTL module (its parameterizations together: a point hit in any of them
is hit) and kind (`line`, `toggle`), the points, how many were hit and the percentage.

FILE (tb/coverage_waivers.txt) lists the toggle points that cannot move, one rule per line:
`module signal bits reason`: module and signal are regular expressions matched whole (the signal
against the point's name without its indices, or with all but the last: `u_pc_o` or
`u_pc_o\\[3\\]` for `u_pc_o[3][17]`), bits the last index's ranges `lo-hi` or single bits,
comma-separated, or `*`, and the reason is required. A waived point leaves the module's toggle
figure; `toggle_raw` keeps the figure without waivers. A rule that matches no point, or a waived
point that did toggle, is an error: the waivers stay true as the RTL and the tests change.
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


def parse_waivers(path):
    """[(lineno, module re, signal re, [(lo, hi)], reason)] of a waivers file (see the docstring)."""
    rules = []
    with open(path, encoding="utf-8") as f:
        for no, raw in enumerate(f, 1):
            line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()  # a comment: # at the start or after a space
            if not line:
                continue
            parts = line.split(None, 3)
            if len(parts) < 4:
                sys.exit(f"coverage: {path}:{no}: want `module signal bits reason`, got {raw.strip()!r}")
            mod, sig, bits, reason = parts
            ranges = []
            for part in bits.split(",") if bits != "*" else []:
                m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
                lo, hi = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (1, 0)
                if lo > hi:
                    sys.exit(f"coverage: {path}:{no}: bits {bits!r}: want ranges lo-hi (lo <= hi) or single bits, "
                             "comma-separated, or *")
                ranges.append((lo, hi))
            try:
                mre, sre = re.compile(mod), re.compile(sig)
            except re.error as e:
                sys.exit(f"coverage: {path}:{no}: bad regular expression: {e}")
            rules.append((no, mre, sre, ranges or [(0, 1 << 62)], reason))
    return rules


def waiver_of(rules, module, what):
    """The first rule waiving toggle point `what` (`sig[i][j]`) of module `module`, or None."""
    m = re.fullmatch(r"([^\[]*)((?:\[\d+\])*)", what)
    name, idx = (m.group(1), re.findall(r"\d+", m.group(2))) if m else (what, [])
    bit = int(idx[-1]) if idx else 0
    names = (name, name + "".join(f"[{i}]" for i in idx[:-1]))  # u_pc_o, and u_pc_o[3] for u_pc_o[3][17]
    for rule in rules:
        if rule[1].fullmatch(module) and any(rule[2].fullmatch(x) for x in names) and \
                any(lo <= bit <= hi for lo, hi in rule[3]):
            return rule
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dat", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--annotate")
    ap.add_argument("--waivers", help="toggle points that cannot move (tb/coverage_waivers.txt)")
    args = ap.parse_args()
    rules = parse_waivers(args.waivers) if args.waivers else []
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
    used, wrong = set(), []
    for (base, kind, src, line, col, what), hit in seen.items():
        k = modules[base].setdefault(kind, {"points": 0, "hit": 0, "waived": 0})
        k["points"] += 1
        k["hit"] += hit
        rule = waiver_of(rules, base, what) if kind == "toggle" else None
        if rule:
            used.add(rule[0])
            k["waived"] += not hit  # a waived point that toggled stays counted, and is an error
            if hit:
                wrong.append(f"{args.waivers}:{rule[0]} waives {base}.{what} ({os.path.relpath(src)}:{line}), "
                             "which toggled")
    wrong += [f"{args.waivers}:{r[0]} matches no toggle point (or only points an earlier rule waives)"
              for r in rules if r[0] not in used]
    results = []
    for name in sorted(modules):
        m = modules[name]
        for kind in ("line", "toggle"):
            k = m.setdefault(kind, {"points": 0, "hit": 0, "waived": 0})
            pct = lambda hit, pts: round(100.0 * hit / pts, 2) if pts else None
            k["raw"] = pct(k["hit"], k["points"])
            k["percent"] = pct(k["hit"], k["points"] - k["waived"])
        results.append({"module": name, "file": m["file"], "variants": sorted(m["variants"]),
                        "line": m["line"]["percent"],
                        "toggle": m["toggle"]["percent"], "line_points": m["line"]["points"],
                        "line_hit": m["line"]["hit"], "toggle_points": m["toggle"]["points"],
                        "toggle_hit": m["toggle"]["hit"], "toggle_waived": m["toggle"]["waived"],
                        "toggle_raw": m["toggle"]["raw"]})
    report = {"benchmark": "coverage", "runs": len(files), "merged": merged, "annotated": args.annotate,
              "lowered_points_ignored": lowered, "waivers": args.waivers, "waiver_errors": wrong,
              "goal": {"line": 98.0, "toggle": 80.0}, "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print(f"coverage: {len(files)} model runs merged into {merged}"
          + (f" ({lowered} points of the lowered copies left out)" if lowered else ""))
    print(f"  {'module':<18} {'line %':>8} {'points':>8} {'toggle %':>9} {'points':>8} {'waived':>7} {'raw %':>6}")
    for r in results:
        fmt = lambda v: f"{v:.1f}" if v is not None else "-"
        print(f"  {r['module']:<18} {fmt(r['line']):>8} {r['line_points']:>8} {fmt(r['toggle']):>9} "
              f"{r['toggle_points']:>8} {r['toggle_waived']:>7} {fmt(r['toggle_raw']):>6}")
    print(f"coverage: wrote {args.out}" + (f"; annotated sources in {args.annotate}" if args.annotate else ""))
    for w in wrong:
        print(f"coverage: waiver error: {w}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
