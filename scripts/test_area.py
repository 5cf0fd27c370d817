#!/usr/bin/env python3
"""scripts/area.py (make area) in make test: yosys reads every RTL block through the lowering
(scripts/yosys_lower.py) at the smallest sizes, and synthesises the round-robin arbiter at three
sizes: the report has its fields, cell counts are positive and grow with the parameter; bad
options are refused before any synthesis. Usage: test_area.py"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
AREA = os.path.join(HERE, "area.py")


def run(args):
    r = subprocess.run([sys.executable, AREA] + args, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


def unit_checks(failures):
    """The NAND2 table over yosys' generic flop names, and the fit on a known polynomial."""
    sys.path.insert(0, HERE)
    import area
    want = {"$_DFF_P_": 4.522, "$_DFF_PN0_": 5.32, "$_DFFE_PP_": 4.522 + 1.862, "$_DFFE_PN0P_": 5.32 + 1.862,
            "$_SDFF_PP0_": 4.522 + 1.064, "$_SDFFE_PP0P_": 4.522 + 1.064 + 1.862, "$_NAND_": 0.798,
            "$_MUX_": 1.862, "$_DLATCH_P_": None, "$_FOO_": None}
    for cell, um2 in want.items():
        got = area.cell_nand2(cell)
        if (got is None) != (um2 is None) or (um2 is not None and abs(got - um2 / 0.798) > 1e-9):
            failures.append(f"cell_nand2({cell}) = {got}, want {None if um2 is None else um2 / 0.798}")
    f = area.fit([(n, 3 * n * n + 5 * n + 7) for n in (2, 3, 4, 6, 8)], "n2")
    if not f or any(abs(c - w) > 1e-6 for c, w in zip(f["coefficients"], (3, 5, 7))) or f["max_rel_error"] != 0:
        failures.append(f"fit of 3n^2 + 5n + 7: {f and {k: v for k, v in f.items() if k != 'value'}}")
    f = area.fit([(1, 10), (2, 21), (4, 39)], "n")
    if not f or f["max_rel_error"] is None or f["max_rel_error"] <= 0:
        failures.append("a linear fit through points off a line reports no error")


def main():
    failures = []
    unit_checks(failures)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "area.json")
        code, text = run(["--quick", "--work", os.path.join(d, "work"), "--out", out, "--plot", os.path.join(d, "a.png")])
        if code != 0:
            failures.append(f"--quick failed ({code}): {text[-800:]}")
        else:
            rep = json.load(open(out))
            res = rep.get("results", [])
            for e in res:
                for k in ("block", "preset", "cells", "nand2_equivalent", "memory_bits", "synth_seconds"):
                    if k not in e:
                        failures.append(f"result {e.get('block')} lacks {k}")
            cells = [e["cells"] for e in sorted(res, key=lambda e: e["params"]["N"])]
            nand2 = [e["nand2_equivalent"] for e in sorted(res, key=lambda e: e["params"]["N"])]
            if len(cells) != 3 or min(cells) <= 0 or cells != sorted(set(cells)) or nand2 != sorted(set(nand2)):
                failures.append(f"the arbiter's cells do not grow with N: cells {cells}, NAND2 {nand2}")
            if "area_mm2" not in rep or "node_nm" not in rep:
                failures.append("no area_mm2 or node_nm in the report")

        # Every block parses and elaborates (the lowering keeps up with the RTL).
        code, text = run(["--check", "--work", os.path.join(d, "work")])
        if code != 0:
            failures.append(f"--check (yosys reads every block) failed ({code}): {text[-1500:]}")

        # Bad options: refused with a message, before synthesis.
        for args, want in ((["--presets", "nosuch"], "unknown preset"), (["--blocks", "nosuch"], "unknown block"),
                           (["--timeout", "0"], "--timeout")):
            code, text = run(args + ["--work", os.path.join(d, "work"), "--out", os.path.join(d, "x.json")])
            if code == 0 or want not in text or os.path.exists(os.path.join(d, "x.json")):
                failures.append(f"{args}: exit {code}, output {text[-300:]!r} (want a refusal naming {want!r})")
    for f in failures:
        print("FAIL:", f)
    print(f"test_area: {'FAILED' if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
