#!/usr/bin/env python3
"""Test scripts/plots.py on tiny synthetic reports and on the committed sample reports
(tb/plots/reports) (the CTest test scripts.Plots).

Writes a minimal report of every kind to a temporary directory, runs plots.py on it and checks
that every PNG and SVG is written and is one; that a missing report is skipped with a note; that
a malformed report (a missing field, a field of the wrong type, a file that is not JSON) exits
non-zero naming the file and the field, without a traceback, while the other plots are still
drawn; and that a missing matplotlib is a message naming python3-matplotlib, not a traceback.
Exit code 0 when every check passes, 1 otherwise.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PLOTS = os.path.join(HERE, "plots.py")
NAMES = {"roofline": "chip.json", "mxu": "mxu.json", "hbm": "hbm.json", "ici": "ici.json",
         "collectives": "collectives.json", "pod": "pod.json", "train": "train.json"}

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
    return cond


def chip_result(preset, memory, s, n, cycles, mem_bpc):
    flops, peak = 2 * s ** 3, 2 * n * n
    comp = 12 * s * s
    roof = max(flops / peak, comp / mem_bpc)
    return {"preset": preset, "memory": memory, "m": s, "k": s, "n": s, "pass": True, "cycles": cycles,
            "mxu_utilization": flops / peak / cycles, "flops_per_cycle": flops / cycles,
            "peak_flops_per_cycle": peak, "hbm_bytes": comp * 1.25, "compulsory_bytes": comp,
            "memory_bytes_per_cycle": mem_bpc, "roofline_cycles": roof, "fraction_of_roofline": roof / cycles,
            "instructions": 100, "form": "loops", "counters": {"cycles": cycles}}


def reports():
    ici_results, ici_summary = [], []
    for k in (4, 8):
        for pattern, sat in (("uniform", 0.6), ("tornado", 0.15)):
            for offered in (0.1, 0.5, 1.0):
                acc = min(offered, sat)
                ici_results.append({"k": k, "variant": "2vc8", "vcs": 2, "buffer_flits": 8, "packet_flits": 1,
                                    "pattern": pattern, "offered": offered, "accepted": acc,
                                    "avg_latency": 5 + k + (200 if offered > sat else 0)})
            ici_summary.append({"k": k, "variant": "2vc8", "vcs": 2, "buffer_flits": 8, "packet_flits": 1,
                                "pattern": pattern, "saturation": sat, "ideal_uniform": 8 / k})
    ici_results.append({"k": 4, "variant": "2vc8", "vcs": 2, "buffer_flits": 8, "packet_flits": 1,
                        "pattern": "uniform", "offered": 0.01, "accepted": None, "avg_latency": None})
    hbm = []
    for pattern, frac, bound in (("seq_read", 0.92, 0.93), ("random_64B", 0.36, 0.5)):
        hbm.append({"pattern": pattern, "bytes": 3200, "cycles": 3200 / (16 * frac), "bandwidth_fraction": frac,
                    "bound_fraction": bound, "avg_read_latency": 50.0, "p99_read_latency": 90.0,
                    "avg_write_latency": 0.0, "p99_write_latency": 0.0})
    coll = []
    for kind in ("all_reduce", "all_gather"):
        for pod, backend in (("2x2", "rtl"), ("8x8", "golden")):
            for size in (4096, 16384):
                coll.append({"test": "collective", "collective": kind, "pod": pod, "preset": "tiny",
                             "backend": backend, "bytes": size, "cycles": size // 2, "algbw": 2.0,
                             "busbw": 3.0, "link_bytes_per_cycle": 4.0})
    pod = [{"test": "transfer", "pod": f"1x{2 * h}", "preset": "tiny", "backend": "rtl", "hops": h,
            "bytes": b, "cycles": b // 4 + 20, "fraction_of_link_peak": b / (b + 80)}
           for h in (1, 2) for b in (32, 1024)]
    pod.append({"test": "speed", "pod": "2x2", "preset": "tiny", "backend": "rtl", "cycles": 2048})
    return {
        "chip.json": {"benchmark": "chip",
                      "results": [chip_result("tiny", "hbm", 32, 8, 870, 32.0),
                                  chip_result("small", "model", 256, 32, 17635, 128.0)],
                      "loops": [{"preset": "tiny", "m": 256, "k": 256, "n": 256, "pass": True,
                                 "instructions": 250, "cycles": 302236, "mxu_utilization": 0.87},
                                {"preset": "v9", "m": 64, "k": 64, "n": 64, "pass": True,
                                 "instructions": 9, "cycles": 9999, "mxu_utilization": 0.5}]},
        "mxu.json": {"benchmark": "mxu", "results": [
            {"preset": "tiny", "n": 8, "utilization": 0.9998, "sim_macs_per_s": 6.9e7, "cycles": 131099},
            {"preset": "v2", "n": 128, "utilization": 0.988, "sim_macs_per_s": 1.1e8, "cycles": 33155}]},
        "hbm.json": {"benchmark": "hbm", "simulated": "one pseudo-channel", "results": hbm},
        "ici.json": {"benchmark": "ici", "results": ici_results, "summary": ici_summary},
        "collectives.json": {"benchmark": "collectives", "results": coll},
        "pod.json": {"benchmark": "pod", "results": pod},
        "train.json": {"results": [
            {"slice": "2x2", "preset": "tiny", "backend": "golden", "steps": 5, "loss": [2.3, 1.9, 1.4, 1.1, 0.9],
             "cycles_per_step": 12345.0, "collective_fraction": 0.21},
            {"slice": "1x1", "preset": "tiny", "backend": "rtl", "steps": [1, 2, 4], "loss": [2.3, 2.0, 1.5],
             "cycles_per_step": 9000, "collective_fraction": 0.0}]},
    }


def write(d, data):
    os.makedirs(d, exist_ok=True)
    for name, report in data.items():
        with open(os.path.join(d, name), "w") as f:
            json.dump(report, f)


def run(*args, env=None):
    p = subprocess.run([sys.executable, PLOTS, *args], capture_output=True, text=True, env=env, timeout=300)
    return p.returncode, p.stdout, p.stderr


def plot_ok(path, kind):
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return False
    with open(path, "rb") as f:
        head = f.read(4096)
    return head.startswith(b"\x89PNG\r\n\x1a\n") if kind == "png" else b"<svg" in head


def no_traceback(err):
    return "Traceback" not in err


def main():
    tmp = tempfile.mkdtemp(prefix="tp-plots-")
    try:
        data = reports()

        # Every report present and well-formed: every plot written.
        rep, out = os.path.join(tmp, "good"), os.path.join(tmp, "good-out")
        write(rep, data)
        ici_svg = os.path.join(rep, "ici.svg")
        rc, so, se = run("--reports", rep, "--out", out, "--ici-svg", ici_svg)
        check(rc == 0, f"well-formed reports: exit 0 (got {rc}; stderr: {se.strip()[-400:]})")
        for name in NAMES:
            for kind in ("png", "svg"):
                check(plot_ok(os.path.join(out, f"{name}.{kind}"), kind), f"{name}.{kind} written, non-empty, a {kind}")
        check(plot_ok(ici_svg, "svg"), "--ici-svg: the ICI plot also written to the given file")
        check("v9" in so and "no results entry" in so,
              "a chip.json loop whose preset has no roofline is noted, not drawn")

        # Missing reports: skipped with a note, the others drawn, exit 0.
        rep, out = os.path.join(tmp, "partial"), os.path.join(tmp, "partial-out")
        write(rep, {k: v for k, v in data.items() if k not in ("train.json", "pod.json")})
        rc, so, se = run("--reports", rep, "--out", out)
        check(rc == 0, f"missing train.json and pod.json: exit 0 (got {rc})")
        check("skipping the train plot" in so and "skipping the pod plot" in so, "missing reports are noted")
        check(not os.path.exists(os.path.join(out, "train.png")), "no train plot without train.json")
        check(plot_ok(os.path.join(out, "roofline.png"), "png"), "the other plots still drawn")

        # --only draws just those plots.
        out = os.path.join(tmp, "only-out")
        rc, so, se = run("--reports", os.path.join(tmp, "good"), "--out", out, "--only", "mxu,hbm")
        check(rc == 0 and sorted(os.listdir(out)) == ["hbm.png", "hbm.svg", "mxu.png", "mxu.svg"],
              f"--only mxu,hbm draws those two (got {rc}, {sorted(os.listdir(out)) if os.path.isdir(out) else None})")
        rc, so, se = run("--reports", os.path.join(tmp, "good"), "--out", out, "--only", "bogus")
        check(rc == 2 and "bogus" in se, "--only with an unknown plot is a usage error naming it")

        # Malformed reports: non-zero, the file and the field named, no traceback, others drawn.
        cases = [
            ("hbm.json", lambda d: d["results"][1].pop("p99_read_latency"), ["results[1]", "'p99_read_latency'"]),
            ("chip.json", lambda d: d["results"][0].pop("compulsory_bytes"), ["results[0]", "'compulsory_bytes'"]),
            ("collectives.json", lambda d: d["results"][2].update(busbw="fast"), ["results[2]", "'busbw'"]),
            ("ici.json", lambda d: d["results"][0].pop("pattern"), ["results[0]", "'pattern'"]),
            ("train.json", lambda d: d["results"][0].update(loss=[1.0, "x"]), ["results[0]", "'loss'"]),
            ("mxu.json", lambda d: d.pop("results"), ["'results'"]),
        ]
        for i, (name, spoil, words) in enumerate(cases):
            bad = json.loads(json.dumps(data))
            spoil(bad[name])
            rep, out = os.path.join(tmp, f"bad{i}"), os.path.join(tmp, f"bad{i}-out")
            write(rep, bad)
            rc, so, se = run("--reports", rep, "--out", out)
            named = all(w in se for w in [os.path.join(rep, name)] + words)
            check(rc != 0 and named and no_traceback(se),
                  f"malformed {name} ({' '.join(words)}): non-zero exit naming file and field "
                  f"(got {rc}; stderr: {se.strip()[-300:]})")
            other = "mxu" if name != "mxu.json" else "hbm"
            check(plot_ok(os.path.join(out, f"{other}.png"), "png"), f"with a malformed {name}, {other}.png still drawn")
        rep = os.path.join(tmp, "notjson")
        write(rep, data)
        with open(os.path.join(rep, "pod.json"), "w") as f:
            f.write('{"results": [')
        rc, so, se = run("--reports", rep, "--out", os.path.join(tmp, "notjson-out"))
        check(rc != 0 and os.path.join(rep, "pod.json") in se and "JSON" in se and no_traceback(se),
              f"a pod.json that is not JSON: non-zero exit naming the file (got {rc})")

        # No report at all: an error, not an empty success.
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        rc, so, se = run("--reports", empty, "--out", os.path.join(tmp, "empty-out"))
        check(rc != 0 and "make bench" in se, f"no reports at all: non-zero exit (got {rc})")

        # matplotlib missing (a package of that name that fails to import): a message, not a traceback.
        fake = os.path.join(tmp, "fake", "matplotlib")
        os.makedirs(fake)
        with open(os.path.join(fake, "__init__.py"), "w") as f:
            f.write("raise ImportError('matplotlib hidden by test_plots.py')\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(fake))
        rc, so, se = run("--reports", os.path.join(tmp, "good"), "--out", os.path.join(tmp, "nompl-out"), env=env)
        check(rc != 0 and "python3-matplotlib" in se and no_traceback(se),
              f"without matplotlib: non-zero exit naming python3-matplotlib (got {rc}; stderr: {se.strip()[-300:]})")

        # The committed sample reports (tb/plots/reports: real make bench reports, stripped of their
        # configs and counters): every plot drawn from them.
        samples = os.path.join(os.path.dirname(HERE), "tb", "plots", "reports")
        out = os.path.join(tmp, "samples-out")
        rc, so, se = run("--reports", samples, "--out", out)
        check(rc == 0, f"the committed sample reports: exit 0 (got {rc}; stderr: {se.strip()[-300:]})")
        for name in NAMES:
            for kind in ("png", "svg"):
                path = os.path.join(out, f"{name}.{kind}")
                check(plot_ok(path, kind), f"sample reports: {name}.{kind} written")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if failures:
        print(f"test_plots.py: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("test_plots.py: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
