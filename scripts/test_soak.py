#!/usr/bin/env python3
"""scripts/soak.py on stand-in tests (no simulation): it adds up each block's soak lines until the
block's figure, stops running a block that has reached it, records a failing run with the command
that reproduces it, and writes the documented fields. Usage: test_soak.py"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

FAKE = r'''#!/usr/bin/env python3
import os, sys
scale = int(os.environ["TP_SOAK"]); seed = int(os.environ["TP_SEED"])
if "{fail}" == "yes" and scale > 1:  # its measuring run passes, the next fails
    print("[  FAILED  ] Fake.Test (seed %d)" % seed); sys.exit(1)
print("[ soak     ] block={block} transactions=%d cycles=%d kind=fake things" % (100 * scale, 7 * scale))
'''


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        jobs = []
        for block, fail, target in (("good", "no", 1000), ("flaky", "yes", 400)):
            exe = os.path.join(d, f"fake_{block}")
            with open(exe, "w") as f:
                f.write(FAKE.replace("{fail}", fail).replace("{block}", block))
            os.chmod(exe, 0o755)
            jobs.append({"block": block, "command": [exe], "filter": "Fake.*", "target": target})
        with open(os.path.join(d, "jobs.json"), "w") as f:
            json.dump(jobs, f)
        out = os.path.join(d, "soak.json")
        p = subprocess.run([sys.executable, os.path.join(HERE, "soak.py"), "--build", d, "--jobs",
                            os.path.join(d, "jobs.json"), "--minutes", "0.1", "--out", out, "--seed", "0",
                            "--workers", "2", "--until-figures"], capture_output=True, text=True, timeout=120)
        if p.returncode != 1:  # the flaky block failed
            failures.append(f"exit {p.returncode} (want 1: a run failed)\n{p.stdout}{p.stderr}")
        try:
            with open(out) as f:
                rep = json.load(f)
            res = {r["block"]: r for r in rep["results"]}
            good, flaky = res["good"], res["flaky"]
            for r in (good, flaky):
                for k in ("block", "seeds", "cycles", "transactions", "failures"):
                    if k not in r:
                        failures.append(f"{r['block']}: no field {k}")
            if not good["meets_target"] or good["transactions"] < 1000 or good["failures"]:
                failures.append(f"good: {good}")
            if good["cycles"] * 100 != good["transactions"] * 7:
                failures.append(f"good: cycles {good['cycles']} against transactions {good['transactions']}")
            if good["runs"] > 12:
                failures.append(f"good: {good['runs']} runs: it went on past its figure")
            if not flaky["failures"]:
                failures.append("flaky: no failure recorded")
            for fl in flaky["failures"]:
                if f"TP_SEED={fl['seed']}" not in fl["command"] or "TP_SOAK=" not in fl["command"] \
                        or "--gtest_filter=Fake.*" not in fl["command"] or fl["scale"] < 2:
                    failures.append(f"flaky: failure without its reproduction: {fl}")
        except (OSError, KeyError, ValueError) as e:
            failures.append(f"no usable soak.json ({e})\n{p.stdout}{p.stderr}")
        # Ctrl-C: the runs stop and the report says so
        slow = os.path.join(d, "fake_slow")
        with open(slow, "w") as f:
            f.write("#!/usr/bin/env python3\nimport time\ntime.sleep(30)\n")
        os.chmod(slow, 0o755)
        with open(os.path.join(d, "slow.json"), "w") as f:
            json.dump([{"block": "slow", "command": [slow], "filter": "Fake.*", "target": 10}], f)
        import signal
        import time
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "soak.py"), "--build", d, "--jobs",
                              os.path.join(d, "slow.json"), "--minutes", "1", "--out", out, "--workers", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        try:
            text, _ = p.communicate(timeout=20)
            rep = json.load(open(out))
            if not rep.get("interrupted") or rep["results"][0]["failures"]:
                failures.append(f"Ctrl-C: report {rep}, output {text!r}")
        except (subprocess.TimeoutExpired, OSError, ValueError) as e:
            p.kill()
            failures.append(f"Ctrl-C: the runner did not stop and report ({e})")
        # a missing binary and an unknown block are refused at once
        bad = subprocess.run([sys.executable, os.path.join(HERE, "soak.py"), "--build", d, "--only", "nosuch",
                              "--jobs", os.path.join(d, "jobs.json"), "--out", out], capture_output=True, text=True)
        if bad.returncode == 0 or "no such block" not in bad.stderr:
            failures.append(f"--only nosuch: exit {bad.returncode}, {bad.stderr!r}")
    for f in failures:
        print("FAIL:", f)
    print("soak runner:", "ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
