#!/usr/bin/env python3
"""Bad input to the tensorpod tool (issue "Trust", part 5): each case must be refused at once with
exit 2 and a message that names what is wrong, never a hang, a crash or silent acceptance; and a
few wanted options must work. Usage: test_cli.py path/to/tensorpod"""
import os
import re
import subprocess
import sys
import tempfile

TOOL = os.path.abspath(sys.argv[1])
LIMIT = 20  # seconds: a refusal takes milliseconds; more is a hang or work done before checking


def run(args, cwd, env=None):
    try:
        p = subprocess.run([TOOL] + args, cwd=cwd, capture_output=True, text=True, timeout=LIMIT,
                           env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, p.stdout + p.stderr


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "p.s"), "w") as f:
            f.write("halt\n")
        long_prog = "".join("fence load\n" for _ in range(5000)) + "halt\n"
        with open(os.path.join(d, "long.s"), "w") as f:
            f.write(long_prog)
        code, out = run(["asm", "p.s", "-o", "p.tpb", "--config", "tiny"], d)
        if code != 0:
            print(f"setup: asm p.s failed ({code}): {out}")
            return 1
        os.mkdir(os.path.join(d, "dir"))
        bad = [
            # (arguments, a piece of the message)
            (["run", "--matmul", "100000x100000x100000"], "HBM"),
            (["run", "--matmul", "4096x4096x4096", "--config", "tiny"], "HBM"),
            (["run", "--matmul", "64x64x64", "--config", ""], "empty"),
            (["run", "--matmul", "64x64x64", "--seed", "-1"], "--seed"),
            (["run", "--matmul", "64x64x64", "--seed", "99999999999999999999999"], "--seed"),
            (["run", "--matmul", "64x64x64", "--timeout", "-5"], "--timeout"),
            (["run", "p.tpb", "--seed", "5"], "--seed"),
            (["run", "dir"], "directory"),
            (["run", "nothere.tpb"], "no such file"),
            (["run", "p.tpb", "--hbm-in", "0:dir"], "directory"),
            (["run", "p.tpb", "--hbm-out", "0:4:nofolder/x.bin"], "does not exist"),
            (["run", "--matmul", "8x8x8", "--report", "nofolder/r.json"], "does not exist"),
            (["run", "--matmul", "8x8x8", "--report", "dir"], "directory"),
            (["asm", "dir", "-o", "x.tpb"], "directory"),
            (["asm", "p.s", "-o", "p.s"], "is the input"),
            (["asm", "long.s", "-o", "long.tpb", "--config", "tiny"], "instruction memory"),
            (["compile", "--matmul", "64x64x64", "-o", "nofolder/c.tpb"], "does not exist"),
            (["train", "--steps", "-3"], "--steps"),
            (["train", "--report", "nofolder/t.json"], "does not exist"),
            (["pod", "--program", "dir"], "directory"),
            (["run", "--mlp", "64x32x16", "--slice", "4294967298x1"], "--slice"),
            (["run", "--mlp", "4000000000x4000000000x1", "--slice", "1x1"], "HBM"),
            (["pod", "--bogus"], "--bogus"),
            (["run", "--matmul", "8x8x8", "--trace", "dir"], "directory"),
            (["run", "--matmul", "8x8x8", "--trace", ""], "empty"),
            (["run", "p.tpb", "--trace", "nofolder/t.json"], "does not exist"),
            (["pod", "--pod", "2x2", "--collective", "all_reduce:8", "--trace", "dir"], "directory"),
            (["pod", "--pod", "2x2", "--collective", "broadcast:8", "--algorithm", "torus"], "reduce_scatter or all_gather"),
            (["pod", "--pod", "2x2", "--collective", "all_gather:3", "--algorithm", "torus"], "a row per stream"),
            (["train", "--trace", "nofolder/t.json"], "does not exist"),
            (["run", "--mlp", "64x32x16", "--slice", "1x2", "--trace", "dir"], "directory"),
            (["pod", "--demo", "--backend", "rtl", "--waves", "p.s"], "is a file, not a folder"),
            (["pod", "--demo", "--backend", "rtl", "--waves", "p.s/w"], "cannot be made"),
            (["pod", "--demo", "--backend", "both", "--wave-chip", "9,9"], "no such chip"),
            (["pod", "--demo", "--backend", "both", "--golden-chip", "0,7"], "no such chip"),
            (["run", "--matmul", "8x8x8", "--backend", "quick"], "rtl, golden, fast"),
            (["pod", "--topology", "nopod", "--backend", "fast", "--demo"], "nopod"),
            (["pod", "--topology", "2x2", "--backend", "fast", "--golden-chip", "0,0", "--demo"], "--golden-chip"),
            (["pod", "--demo", "--backend", "both", "--fast-chip", "0,7"], "no such chip"),
            (["pod", "--demo", "--backend", "both", "--rtl-chip", "2,0"], "no such chip"),
            (["pod", "--topology", "2x2", "--backend", "fast", "--rtl-chip", "0,0", "--demo"], "mixed rtl pod"),
            (["pod", "--demo", "--fast-chip", "0,0", "--rtl-chip", "1,1"], "not both"),
            (["pod", "--demo", "--golden-chip", "1,0", "--fast-chip", "1,0"], "both --golden-chip and --fast-chip"),
            (["pod", "--demo", "--golden-chip", "1,0", "--rtl-chip", "1,0"], "both --golden-chip and --rtl-chip"),
            (["run", "--matmul", "8x8x8", "--timing-only"], "--timing-only"),
            (["run", "p.tpb", "--backend", "fast", "--timing-only"], "--timing-only"),
            (["pod", "--demo", "--link-fault-rate", "65536"], "--link-fault-rate"),
            (["pod", "--demo", "--link-fault-rate", "-1"], "--link-fault-rate"),
            (["pod", "--demo", "--backend", "golden", "--link-fault-rate", "100"], "--backend rtl or both"),
            (["pod", "--demo", "--backend", "fast", "--link-bit-error", "1e-3"], "--backend rtl or both"),
        ]
        # The harnesses' wave folder (TP_WAVES, docs/verification.md "Waves"): a file is no folder.
        for env, needle in (({"TP_WAVES": "p.s"}, "is a file, not a folder"),
                            ({"TP_WAVES": "p.s/w"}, "cannot be made")):
            code, out = run(["run", "--matmul", "8x8x8", "--backend", "rtl", "--config", "tiny"], d, env)
            if code != 2 or needle not in out:
                failures.append(f"{env}: exit {code} (want 2), output {out.strip()[-200:]!r} (want {needle!r})")
        for args, needle in bad:
            code, out = run(args, d)
            if code is None:
                failures.append(f"{' '.join(args)}: no answer within {LIMIT} s")
            elif code != 2 or needle not in out:
                failures.append(f"{' '.join(args)}: exit {code} (want 2), output {out.strip()[-200:]!r} "
                                f"(want a message with {needle!r})")
        if os.path.exists(os.path.join(d, "p.s")) and open(os.path.join(d, "p.s")).read() != "halt\n":
            failures.append("asm p.s -o p.s overwrote its source")
        good = [
            (["--version"], "ISA version"),
            (["presets"], "tiny"),
            (["run", "p.tpb", "--backend", "both", "--report", "p.json"], "HBM bit-exact"),
            (["run", "--matmul", "20x9x17", "--bias", "--backend", "both", "--config", "tiny", "--trace", "t.json",
              "--profile", "--report", "r.json"], "op profile: rtl chip (0, 0)"),
            (["run", "--matmul", "64x64x64", "--backend", "fast", "--config", "tiny"], "(fast model)"),
            (["run", "--mlp", "64x32x48x16", "--backend", "fast", "--timing-only", "--config", "tiny"],
             "timing only: no data moved"),
            (["pod", "--demo", "--backend", "rtl", "--golden-chip", "1,0", "--rtl-chip", "0,0"],
             "(+1 golden) (+2 fast)"),
            # the chips' own fault injection: bit-exact still, some link resends (a regular expression)
            (["pod", "--traffic", "3", "--backend", "both", "--link-fault-rate", "2048"],
             re.compile(r"PASS.*\b[1-9][0-9]* retx", re.S)),
        ]
        for args, needle in good:
            code, out = run(args, d)
            found = needle.search(out) if isinstance(needle, re.Pattern) else needle in out
            if code != 0 or not found:
                failures.append(f"{' '.join(args)}: exit {code} (want 0), output {out.strip()[-200:]!r} "
                                f"(want {needle!r})")
        try:  # the trace of the last good case: JSON with both chips' processes and their slices
            import json
            with open(os.path.join(d, "t.json")) as f:
                events = json.load(f)["traceEvents"]
            names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
            if names != {"rtl chip (0, 0)", "golden chip (0, 0)"} or not any(e["ph"] == "X" for e in events):
                failures.append(f"--trace t.json: processes {names}, {len(events)} events")
        except (OSError, KeyError, ValueError) as e:
            failures.append(f"--trace t.json: not a trace ({e})")
        # The reports of the last two good cases: every run has its energy estimate (docs/energy.md),
        # the total the sum of its terms; the RTL's has every unit, the golden one lists what it lacks.
        try:
            import json
            for name in ("p.json", "r.json"):
                with open(os.path.join(d, name)) as f:
                    runs = json.load(f)["runs"]
                for r in runs:
                    e = r["energy"]
                    terms = e["terms"]
                    units = {"mxu", "accumulator", "vmem", "vpu", "hbm", "ici", "frontend"}
                    want = units if r["backend"] == "rtl" else units - {"ici"}
                    if (set(terms) != want or abs(sum(terms.values()) - e["total_pj"]) > 1e-9 * e["total_pj"]
                            or e["total_pj"] <= 0 or e["node_nm"] != 16 or set(e["actions"]) != want
                            or set(e["pj_per_action"]) != units
                            or (name == "r.json" and e["tops_per_watt"] <= 0)
                            or (r["backend"] == "golden") != ("ici" in e["missing"])):
                        failures.append(f"--report {name}: {r['backend']} run's energy {e}")
            if len(runs) != 2:
                failures.append(f"--report r.json: {len(runs)} runs (want 2)")
        except (OSError, KeyError, ValueError, TypeError) as e:
            failures.append(f"--report: no energy in the report ({e})")
        # Ctrl-C: an endless program on the RTL chip stops at once with exit 130 and a report that
        # says it was interrupted.
        with open(os.path.join(d, "spin.s"), "w") as f:
            f.write("top:\n  beq r0, r0, top\nhalt\n")
        code, out = run(["asm", "spin.s", "-o", "spin.tpb", "--config", "tiny"], d)
        interrupt_ok = False
        if code == 0:
            import json
            import select
            import signal
            import time
            # TENSORPOD_PROGRESS=1: the progress line although stderr is not a terminal here.
            p = subprocess.Popen([TOOL, "run", "spin.tpb", "--backend", "rtl", "--timeout", "4000000000",
                                  "--report", "spin.json"], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, env=dict(os.environ, TENSORPOD_PROGRESS="1"))
            # Interrupt once the progress line is there (a loaded machine may take longer than
            # the line's first second to start the run): no fixed sleep.
            seen, deadline = "", time.monotonic() + LIMIT
            while "cycles/s" not in seen and time.monotonic() < deadline and p.poll() is None:
                ready, _, _ = select.select([p.stdout], [], [], 0.5)
                if ready:
                    seen += os.read(p.stdout.fileno(), 4096).decode(errors="replace")
            p.send_signal(signal.SIGINT)
            try:
                out, _ = p.communicate(timeout=LIMIT)
                out = seen + out
                with open(os.path.join(d, "spin.json")) as f:
                    status = json.load(f)["runs"][0]["status"]
                interrupt_ok = p.returncode == 130 and status["interrupted"] and "interrupted" in out
                if not interrupt_ok:
                    failures.append(f"Ctrl-C: exit {p.returncode} (want 130), status {status}, output {out[-200:]!r}")
                if "rtl chip: " not in out or "cycles/s" not in out:
                    failures.append(f"progress: no progress line within {LIMIT} s, output {out[-200:]!r}")
            except subprocess.TimeoutExpired:
                p.kill()
                failures.append(f"Ctrl-C: the run did not stop within {LIMIT} s")
            except (OSError, KeyError, ValueError) as e:
                failures.append(f"Ctrl-C: no usable report ({e})")
        else:
            failures.append(f"setup: asm spin.s failed ({code}): {out}")
    for f in failures:
        print("FAIL:", f)
    total = len(bad) + len(good) + 4  # + the trace file, the reports' energy, Ctrl-C and the progress line
    print(f"{total - len(failures)} of {total} cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
