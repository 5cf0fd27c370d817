#!/usr/bin/env python3
"""The fast pod against the RTL pod: the pod demo and the collectives (docs/scale.md).

Runs each program with `tensorpod pod --backend rtl` and `--backend fast` (one RTL pod per
process: SystemC cannot restart its kernel), checks both pass, and prints the cycles and the
error (fast - rtl) / rtl. With --out, appends a `calibration` entry per program to that report
(scale.json: program, preset, rtl_cycles, fast_cycles, error). Exits 1 when a run fails.

  scripts/pod_calibration.py --tensorpod build/sw/tensorpod --out build/reports/scale.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from report_util import append_entries

# (name, tensorpod pod arguments): make sim's demo, the same demo on 16 small chips (about 2.5
# minutes on the RTL: every chip sends its block of C to the 15 others, the pod's heaviest
# contention), and test_pod's collectives.
PROGRAMS = [
    ("pod 2x2 demo", ["--pod", "2x2", "--demo", "--seed", "7"]),
    ("pod 4x4 demo", ["--pod", "4x4", "--demo", "--seed", "7"]),
    ("pod 2x2 all_reduce 61 rows", ["--pod", "2x2", "--collective", "all_reduce:61"]),
    ("pod 1x4 all_reduce 50 rows", ["--pod", "1x4", "--collective", "all_reduce:50"]),
    ("pod 4x4 all_reduce 67 rows", ["--pod", "4x4", "--collective", "all_reduce:67"]),
    ("pod 2x2 reduce_scatter 45 rows", ["--pod", "2x2", "--collective", "reduce_scatter:45"]),
    ("pod 4x4 all_gather 5 rows", ["--pod", "4x4", "--collective", "all_gather:5"]),
    ("pod 2x2 broadcast 53 rows", ["--pod", "2x2", "--collective", "broadcast:53"]),
    ("pod 3x3 all_to_all 40 rows", ["--pod", "3x3", "--collective", "all_to_all:40"]),
]


def run(tensorpod, args, backend, tmp):
    report = os.path.join(tmp, f"{backend}.json")
    cmd = [tensorpod, "pod", *args, "--backend", backend, "--report", report]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print(p.stdout)
        print(f"pod_calibration: `{' '.join(cmd)}` exited with {p.returncode}", file=sys.stderr)
        return None
    with open(report) as f:
        data = json.load(f)
    return data["runs"][0], data["preset"]["name"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tensorpod", required=True, help="the tensorpod binary (with the RTL pods)")
    ap.add_argument("--out", help="append `calibration` entries to this JSON report")
    a = ap.parse_args()
    entries, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in PROGRAMS:
            rtl, fast = run(a.tensorpod, args, "rtl", tmp), run(a.tensorpod, args, "fast", tmp)
            if rtl is None or fast is None or not rtl[0]["pass"] or not fast[0]["pass"]:
                bad += 1
                continue
            (r, preset), f = rtl, fast[0]
            err = (f["cycles"] - r["cycles"]) / r["cycles"]
            print(f"{preset:<6} {name:<34} rtl {r['cycles']:>7} fast {f['cycles']:>7} error {100 * err:+6.1f}%")
            entries.append({"program": name, "preset": preset, "rtl_cycles": r["cycles"],
                            "fast_cycles": f["cycles"], "error": err, "pod": True})
    if a.out:
        append_entries(a.out, "calibration", entries)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
