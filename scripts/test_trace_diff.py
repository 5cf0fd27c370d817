#!/usr/bin/env python3
"""scripts/trace_diff.py on hand-made traces (no simulation): it pairs each queue's instructions
in order, sums their durations per PC, finds where the second run's lag grew, and refuses two runs
of different programs or a file that is not a trace. With --scale-bench PATH, also on a real pair
(scale_bench's RTL and fast runs of tiny's 25x19x13 matmul with bias and ReLU: --only, --trace)
and scale_bench's refusal of an --only that names no program.
Usage: test_trace_diff.py [--scale-bench PATH]"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def trace(chips):
    """chips: list of (name, [(unit, ts, dur, pc, instr)]) -> a Chrome trace as tensorpod writes it."""
    units = ["load", "mxu", "vec", "store", "ici"]
    ev = []
    for pid, (name, slices) in enumerate(chips, 1):
        ev.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}})
        for u, ts, dur, pc, ins in slices:
            ev.append({"ph": "X", "cat": u, "name": ins.split()[0], "pid": pid, "tid": units.index(u), "ts": ts,
                       "dur": dur, "args": {"pc": pc, "instr": ins, "busy": dur, "stall": 0}})
        # a wait slice and a counter, which the script skips
        ev.append({"ph": "X", "cat": "wait", "name": "wait s1", "pid": pid, "tid": 0, "ts": 0, "dur": 3,
                   "args": {"pc": 0, "semaphore": 1, "cycles": 3}})
        ev.append({"ph": "C", "name": "mxu busy", "pid": pid, "ts": 0, "args": {"v": 1}})
    return {"traceEvents": ev, "otherData": {"time_unit": "cycle"}}


RTL = [("load", 1, 10, 0, "dma.ld 0, 0, 10, 1, 1 signal=1"), ("mxu", 12, 20, 1, "mxu.mm 0, 0, 10 wait=1"),
       ("load", 11, 10, 2, "dma.ld 16, 64, 10, 1, 1 signal=1"), ("mxu", 32, 20, 1, "mxu.mm 0, 0, 10 wait=1"),
       ("store", 60, 5, 3, "dma.st 0, 128, 5, 1, 1")]
# The fast run: the second load 6 cycles short, everything after it 6 cycles early.
FAST = [("load", 1, 10, 0, "dma.ld 0, 0, 10, 1, 1 signal=1"), ("mxu", 12, 20, 1, "mxu.mm 0, 0, 10 wait=1"),
        ("load", 11, 4, 2, "dma.ld 16, 64, 10, 1, 1 signal=1"), ("mxu", 26, 20, 1, "mxu.mm 0, 0, 10 wait=1"),
        ("store", 54, 5, 3, "dma.st 0, 128, 5, 1, 1")]


def run(*args):
    return subprocess.run([sys.executable, os.path.join(HERE, "trace_diff.py"), *args], capture_output=True,
                          text=True, timeout=60)


def real_pair(scale_bench, d, failures):
    cmd = [scale_bench, "--part", "chip", "--presets", "tiny", "--sizes", "4", "--random", "0", "--only",
           "25x19x13", "--trace", d, "--out", os.path.join(d, "r.json")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    path = os.path.join(d, "tiny-matmul-25x19x13-bias-relu.json")
    if p.returncode != 0 or not os.path.exists(path):
        failures.append(f"{' '.join(cmd)}: exit {p.returncode}, no {path}\n{p.stdout}{p.stderr}")
        return
    with open(os.path.join(d, "r.json")) as f:
        entries = json.load(f).get("calibration", [])
    if [e["program"] for e in entries] != ["matmul 25x19x13 bias relu"]:
        failures.append(f"--only: want the one program's entry, got {[e['program'] for e in entries]}")
    q = run(path)
    if q.returncode != 0 or "A: rtl chip (0, 0)" not in q.stdout or "B: fast chip (0, 0)" not in q.stdout:
        failures.append(f"trace_diff on scale_bench's trace: exit {q.returncode}\n{q.stdout}{q.stderr}")
    p = subprocess.run(cmd[:-6] + ["--only", "no such program", "--out", os.path.join(d, "r2.json")],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 2 or "no program's name contains it" not in p.stderr:
        failures.append(f"--only with no match: exit {p.returncode}, stderr {p.stderr!r}")


def main():
    failures = []
    args = sys.argv[1:]
    if args and (len(args) != 2 or args[0] != "--scale-bench"):
        print("usage: test_trace_diff.py [--scale-bench PATH]", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        if args:
            real_pair(args[1], d, failures)
        both = os.path.join(d, "both.json")
        with open(both, "w") as f:
            json.dump(trace([("rtl chip (0, 0)", RTL), ("fast chip (0, 0)", FAST)]), f)
        p = run(both, "--all")
        lines = p.stdout.splitlines()
        if p.returncode != 0:
            failures.append(f"exit {p.returncode}\n{p.stdout}{p.stderr}")
        # per unit: load busy 20 against 14, ends 21 and 15
        if not any(l.split()[:6] == ["load", "2", "20", "14", "21", "15"] for l in lines):
            failures.append("no 'load 2 20 14 21 15' row in the unit table\n" + p.stdout)
        # per PC: pc 2 ran once, 10 against 4 cycles, -6 in all, the largest difference first
        pcs = [l.split() for l in lines if l[:5].strip().isdigit()]
        if not pcs or pcs[0][:6] != ["2", "load", "1", "10.0", "4.0", "-6"]:
            failures.append(f"per-PC ranking: want pc 2 first (10.0 against 4.0, -6), got {pcs[:1]}\n" + p.stdout)
        # the lag grew by -6 at the second mxu.mm (mxu, k = 1, pc 1)
        grew = [l.split() for l in lines if l.startswith("mxu ") and len(l.split()) > 8 and l.split()[8] == "-6"]
        if not grew or grew[0][1:3] != ["1", "1"]:
            failures.append("no growth of -6 at mxu instruction 1 (pc 1)\n" + p.stdout)
        # two files, the first chip of each, as one file with both
        a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
        for path, slices in ((a, RTL), (b, FAST)):
            with open(path, "w") as f:
                json.dump(trace([("chip (0, 0)", slices)]), f)
        p2 = run(a, b, "--all")
        if p2.returncode != 0 or p2.stdout.splitlines()[3:] != lines[3:]:
            failures.append(f"two files: exit {p2.returncode}, output differs from the one file's\n{p2.stdout}{p2.stderr}")
        # different programs: refused with the unit and the instruction
        other = FAST[:4] + [("store", 54, 5, 9, "dma.st 0, 256, 5, 1, 1")]
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            json.dump(trace([("rtl", RTL), ("fast", other)]), f)
        p3 = run(bad)
        if p3.returncode != 2 or "pc 3 in A, 9 in B" not in p3.stderr:
            failures.append(f"different programs: exit {p3.returncode}, stderr {p3.stderr!r}")
        short = os.path.join(d, "short.json")
        with open(short, "w") as f:
            json.dump(trace([("rtl", RTL), ("fast", FAST[:4])]), f)
        p4 = run(short)
        if p4.returncode != 2 or "unit store: 1 instructions in A, 0 in B" not in p4.stderr:
            failures.append(f"a missing instruction: exit {p4.returncode}, stderr {p4.stderr!r}")
        # not a trace; one chip only
        junk = os.path.join(d, "junk.json")
        with open(junk, "w") as f:
            f.write("[1, 2")
        p5 = run(junk)
        if p5.returncode != 2 or "junk.json" not in p5.stderr:
            failures.append(f"a broken file: exit {p5.returncode}, stderr {p5.stderr!r}")
        p6 = run(a)
        if p6.returncode != 2 or "two chips" not in p6.stderr:
            failures.append(f"one chip: exit {p6.returncode}, stderr {p6.stderr!r}")
    for f in failures:
        print("FAIL:", f)
    print("test_trace_diff:", "FAIL" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
