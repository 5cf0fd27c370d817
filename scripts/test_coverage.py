#!/usr/bin/env python3
"""scripts/coverage.py (make coverage) on hand-written Verilator coverage files: two runs merged
(a point hit in either counts), per module line (line and branch points) and toggle percentages,
the lowered copies' points left out, an empty directory refused; waivers: a waived point leaves
the figure, a waiver of a point that toggled or of no point is an error, a malformed rule is
refused. Usage: test_coverage.py"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = {}  # source name -> its path in the test's folder


def point(f, line, n, page, o, count):
    keys = "".join(f"\x01{k}\x02{v}" for k, v in (("f", SRC[f]), ("l", line), ("n", n), ("page", page), ("o", o),
                                                    ("h", "TOP.x")))
    return f"C '{keys}' {count}\n"


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        dat = os.path.join(d, "dat")
        os.mkdir(dat)
        os.mkdir(os.path.join(d, "lowered_x"))
        for name in ("a.sv", "b.sv", "lowered_x/a.sv"):  # the annotated report reads the sources
            SRC[name] = os.path.join(d, name)
            with open(SRC[name], "w") as f:
                f.write("".join(f"// line {i}\n" for i in range(1, 11)))
        runs = [
            [point("a.sv", 3, 1, "v_line/ma", "block", 5), point("a.sv", 4, 2, "v_branch/ma", "if", 0),
             point("a.sv", 5, 3, "v_branch/ma", "else", 0), point("a.sv", 1, 4, "v_toggle/ma", "x", 2),
             point("b.sv", 7, 5, "v_toggle/mb", "y", 0), point("b.sv", 9, 5, "v_toggle/mb", "z[1][3]", 0),
             point("b.sv", 9, 5, "v_toggle/mb", "z[1][4]", 2)],
            [point("a.sv", 4, 2, "v_branch/ma", "if", 3), point("b.sv", 7, 5, "v_toggle/mb", "y", 0),
             point("b.sv", 8, 6, "v_line/mb", "block", 1),
             # a lowered copy of a.sv (yosys_lower.py, Verilated by its own test): left out
             point("lowered_x/a.sv", 3, 1, "v_line/ma", "block", 0), point("lowered_x/a.sv", 9, 1, "v_line/ma", "block", 1)],
        ]
        for i, pts in enumerate(runs):
            with open(os.path.join(dat, f"cov_{i}.dat"), "w", encoding="latin-1") as f:
                f.write("# SystemC::Coverage-3\n" + "".join(pts))
        out = os.path.join(d, "coverage.json")
        p = subprocess.run([sys.executable, os.path.join(HERE, "coverage.py"), "--dat", dat, "--out", out,
                            "--annotate", os.path.join(d, "annotated")], capture_output=True, text=True)
        if p.returncode != 0:
            failures.append(f"exit {p.returncode}: {p.stdout}{p.stderr}")
        else:
            full = json.load(open(out))
            if full.get("lowered_points_ignored") != 2:
                failures.append(f"lowered points ignored: {full.get('lowered_points_ignored')}, want 2")
            rep = {r["module"]: r for r in full["results"]}
            want = {"ma": (2, 3, 100.0, 1), "mb": (1, 1, 33.33, 3)}  # line hit, line points, toggle %, toggle points
            for mod, (lh, lp, tg, tp) in want.items():
                r = rep.get(mod)
                if not r or (r["line_hit"], r["line_points"], r["toggle"], r["toggle_points"]) != (lh, lp, tg, tp):
                    failures.append(f"{mod}: {r}, want line {lh}/{lp}, toggle {tg}% of {tp}")
        # Waivers: z's bit 3 cannot move, so mb's toggle figure is 1 of 2 points
        def run_waivers(text):
            path = os.path.join(d, "waivers.txt")
            with open(path, "w") as f:
                f.write(text)
            return subprocess.run([sys.executable, os.path.join(HERE, "coverage.py"), "--dat", dat, "--out", out,
                                   "--waivers", path], capture_output=True, text=True)
        p = run_waivers("# a comment\n\nm[b] z\\[1\\] 0-1,3,7-9 tied to 0 in every test preset  # why\n")
        r = {r["module"]: r for r in json.load(open(out))["results"]}.get("mb", {}) if p.returncode == 0 else {}
        if (r.get("toggle"), r.get("toggle_waived"), r.get("toggle_raw")) != (50.0, 1, 33.33):
            failures.append(f"waived z[1][3]: exit {p.returncode} {p.stderr!r}, {r}")
        for text, want in (("mb z * moves\n", "waives mb.z[1][4]"), ("mb q * gone\n", ":1 matches no toggle point"),
                           ("mb z 3-3 ok\nmb z\\[0\\] * another index\n", ":2 matches no toggle point"),
                           ("mb z 3-3\n", ":1: want `module signal bits reason`"), ("mb z 4-3 x\n", "lo <= hi"),
                           ("mb z 3,x y\n", "lo <= hi"), ("mb z 1-2,4 moves\n", "waives mb.z[1][4]"),
                           ("mb z( * x\n", "bad regular expression")):
            p = run_waivers(text)
            if p.returncode == 0 or want not in p.stderr:
                failures.append(f"waivers {text.strip()!r}: exit {p.returncode}, {p.stderr!r}, want {want!r}")
        empty = os.path.join(d, "empty")
        os.mkdir(empty)
        p = subprocess.run([sys.executable, os.path.join(HERE, "coverage.py"), "--dat", empty, "--out", out],
                           capture_output=True, text=True)
        if p.returncode == 0 or "no coverage files" not in p.stderr:
            failures.append(f"an empty directory: exit {p.returncode}, {p.stderr!r}")
    for f in failures:
        print("FAIL:", f)
    print("coverage script:", "ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
