#!/usr/bin/env python3
"""A pod run in one process and split over MPI ranks: the same results and cycles (docs/scale.md).

Runs `tensorpod pod ARGS --report R` once on its own and once under `mpirun -np N` for each N of
--ranks, and compares each distributed run with the one-process run: the pass verdict, the pod's
cycles, the rounds, the output's fingerprint and every chip's status and counters. Prints one line
per run; with --out, appends an `mpi` entry per run to that report (scale.json: ranks, wall_s,
identical, ...). Exits 1 when a run fails or differs, 2 on bad options.

  scripts/mpi_pod.py --tensorpod build/sw/tensorpod --ranks 2 -- --pod 3x3 --backend fast \\
      --collective all_reduce:96
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from report_util import append_entries
import time

COMPARED = ["pass", "ok", "cycles", "rounds", "output_fnv1a", "chips"]


def run(cmd, env, report):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0 or not os.path.exists(report):
        print(p.stdout)
        print(f"mpi_pod: `{' '.join(cmd)}` exited with {p.returncode}", file=sys.stderr)
        sys.exit(1)
    with open(report) as f:
        return json.load(f)["runs"][0], wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tensorpod", required=True, help="the tensorpod binary")
    ap.add_argument("--mpirun", default="mpirun", help="the MPI launcher (default: mpirun)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2], help="rank counts to compare (default: 2)")
    ap.add_argument("--out", help="append `mpi` entries to this JSON report")
    ap.add_argument("--label", default="", help="the entries' `scenario` (default: the pod arguments)")
    ap.add_argument("pod_args", nargs=argparse.REMAINDER, help="-- then the arguments of `tensorpod pod`")
    a = ap.parse_args()
    pod_args = a.pod_args[1:] if a.pod_args[:1] == ["--"] else a.pod_args
    if not pod_args or "--report" in pod_args:
        ap.error("give the pod's arguments after --, without --report")
    if any(n < 2 for n in a.ranks):
        ap.error("--ranks: each count at least 2 (the one-process run is always made)")
    if shutil.which(a.mpirun) is None:
        print(f"mpi_pod: no {a.mpirun} (install openmpi-bin: scripts/install-deps.sh)", file=sys.stderr)
        sys.exit(2)

    env = dict(os.environ)
    if os.geteuid() == 0:  # OpenMPI refuses root unless told twice
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    # Every rank on this machine: no ssh needed (a container may have none).
    env.setdefault("OMPI_MCA_plm_rsh_agent", "")

    scenario = a.label or " ".join(pod_args)
    entries, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        base_report = os.path.join(tmp, "r1.json")
        base, base_wall = run([a.tensorpod, "pod", *pod_args, "--report", base_report], env, base_report)
        print(f"mpi_pod: 1 rank:  {'pass' if base['pass'] else 'FAIL'}, {base['cycles']} cycles, "
              f"{base['rounds']} rounds, pod run {base['wall_seconds']:.2f} s (process {base_wall:.2f} s)")
        bad += not base["pass"]
        entries.append({"ranks": 1, "scenario": scenario, "cycles": base["cycles"], "rounds": base["rounds"],
                        "wall_s": base["wall_seconds"], "process_wall_s": base_wall, "sync_fraction": 0.0,
                        "identical": True, "pass": base["pass"]})
        for n in a.ranks:
            report = os.path.join(tmp, f"r{n}.json")
            cmd = [a.mpirun, "-np", str(n), "--oversubscribe", a.tensorpod, "pod", *pod_args, "--report", report]
            got, wall = run(cmd, env, report)
            diff = [k for k in COMPARED if got.get(k) != base.get(k)]
            identical = not diff and got.get("ranks") == n
            print(f"mpi_pod: {n} ranks: {'pass' if got['pass'] else 'FAIL'}, {got['cycles']} cycles, "
                  f"pod run {got['wall_seconds']:.2f} s (process {wall:.2f} s), synchronisation "
                  f"{100 * got['sync_fraction']:.0f}% (worst rank), {got['bytes_between_ranks'] / 1e6:.1f} MB between "
                  "ranks: "
                  + ("identical to 1 rank" if identical else f"DIFFERS from 1 rank in {', '.join(diff) or 'ranks'}"))
            if not identical:
                print(f"  reproduce: {' '.join(cmd)}")
            bad += not identical or not got["pass"]
            entries.append({"ranks": n, "scenario": scenario, "cycles": got["cycles"], "rounds": got["rounds"],
                            "wall_s": got["wall_seconds"], "process_wall_s": wall,
                            "sync_fraction": got["sync_fraction"], "bytes_between_ranks": got["bytes_between_ranks"],
                            "identical": identical, "pass": got["pass"]})
    if a.out:
        append_entries(a.out, "mpi", entries)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
