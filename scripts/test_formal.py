#!/usr/bin/env python3
"""scripts/formal.py (make formal) in make test: every known bug (formal.py's MUTANTS) must give a
counterexample at the assertion it breaks (for fifo_weak, a weakened invariant: the induction
step's), as a trace file (FST; VCD where gtkwave's vcd2fst is not
installed: make formal installs it, make test does not); a proof's report has its fields; bad
options are refused before any proof runs. The proofs themselves run as the CTest tests
formal.<proof>. Usage: test_formal.py"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FORMAL = os.path.join(HERE, "formal.py")
sys.path.insert(0, HERE)
import formal  # noqa: E402

# The assertion each mutant must break (file, and a piece of the statement's text).
EXPECT = {
    "fifo_wrap": ("rtl/common/tp_fifo.sv", "assert"),
    "fifo_full": ("rtl/common/tp_fifo.sv", "assert"),
    "arb_stuck": ("rtl/common/tp_rr_arb.sv", "assert"),
    "fifo_producer": ("rtl/common/tp_assert_stable.sv", "assert"),
    "fifo_weak": ("rtl/common/tp_fifo.sv", "assert"),
    "link_seq": ("tb/formal/formal_link.sv", "assert"),
}


def run(args):
    r = subprocess.run([sys.executable, FORMAL] + args, capture_output=True, text=True, timeout=900)
    return r.returncode, r.stdout + r.stderr


def main():
    failures = []
    if set(EXPECT) != set(formal.MUTANTS):
        failures.append(f"EXPECT covers {sorted(EXPECT)}, formal.py has {sorted(formal.MUTANTS)}")
    with tempfile.TemporaryDirectory() as d:
        args = ["--quick", "--work", os.path.join(d, "w"), "--out", os.path.join(d, "m.json")]
        for m in formal.MUTANTS:
            args += ["--mutant", m]
        code, text = run(args)
        print(text)
        if code != 0:
            failures.append(f"the mutants did not all fail with a trace ({code})")
        rep = json.load(open(os.path.join(d, "m.json"))) if os.path.exists(os.path.join(d, "m.json")) else {}
        seen = {e.get("mutant"): e for e in rep.get("results", [])}
        for m, (path, piece) in EXPECT.items():
            e = seen.get(m)
            if not e:
                failures.append(f"mutant {m}: no result")
                continue
            if e.get("status") != formal.MUTANT_STATUS.get(m, "failed"):
                failures.append(f"mutant {m}: status {e.get('status')} ({e.get('error', '')})")
                continue
            loc = e.get("assertion") or ""
            if not loc.startswith(path + ":") or piece not in formal.statement(loc):
                failures.append(f"mutant {m}: broke {loc} ({formal.statement(loc)}), want an assertion in {path}")
            trace = e.get("trace")
            if not trace or not os.path.exists(trace) or os.path.getsize(trace) == 0:
                failures.append(f"mutant {m}: no counterexample trace ({trace})")
            elif not trace.endswith(".fst") and shutil.which("vcd2fst"):
                failures.append(f"mutant {m}: the trace is {trace}, not FST, though vcd2fst is there")
            elif not trace.endswith((".fst", ".vcd")):
                failures.append(f"mutant {m}: the trace is {trace}")
            if not isinstance(e.get("depth"), int) or e["depth"] < 1:
                failures.append(f"mutant {m}: no failing cycle ({e.get('depth')})")

        # A proof's report: its fields.
        out = os.path.join(d, "p.json")
        code, text = run(["--quick", "--proofs", "rr_arb_n2", "--work", os.path.join(d, "w"), "--out", out])
        if code != 0:
            failures.append(f"rr_arb_n2 failed ({code}): {text[-600:]}")
        else:
            e = json.load(open(out))["results"][0]
            for k in ("proof", "status", "asserts", "covers", "engines", "seconds", "depth", "what"):
                if k not in e:
                    failures.append(f"the report's result lacks {k}")
            if e.get("status") != "proved" or e.get("asserts", 0) < 5 or e.get("covers", 0) < 1:
                failures.append(f"rr_arb_n2: {e.get('status')}, {e.get('asserts')} assertions, "
                                f"{e.get('covers')} covers")

        # Bad options: exit 2 with a message, at once.
        for bad, msg in ((["--proofs", "nope"], "unknown proof 'nope'"), (["--mutant", "nope"], "unknown mutant"),
                         (["--depth-scale", "0"], "--depth-scale"), (["--timeout", "-1"], "--timeout"),
                         (["--depth-scale", "x"], "invalid float")):
            code, text = run(bad + ["--work", os.path.join(d, "w")])
            if code != 2 or msg not in text:
                failures.append(f"{bad}: exit {code}, want 2 with '{msg}': {text.strip()[-200:]}")
    for f in failures:
        print("FAIL:", f)
    print("scripts.Formal:", "failed" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
