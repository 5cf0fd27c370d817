#!/usr/bin/env python3
"""make formal: proofs of the RTL primitives with yosys, yosys-smtbmc, z3 and ABC (docs/verification.md).

Each proof is a harness in tb/formal/ (free inputs, reset at any cycle, the environment's
assumptions) around RTL whose properties are its own `ifdef FORMAL` blocks and simulation checks
(scripts/yosys_lower.py --formal turns `assert ... else $error` and bare `$error` into
assertions), with the harness's asserts. The flow per proof:
  1. lower the sources for yosys 0.23, read them with `read_verilog -formal`, prep, map memories
     to flops, async resets to synchronous ones, flatten; write an SMT-LIB model (yosys-smtbmc)
     and, for the ABC engines, an AIGER model;
  2. run its engines:
     prove  - k-induction with yosys-smtbmc and z3: the base case to the BMC depth, then the
              induction step; both pass: the properties hold in every reachable state (proved);
     bmc    - bounded model check with ABC's bmc3 to the depth: no violation within it (bounded);
     cover  - yosys-smtbmc's cover mode: every cover statement is reached (the assumptions do not
              make the proof vacuous);
  3. on a violation, the counterexample as FST (build/formal/<proof>/cex.fst, from the VCD that
     yosys-smtbmc writes, also for ABC's witness) and the assertion's source line.
Writes build/reports/formal.json. Usage:
  formal.py [--proofs P,...] [--quick] [--depth-scale X] [--mutant M] [--work DIR] [--out FILE]
  --quick: make test's set (every proof, the link at a smaller depth);
  --mutant M: apply a known bug (MUTANTS) to the lowered RTL: the proof must fail.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.abspath(__file__)) + "/.."
ROOT = os.path.normpath(ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import area  # noqa: E402  (the RTL's module and package files)

# The narrow ICI fields the link proofs read (tp_hw_pkg): sequence numbers, error and credit
# counters wrap within the proof's depth. R <= 2^(SeqW-1) and B < 2^CreditW still hold.
NARROW = {"IciSeqW": 3, "IciErrW": 2, "IciCreditW": 3}


class Proof:
    """A harness (tb/formal/<top>.sv) at some parameters, and its engines: prove = (base depth,
    induction depth), bmc = ABC's depth, cover = the cover check's depth; quick_* for make test
    (quick_cover = 0: no cover check there); narrow: tp_hw_pkg with the NARROW fields."""

    def __init__(self, name, top, modules, params, what, prove=None, bmc=None, cover=None, narrow=False,
                 quick_bmc=None, quick_cover=None):
        self.name, self.top, self.modules, self.params, self.what = name, top, modules, params, what
        self.prove, self.bmc, self.cover, self.narrow = prove, bmc, cover, narrow
        self.quick_bmc, self.quick_cover = quick_bmc, quick_cover


FIFO_WHAT = ("tp_fifo: count = pushes - pops, never above Depth; ready/valid flags from it; any entry "
             "leaves after exactly those pushed before it, with its data; the output holds while it waits")
ARB_WHAT = ("tp_rr_arb: a grant iff a request, only to a requester, in range; the first request at or after "
            "the pointer; a held request sees at most N - 1 grants to others")
LINK_WHAT = ("tp_ici_link_tx + tp_ici_link_rx over a wire that drops words and flips a bit each way: the "
             "flits delivered are the flits accepted, in order, none twice or changed; at most R in flight; "
             "the sender's credits in use never below 0 nor above B; a delivered flit finds room")

PROOFS = [Proof(f"fifo_d{d}", "formal_fifo", ["tp_fifo"], {"Depth": d, "Width": 4}, FIFO_WHAT,
                prove=(16, 4), cover=8) for d in (1, 2, 3, 4)]
PROOFS += [Proof("fifo_checked", "formal_fifo", ["tp_fifo"], {"Depth": 2, "Width": 4, "Checked": 1},
                 FIFO_WHAT + "; with its input checker (tp_assert_stable) on and the producer keeping the rule",
                 prove=(16, 4), cover=8)]
PROOFS += [Proof(f"rr_arb_n{n}", "formal_rr_arb", ["tp_rr_arb"], {"N": n}, ARB_WHAT, prove=(12, 2), cover=8)
           for n in (1, 2, 3, 5)]
PROOFS += [Proof("link", "formal_link", ["tp_ici_link_tx", "tp_ici_link_rx", "tp_fifo"], {}, LINK_WHAT,
                 bmc=18, quick_bmc=11, cover=17, quick_cover=0, narrow=True)]
PROOFS += [Proof("link_flips3", "formal_link", ["tp_ici_link_tx", "tp_ici_link_rx", "tp_fifo"], {"Flips": 3},
                 LINK_WHAT.replace("flips a bit", "flips up to three bits"), bmc=16, quick_bmc=9, narrow=True)]

# Known bugs, each applied to one lowered file by a regular expression: the proof must fail
# (status "failed", with a counterexample), or for MUTANT_STATUS's the induction step must.
MUTANTS = {
    "fifo_wrap": ("fifo_d3", "tp_fifo.sv", r"\(p == PtrW'\(Depth - 1\)\) \? '0 : p \+ PtrW'\(1\)",
                  "p + PtrW'(1)", "the pointers do not wrap at Depth = 3"),
    "fifo_full": ("fifo_d2", "tp_fifo.sv", r"assign ready_o = \(cnt_q != CntW'\(Depth\)\);",
                  "assign ready_o = 1'b1;", "ready while full (overflow)"),
    "arb_stuck": ("rr_arb_n3", "tp_rr_arb.sv", r"ptr_q <= \(gnt_idx_o == IW'\(N - 1\)\) \? '0 : gnt_idx_o \+ 1'b1;",
                  "ptr_q <= gnt_idx_o;", "the pointer stays on the grant (starvation)"),
    "fifo_producer": ("fifo_checked", "formal_fifo.sv", r"assume \(valid_i && data_i == data_q\);",
                      ";", "the producer may drop valid or change data while it waits (tp_assert_stable must see it)"),
    "fifo_weak": ("fifo_d4", "tp_fifo.sv", r"assert \(wr_q == f_wr\[PtrW-1:0\]\);", ";",
                  "the invariant tying the write pointer to the read pointer left out (correct RTL, but the "
                  "induction step no longer closes)"),
    "link_seq": ("link", "tp_ici_link_rx.sv",
                 r"out_valid_o = crc_ok && \(rx_data_i\[FW \+: (tp_ici_pkg::)?SEQW\] == exp_q\);",
                 "out_valid_o = crc_ok;", "the receiver ignores sequence numbers (a resent flit is delivered twice)"),
}

MUTANT_STATUS = {"fifo_weak": "unproved"}


def run(cmd, log, timeout):
    """Run a tool, its output to log; (returncode or None on timeout, output, seconds)."""
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out, code = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        code = None
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n" + out)
    return code, out, time.monotonic() - t0


def sources(proof, mods, deps):
    files = set()
    for m in proof.modules:
        files.update(area.closure(m, mods, deps))
    return sorted(files) + [os.path.join(ROOT, "tb", "formal", proof.top + ".sv")]


def source_line(text, originals):
    """The assertion of yosys-smtbmc's 'Assert failed in ...: a.sv:17.62-17.72|tp_fifo.sv:105.55-106.38'
    line (the instance's location, then the statement's) as 'rtl/common/tp_fifo.sv:105'."""
    line = next((l for l in text.splitlines() if re.search(r"(Assert failed|Unreached cover)", l)), "")
    # The cell's name holds the statement's own place ($assert$<file>:<line>$<n>); the attribute
    # before it lists the instances' places too, in no fixed order.
    cell = re.search(r"\$(?:assert|cover)\$([\w./-]+\.sv):(\d+)\$", line)
    locs = [cell.groups()] if cell else re.findall(r"([\w./-]+\.sv):(\d+)", line.split(" ($")[0])
    if not locs:
        # A labelled assertion is named by its label (u_dut.gen_check.u_check_in.a_data_held).
        m = re.search(r"(?:Assert failed|Unreached cover)[^:]*: \S*?(\w+)\s*$", line)
        for f in originals.values() if m else ():
            for n, text_line in enumerate(open(f).read().splitlines(), 1):
                if re.match(rf"\s*{m.group(1)}\s*:", text_line):
                    return f"{os.path.relpath(f, ROOT)}:{n}"
        return None
    f, n = locs[-1]
    f = os.path.basename(f)
    return f"{os.path.relpath(originals.get(f, f), ROOT)}:{n}"


def statement(loc):
    """The source text of 'file:line' (the assertion a counterexample breaks)."""
    try:
        f, n = loc.rsplit(":", 1)
        return open(os.path.join(ROOT, f)).read().splitlines()[int(n) - 1].strip()
    except (AttributeError, ValueError, OSError, IndexError):
        return "?"


def failing_step(text):
    steps = re.findall(r"Checking assertions in step (\d+)", text)
    return int(steps[-1]) if steps else None


def to_fst(vcd, fst):
    if not os.path.exists(vcd):
        return None
    if shutil.which("vcd2fst"):
        r = subprocess.run(["vcd2fst", vcd, fst], capture_output=True, text=True)
        if r.returncode == 0 and os.path.exists(fst):
            return fst
    return vcd  # no gtkwave: the VCD itself


def check(proof, pkgs, mods, deps, work, a, mutant=None):
    """Run one proof; its result entry."""
    d = os.path.join(work, proof.name + (f"-{mutant}" if mutant else ""))
    shutil.rmtree(d, ignore_errors=True)
    src = os.path.join(d, "src")
    os.makedirs(src)
    files = pkgs + sources(proof, mods, deps)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "yosys_lower.py"), "--formal", src] + files,
                       capture_output=True, text=True)
    entry = {"proof": proof.name, "top": proof.top, "modules": proof.modules, "params": proof.params,
             "what": proof.what, "narrow_fields": NARROW if proof.narrow else None}
    if mutant:
        entry["mutant"] = mutant
    if r.returncode != 0:
        return {**entry, "status": "error", "error": f"lowering failed: {r.stderr.strip()}"}
    originals = {os.path.basename(f): f for f in files}
    low = [os.path.join(src, os.path.basename(f)) for f in files]
    if mutant:
        _, fname, pattern, repl, _ = MUTANTS[mutant]
        path = os.path.join(src, fname)
        text = open(path).read()
        new, n = re.subn(pattern, repl, text)
        if n != 1:
            return {**entry, "status": "error", "error": f"mutant {mutant}: its pattern matched {n} times in {fname}"}
        open(path, "w").write(new)
    # The parameters through a top that instantiates the harness with them: `hierarchy -chparam`
    # trips an internal assertion of yosys 0.23 on a harness that imports a package.
    top = proof.top
    if proof.params:
        top = "formal_top"
        low.append(os.path.join(src, "formal_top.sv"))
        with open(low[-1], "w") as f:
            f.write(f"module formal_top (input logic clk_i);\n"
                    f"  {proof.top} #({', '.join(f'.{k}({v})' for k, v in proof.params.items())}) u_harness (.clk_i);\n"
                    f"endmodule\n")
    model = os.path.join(d, "model")
    script = (f"read_verilog -defer -sv -formal {' '.join(low)}; hierarchy -check -top {top}; "
              f"prep -top {top}; memory_map; opt_clean; async2sync; dffunmap; flatten; opt_clean; "
              f"write_rtlil {model}.il; write_smt2 -wires {model}.smt2; "
              f"tee -o {model}.count select -count t:$assert; tee -a {model}.count select -count t:$cover")
    code, out, secs = run(["yosys", "-q", "-p", script], os.path.join(d, "yosys.log"), a.timeout)
    if code != 0:
        err = [l for l in out.splitlines() if "ERROR" in l] or out.strip().splitlines()[-1:] or ["?"]
        return {**entry, "status": "error", "error": f"yosys: {err[0]} (log: {d}/yosys.log)"}
    counts = [int(x) for x in re.findall(r"(\d+) objects", open(model + ".count").read())]
    entry["asserts"], entry["covers"] = (counts + [0, 0])[:2]
    if entry["asserts"] == 0:
        return {**entry, "status": "error", "error": "no assertion reached the model (nothing to prove)"}
    entry["engines"] = []
    smtbmc = ["yosys-smtbmc", "-s", "z3", "--unroll"]
    vcd, fst = os.path.join(d, "cex.vcd"), os.path.join(d, "cex.fst")

    def failed(engine, text, depth=None):
        return {**entry, "status": "failed", "engine": engine, "depth": failing_step(text) or depth,
                "assertion": source_line(text, originals), "trace": to_fst(vcd, fst)}

    seconds = secs
    if proof.prove:
        base, k = proof.prove
        base = max(1, round(base * a.depth_scale))
        code, out, s = run(smtbmc + ["-t", str(base), "--dump-vcd", vcd, model + ".smt2"],
                           os.path.join(d, "base.log"), a.timeout)
        seconds += s
        entry["engines"].append({"engine": "smtbmc-z3 base case", "depth": base, "seconds": round(s, 2)})
        if code is None:
            return {**entry, "status": "timeout", "engine": "base case", "seconds": round(seconds, 2)}
        if "Status: FAILED" in out:
            return failed("smtbmc-z3 base case", out, base)
        if "Status: PASSED" not in out:
            return {**entry, "status": "error", "error": f"yosys-smtbmc gave no verdict (log: {d}/base.log)"}
        ivcd = os.path.join(d, "induction.vcd")
        code, out, s = run(smtbmc + ["-i", "-t", str(k), "--dump-vcd", ivcd, model + ".smt2"],
                           os.path.join(d, "induction.log"), a.timeout)
        seconds += s
        entry["engines"].append({"engine": "smtbmc-z3 induction", "depth": k, "seconds": round(s, 2)})
        entry["depth"] = base
        if code is None or "Status: PASSED" not in out or "induction successful" not in out:
            # No bug within the base depth, but the properties are not inductive at depth k: a
            # weakened invariant or a bug deeper than the base case. The trace starts in an
            # arbitrary state that satisfies the assertions for k steps.
            return {**entry, "status": "unproved", "engine": "smtbmc-z3 induction",
                    "assertion": source_line(out, originals), "trace": to_fst(ivcd, os.path.join(d, "induction.fst")),
                    "error": f"the induction step fails at depth {k} (no violation within {base} cycles from "
                             f"reset; log: {d}/induction.log)"}
        entry["status"] = "proved"
    if proof.bmc:
        depth = proof.quick_bmc if a.quick and proof.quick_bmc else proof.bmc
        depth = max(1, round(depth * a.depth_scale))
        aig = (f"read_rtlil {model}.il; chformal -cover -remove; setundef -undriven -anyseq; opt -fast; techmap; "
               f"opt -fast; dffunmap; abc -g AND -fast; opt_clean; "
               f"write_aiger -I -B -zinit -map {model}.aim {model}.aig")
        code, out, s = run(["yosys", "-q", "-p", aig], os.path.join(d, "aiger.log"), a.timeout)
        seconds += s
        if code != 0:
            return {**entry, "status": "error", "error": f"AIGER model: see {d}/aiger.log"}
        aiw = os.path.join(d, "cex.aiw")
        abc = f"read_aiger {model}.aig; fold; strash; bmc3 -F {depth}; write_cex -a {aiw}"
        code, out, s = run(["yosys-abc", "-c", abc],
                           os.path.join(d, "bmc.log"), a.timeout)
        seconds += s
        entry["engines"].append({"engine": "abc bmc3", "depth": depth, "seconds": round(s, 2)})
        if code is None:
            return {**entry, "status": "timeout", "engine": "abc bmc3", "seconds": round(seconds, 2)}
        m = re.search(r"Output \d+ of miter .* was asserted in frame (\d+)", out)
        if m:
            frames = int(m.group(1)) + 1
            code, out2, _ = run(smtbmc + ["--aig", f"{model}.aim:{aiw}", "--aig-noheader", "-t", str(frames),
                                          "--dump-vcd", vcd, model + ".smt2"], os.path.join(d, "replay.log"), a.timeout)
            return failed("abc bmc3", out2, frames)
        if not re.search(r"No output asserted in \d+ frames", out):
            return {**entry, "status": "error", "error": f"abc bmc3 gave no verdict (log: {d}/bmc.log)"}
        if entry.get("status") != "proved":
            entry["status"], entry["depth"] = "bounded", depth
    cover = proof.quick_cover if a.quick and proof.quick_cover is not None else proof.cover
    if cover and entry["covers"]:
        depth = max(1, round(cover * a.depth_scale))
        code, out, s = run(smtbmc + ["-c", "-t", str(depth), model + ".smt2"], os.path.join(d, "cover.log"), a.timeout)
        seconds += s
        entry["engines"].append({"engine": "smtbmc-z3 cover", "depth": depth, "seconds": round(s, 2)})
        if code is None or "Status: PASSED" not in out:
            miss = sorted({source_line(l, originals) for l in out.splitlines()} - {None})
            return {**entry, "status": "vacuous", "engine": "cover", "unreached": miss,
                    "error": f"cover statements not reached within {depth} steps: {', '.join(miss) or '?'} "
                             f"(log: {d}/cover.log)"}
    entry["seconds"] = round(seconds, 2)
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proofs", default="", help="comma-separated proofs (default: all): " +
                    ", ".join(p.name for p in PROOFS))
    ap.add_argument("--quick", action="store_true", help="make test's depths")
    ap.add_argument("--depth-scale", type=float, default=1.0, help="multiply every depth")
    ap.add_argument("--mutant", action="append", default=[], help="a known bug the proof must find: " +
                    ", ".join(MUTANTS))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "formal"))
    ap.add_argument("--out", default=None, help="the report (default: build/reports/formal.json; none with --mutant)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per tool run")
    a = ap.parse_args()
    if a.depth_scale <= 0 or a.depth_scale > 100:
        ap.error("--depth-scale must be in (0, 100]")
    if a.timeout <= 0:
        ap.error("--timeout must be a positive number of seconds")
    byname = {p.name: p for p in PROOFS}
    names = [n for n in a.proofs.split(",") if n] or [p.name for p in PROOFS]
    for n in names:
        if n not in byname:
            ap.error(f"unknown proof '{n}' (known: {', '.join(byname)})")
    for m in a.mutant:
        if m not in MUTANTS:
            ap.error(f"unknown mutant '{m}' (known: {', '.join(MUTANTS)})")
    for tool in ("yosys", "yosys-smtbmc", "yosys-abc", "z3"):
        if not shutil.which(tool):
            sys.exit(f"formal: {tool} is not installed (scripts/install-deps.sh yosys z3)")

    gen, mods, pkgs, deps = area.generated_sources(a.work, "formal")
    narrow_dir = os.path.join(a.work, "gen-narrow")
    os.makedirs(narrow_dir, exist_ok=True)
    text = open(os.path.join(gen, "tp_hw_pkg.sv")).read()
    for k, v in NARROW.items():
        text, n = re.subn(rf"(\b{k}\s*=\s*)\d+", rf"\g<1>{v}", text)
        if n != 1:
            sys.exit(f"formal: {k} not found once in the generated tp_hw_pkg.sv")
    open(os.path.join(narrow_dir, "tp_hw_pkg.sv"), "w").write(text)
    narrow_pkgs = [os.path.join(narrow_dir, "tp_hw_pkg.sv") if os.path.basename(p) == "tp_hw_pkg.sv" else p
                   for p in pkgs]

    jobs = [(byname[MUTANTS[m][0]], m) for m in a.mutant] if a.mutant else [(byname[n], None) for n in names]
    results, bad = [], []
    for proof, mutant in jobs:
        label = proof.name + (f" with mutant {mutant} ({MUTANTS[mutant][4]})" if mutant else "")
        print(f"formal: {label} ...", end="", flush=True)
        e = check(proof, narrow_pkgs if proof.narrow else pkgs, mods, deps, a.work, a, mutant)
        results.append(e)
        if e["status"] in ("proved", "bounded"):
            how = "proved" if e["status"] == "proved" else f"no violation within {e['depth']} cycles"
            print(f" {how} ({e['asserts']} assertions, {e['covers']} covers, {e['seconds']} s)")
        elif e["status"] == "failed":
            print(f" FAILED at cycle {e['depth']} ({e['engine']}): {e['assertion']}: {statement(e['assertion'])}\n"
                  f"  counterexample: {e['trace']} (gtkwave {e['trace']}); again: scripts/formal.py --proofs "
                  f"{proof.name}" + (f" --mutant {mutant}" if mutant else "") + (" --quick" if a.quick else ""))
        else:
            print(f" {e['status'].upper()}: {e.get('error', '')}")
            if e.get("trace"):
                print(f"  {e.get('assertion')}: {statement(e.get('assertion'))}  (trace: {e['trace']})")
        want = MUTANT_STATUS.get(mutant, "failed") if mutant else None
        if (e["status"] != want) if mutant else (e["status"] not in ("proved", "bounded")):
            bad.append(label)
        elif mutant and not e.get("trace"):
            bad.append(label + " (no trace)")
    out = a.out or (None if a.mutant else os.path.join(ROOT, "build", "reports", "formal.json"))
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            version = subprocess.run(["yosys", "-V"], capture_output=True, text=True).stdout.strip()
            json.dump({"tool": version,
                       "quick": a.quick, "depth_scale": a.depth_scale, "results": results}, f, indent=1)
        print(f"formal: wrote {out}")
    if bad:
        print("formal: " + ("did not fail as they must: " if a.mutant else "failed: ") + ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
