#!/usr/bin/env python3
"""The soak campaign (make soak; docs/verification.md, "Soak campaigns").

Runs each block's soak tests (GoogleTest cases that multiply their length by $TP_SOAK and print a
"[ soak     ] block=... transactions=... cycles=..." line) again and again with fresh seeds, fanned
out over the cores: first until every block has reached its figure, then on with more seeds until
the time is up (--until-figures: stop at the figures), and writes
build/reports/soak.json: per block the seeds, cycles, transactions and every failure with the
command that reproduces it.

Usage: soak.py --build BUILD [--minutes M] [--out FILE] [--workers N] [--only BLOCK,...]
               [--jobs FILE] [--seed BASE] [--until-figures]
--jobs replaces the built-in job list with a JSON list of objects {block, command (a list; the
first element relative to BUILD or absolute), filter, target, kind} (the test uses it).
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import threading
import time

# block, binary (under BUILD/tb), GoogleTest filter, the figure (transactions) the campaign must
# reach, what a transaction is. Blocks with several jobs (presets, tests) share the figure.
JOBS = [
    ("ici", ["tb/test_ici_tiny"], "Ici.SoakPastSaturationWithLinkBitErrors", 1e7),
    ("ici", ["tb/test_ici_small"], "Ici.SoakPastSaturationWithLinkBitErrors", 1e7),
    ("ici", ["tb/test_ici_odd"], "Ici.SoakPastSaturationWithLinkBitErrors", 1e7),
    ("hbm", ["tb/test_hbm_small"], "Hbm.RandomTrafficObeysTimingAndReturnsTheLastWrite", 1e6),
    ("hbm", ["tb/test_hbm_small"], "Hbm.EccInjectionCampaignCorrectsEverySingleAndDetectsEveryDouble", 1e6),
    ("hbm", ["tb/test_hbm_odd"], "Hbm.RandomTrafficObeysTimingAndReturnsTheLastWrite", 1e6),
    ("hbm", ["tb/test_hbm_odd"], "Hbm.EccInjectionCampaignCorrectsEverySingleAndDetectsEveryDouble", 1e6),
    ("hbm_system", ["tb/test_hbm_system"], "HbmSystem.TrafficOverEveryPseudoChannelInOrderPerId", 1e6),
    ("chip", ["tb/test_chip_small_model"], "Stalls/ChipRandom.ProgramsMatchTheInterpreter/*", 1e4),
    ("chip", ["tb/test_chip_small"], "Stalls/ChipRandom.ProgramsMatchTheInterpreter/none", 1e4),  # on HBM
    ("chip", ["tb/test_chip_tiny"], "Stalls/ChipRandom.ProgramsMatchTheInterpreter/none", 1e4),
    ("chip", ["tb/test_chip_odd"], "Stalls/ChipRandom.ProgramsMatchTheInterpreter/*", 1e4),
    ("fp", ["tb/test_fp"], "FpUnit.AddMillionRandom:FpUnit.MulEveryExponentPairRandomFractions", 1e8),
]
SOAK_LINE = re.compile(r"^\[ soak     \] block=(\S+) transactions=(\d+) cycles=(\d+) kind=(.*)$", re.M)
RUN_SECONDS = 60  # aim for runs of about a minute: long enough to amortise start-up, short enough to share out


def load_jobs(args):
    if args.jobs:
        with open(args.jobs) as f:
            raw = json.load(f)
        jobs = [(j["block"], j["command"], j["filter"], float(j["target"])) for j in raw]
    else:
        jobs = JOBS
    out = []
    for block, command, flt, target in jobs:
        exe = command[0] if os.path.isabs(command[0]) else os.path.join(args.build, command[0])
        if not os.path.exists(exe):
            sys.exit(f"soak: {exe} is not built (make soak builds the tests first)")
        out.append({"block": block, "command": [exe] + list(command[1:]), "filter": flt, "target": target})
    if args.only:
        want = set(args.only.split(","))
        unknown = want - {j["block"] for j in out}
        if unknown:
            sys.exit(f"soak: --only {','.join(sorted(unknown))}: no such block (blocks: "
                     f"{', '.join(sorted({j['block'] for j in out}))})")
        out = [j for j in out if j["block"] in want]
    return out


RUNNING = set()  # the runs' processes, stopped on Ctrl-C
STOPPED = threading.Event()


def run_once(job, seed, scale, build):
    """One run of a job: its soak lines, exit code, wall time and the command that reproduces it."""
    env = dict(os.environ, TP_SEED=str(seed), TP_SOAK=str(scale))
    cmd = job["command"] + [f"--gtest_filter={job['filter']}"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=build)
    RUNNING.add(p)
    try:
        out, _ = p.communicate(timeout=3600)
        code = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, code = p.communicate()[0] + "\nsoak: the run took more than an hour", -1
    finally:
        RUNNING.discard(p)
    secs = time.monotonic() - t0
    if STOPPED.is_set() and code != 0:
        return None  # stopped by Ctrl-C: not a failure, not counted
    lines = [(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)) for m in SOAK_LINE.finditer(out)]
    failed = code != 0 or "[  FAILED  ]" in out
    if not failed and not lines:
        failed, out = True, out + "\nsoak: the run printed no soak line (is the filter a soak test?)"
    repro = f"TP_SEED={seed} TP_SOAK={scale} {' '.join(cmd)}"
    return {"lines": lines, "failed": failed, "seconds": secs, "repro": repro,
            "tail": "\n".join(out.strip().splitlines()[-15:]) if failed else ""}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "30")))
    ap.add_argument("--out")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only")
    ap.add_argument("--jobs")
    ap.add_argument("--seed", type=int, default=int(time.time()) & 0xffffff)
    ap.add_argument("--until-figures", action="store_true", help="stop once every block has its figure")
    args = ap.parse_args()
    if args.minutes <= 0 or args.workers < 1:
        sys.exit("soak: --minutes must be positive and --workers at least 1")
    args.build = os.path.abspath(args.build)
    out_path = args.out or os.path.join(args.build, "reports", "soak.json")
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    jobs = load_jobs(args)
    deadline = time.monotonic() + 60 * args.minutes
    blocks = {}
    for j in jobs:
        b = blocks.setdefault(j["block"], {"block": j["block"], "target": j["target"], "seeds": [], "cycles": 0,
                                           "transactions": 0, "kinds": set(), "failures": [], "runs": 0,
                                           "seconds": 0.0})
        b["target"] = max(b["target"], j["target"])
        j["unit_seconds"] = j["unit_trans"] = None  # a run at scale 1: seconds, transactions (its first run)
    print(f"soak: {len(jobs)} jobs in {len(blocks)} blocks, {args.workers} workers, {args.minutes:g} minutes, "
          f"seeds from {args.seed}", flush=True)

    next_seed = [args.seed]
    turn = [0]

    def pick():
        """The next job, round robin, and its scale: first the jobs of blocks short of their figure
        (no longer than the block still needs), then (unless --until-figures) any, until the time
        is up: more seeds."""
        for short_only in (True, False):
            if not short_only and args.until_figures:
                return None
            for _ in range(len(jobs)):
                j = jobs[turn[0] % len(jobs)]
                turn[0] += 1
                b = blocks[j["block"]]
                need = b["target"] - b["transactions"] - b.get("pending", 0)
                if short_only and need <= 0:
                    continue
                if j["unit_seconds"] is None:
                    scale = 1  # the first run measures the job
                else:
                    left = max(1.0, deadline - time.monotonic())
                    scale = max(1, int(min(RUN_SECONDS, left / args.workers) / max(j["unit_seconds"], 1e-3)))
                    if short_only:
                        scale = min(scale, int(need / max(j["unit_trans"], 1)) + 1)
                next_seed[0] += 1
                return j, next_seed[0], scale
        return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.workers) as pool:
        running = {}
        while True:
            while len(running) < args.workers and time.monotonic() < deadline and not STOPPED.is_set():
                nxt = pick()
                if not nxt:
                    break
                j, seed, scale = nxt
                b = blocks[j["block"]]
                if j["unit_trans"]:
                    b["pending"] = b.get("pending", 0) + j["unit_trans"] * scale
                running[pool.submit(run_once, j, seed, scale, args.build)] = (j, seed, scale)
            if not running:
                break
            try:
                done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
            except KeyboardInterrupt:  # Ctrl-C: stop the runs, report what finished
                print("soak: interrupted; stopping the runs and writing what finished", flush=True)
                STOPPED.set()
                for p in list(RUNNING):
                    p.terminate()
                continue
            for fut in done:
                j, seed, scale = running.pop(fut)
                r = fut.result()
                if r is None:
                    continue
                b = blocks[j["block"]]
                if j["unit_trans"]:
                    b["pending"] = max(0, b.get("pending", 0) - j["unit_trans"] * scale)
                b["runs"] += 1
                b["seeds"].append(seed)
                b["seconds"] += r["seconds"]
                trans = sum(t for _, t, _, _ in r["lines"])
                for blk, t, c, kind in r["lines"]:
                    b["transactions"] += t
                    b["cycles"] += c
                    b["kinds"].add(kind)
                if j["unit_seconds"] is None:
                    j["unit_seconds"] = max(r["seconds"] / scale, 1e-3)
                    j["unit_trans"] = max(trans, 1) / scale
                if r["failed"]:
                    b["failures"].append({"seed": seed, "scale": scale, "test": j["filter"], "command": r["repro"],
                                          "output": r["tail"]})
                    print(f"soak: FAIL {j['block']} seed {seed}: rerun with\n  {r['repro']}", flush=True)
                print(f"soak: {j['block']:<10} {os.path.basename(j['command'][0])} seed {seed} x{scale}: "
                      f"{trans} transactions in {r['seconds']:.1f} s; block {b['transactions']:.3g} of "
                      f"{b['target']:.3g}", flush=True)

    results = []
    for b in blocks.values():
        results.append({"block": b["block"], "seeds": len(b["seeds"]), "seed_list": b["seeds"], "runs": b["runs"],
                        "cycles": b["cycles"], "transactions": b["transactions"],
                        "transaction_kind": "; ".join(sorted(b["kinds"])), "target": b["target"],
                        "meets_target": b["transactions"] >= b["target"], "failures": b["failures"],
                        "wall_seconds": round(b["seconds"], 1)})
    report = {"benchmark": "soak", "minutes": args.minutes, "workers": args.workers, "first_seed": args.seed + 1,
              "interrupted": STOPPED.is_set(), "results": results}
    with open(out_path, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    bad = sum(len(r["failures"]) for r in results)
    short = [r["block"] for r in results if not r["meets_target"]]
    print(f"soak: wrote {out_path}: {bad} failure(s)" + (f"; short of the figure: {', '.join(short)}" if short else
                                                         "; every block reached its figure"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
