#!/usr/bin/env python3
"""Compare two chips' runs of one program, instruction by instruction (docs/scale.md).

The input is Chrome traces as `tensorpod run --trace` and `scale_bench --part chip --trace`
write them (one process per chip, a track per unit queue, times in cycles). The two runs are
either the first two chips of one file (scale_bench's: the RTL chip, then the fast one) or the
first chip of each of two files. Each unit queue's instructions are paired in order (the k-th
on one side with the k-th on the other: a queue runs its instructions in program order), and
the script prints

  - per unit: the instructions, their busy cycles on each side, the end of the last one;
  - per PC: how often it ran and its mean duration and mean start lag on each side, the PCs
    whose duration differs most first (for loop programs: which instruction of the loop body
    the two models time differently);
  - the instructions where the second run's lag behind the first grew the most, with the
    instruction before on the same queue (where the two start to diverge);
  - with --all, every instruction.

Exit status 2 on a bad file or when the two runs do not have the same instructions.
"""
import argparse
import json
import sys
from collections import defaultdict

UNITS = ["load", "mxu", "vec", "store", "ici"]


def die(msg):
    print(f"trace_diff: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: {e}")
    ev = d.get("traceEvents") if isinstance(d, dict) else None
    if not isinstance(ev, list):
        die(f"{path}: not a Chrome trace of tensorpod's (no traceEvents list)")
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    chips = defaultdict(lambda: defaultdict(list))
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") not in UNITS:
            continue
        a = e.get("args", {})
        chips[e["pid"]][e["cat"]].append((e["ts"], e["dur"], a.get("pc"), a.get("instr", e.get("name"))))
    for c in chips.values():
        for q in c.values():
            q.sort(key=lambda s: s[0])  # a queue's slices start in program order
    return [(names.get(pid, f"pid {pid}"), chips[pid]) for pid in sorted(chips)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", help="one trace with two chips, or two traces")
    ap.add_argument("--top", type=int, default=12, help="rows in each ranking (default 12)")
    ap.add_argument("--all", action="store_true", help="print every instruction")
    o = ap.parse_args()
    if len(o.traces) > 2:
        die("one trace with two chips, or two traces")
    runs = load(o.traces[0])
    if len(o.traces) == 2:
        runs = runs[:1] + load(o.traces[1])[:1]
    if len(runs) < 2:
        die("need two chips' runs (scale_bench --trace writes both in one file; else give two files)")
    (na, a), (nb, b) = runs[0], runs[1]
    print(f"A: {na}\nB: {nb}\n")

    print(f"{'unit':<6} {'instrs':>7} {'A busy':>10} {'B busy':>10} {'A end':>10} {'B end':>10} {'B-A end':>9}")
    pairs = []  # (unit, k, A slice, B slice)
    for u in UNITS:
        qa, qb = a.get(u, []), b.get(u, [])
        if not qa and not qb:
            continue
        if len(qa) != len(qb):
            die(f"unit {u}: {len(qa)} instructions in A, {len(qb)} in B: not the same program")
        for k, (sa, sb) in enumerate(zip(qa, qb)):
            if sa[2] != sb[2]:
                die(f"unit {u}, instruction {k}: pc {sa[2]} in A, {sb[2]} in B: not the same program")
            pairs.append((u, k, sa, sb))
        end_a = max(s[0] + s[1] for s in qa)
        end_b = max(s[0] + s[1] for s in qb)
        print(f"{u:<6} {len(qa):>7} {sum(s[1] for s in qa):>10} {sum(s[1] for s in qb):>10} {end_a:>10} {end_b:>10} "
              f"{end_b - end_a:>+9}")

    by_pc = defaultdict(lambda: [0, 0, 0, 0, None, None])  # count, A dur, B dur, lag sum, unit, instr
    for u, k, sa, sb in pairs:
        r = by_pc[sa[2]]
        r[0] += 1
        r[1] += sa[1]
        r[2] += sb[1]
        r[3] += sb[0] - sa[0]
        r[4], r[5] = u, sa[3]
    print(f"\nper PC, the largest total duration difference first (B - A):")
    print(f"{'pc':>5} {'unit':<6} {'count':>6} {'A mean':>9} {'B mean':>9} {'B-A total':>10} {'mean lag':>9}  instruction")
    rows = sorted(by_pc.items(), key=lambda kv: -abs(kv[1][2] - kv[1][1]))
    for pc, (n, da, db, lag, u, ins) in rows[: o.top]:
        print(f"{pc:>5} {u:<6} {n:>6} {da / n:>9.1f} {db / n:>9.1f} {db - da:>+10} {lag / n:>+9.1f}  {ins}")

    print(f"\nwhere B's start lag behind A grew most (against the same queue's instruction before):")
    print(f"{'unit':<6} {'k':>6} {'pc':>5} {'A start':>9} {'A dur':>7} {'B start':>9} {'B dur':>7} {'lag':>7} {'grew':>7}  instruction")
    growth = []
    prev = {}
    for u, k, sa, sb in pairs:
        lag = sb[0] - sa[0]
        growth.append((lag - prev.get(u, 0), u, k, sa, sb, lag))
        prev[u] = lag
    for g, u, k, sa, sb, lag in sorted(growth, key=lambda t: -abs(t[0]))[: o.top]:
        print(f"{u:<6} {k:>6} {sa[2]:>5} {sa[0]:>9} {sa[1]:>7} {sb[0]:>9} {sb[1]:>7} {lag:>+7} {g:>+7}  {sa[3]}")

    if o.all:
        print(f"\nevery instruction, in A's start order:")
        print(f"{'unit':<6} {'k':>6} {'pc':>5} {'A start':>9} {'A dur':>7} {'B start':>9} {'B dur':>7} {'lag':>7}  instruction")
        for u, k, sa, sb in sorted(pairs, key=lambda p: (p[2][0], UNITS.index(p[0]))):
            print(f"{u:<6} {k:>6} {sa[2]:>5} {sa[0]:>9} {sa[1]:>7} {sb[0]:>9} {sb[1]:>7} {sb[0] - sa[0]:>+7}  {sa[3]}")


if __name__ == "__main__":
    main()
