#!/usr/bin/env python3
"""make area: synthesise every RTL block with yosys into generic cells, per preset (docs/area.md).

For each block and preset: lower the block's SystemVerilog for yosys 0.23 (scripts/yosys_lower.py),
read it, set the preset's parameters, flatten, map the small random-access arrays to flops and
keep the large ones as memories (SRAM macros: counted as bits, not as cells), map the logic to
yosys' generic gates with abc, and count cells and NAND2-equivalent gates. Then fit each block's
NAND2 count against its scaling variable (the MXU's n^2, the vector unit's lanes, ...) and
extrapolate to the presets not synthesised (v2: 128 x 128), with the fit's error on the measured
points; and turn gates and memory bits into mm^2 at 16 nm. Writes build/reports/area.json and
build/reports/plots/area.png (matplotlib, when present).

Usage: area.py [--presets tiny,odd,small] [--blocks mxu_array,core] [--out build/reports/area.json]
               [--work build/area] [--timeout SECONDS] [--sweep] [--quick]
  --quick: only the blocks and sizes make test uses (the round-robin arbiter at 3 sizes).
"""
import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---- Cell areas in NAND2 equivalents ----
# NanGate FreePDK45 Open Cell Library, X1 drive: NAND2 0.798 um^2, INV 0.532, AND2/OR2 1.064,
# NOR2 0.798, XOR2/XNOR2 1.596, MUX2 1.862, AOI21/OAI21 1.064, AOI22/OAI22 1.33, DFF 4.522,
# DFFR/DFFS (asynchronous reset or set) 5.32; an enable costs a MUX2 in front of the flop, a
# synchronous reset an AND2.
NAND2_UM2 = 0.798
CELL_UM2 = {
    "$_NOT_": 0.532, "$_NAND_": 0.798, "$_NOR_": 0.798, "$_AND_": 1.064, "$_OR_": 1.064,
    "$_ANDNOT_": 1.064, "$_ORNOT_": 1.064, "$_XOR_": 1.596, "$_XNOR_": 1.596,
    "$_MUX_": 1.862, "$_NMUX_": 1.862, "$_AOI3_": 1.064, "$_OAI3_": 1.064, "$_AOI4_": 1.33,
    "$_OAI4_": 1.33, "$_BUF_": 0.798,
}
DFF_UM2, DFFR_UM2, ENABLE_UM2, SYNC_RESET_UM2 = 4.522, 5.32, 1.862, 1.064
# yosys' generic flops: $_DFF_C_ (clock polarity), $_DFF_CRV_ (asynchronous reset: its polarity
# and value), $_DFFE_CE_ / $_DFFE_CRVE_ (with an enable), $_SDFF_CRV_, $_SDFFE_CRVE_,
# $_SDFFCE_CRVE_ (synchronous reset), $_DFFSR_CSR_ / $_DFFSRE_CSRE_ (set and reset), $_ALDFF_CL_ /
# $_ALDFFE_CLE_ (asynchronous load): the number of polarity letters says which.
FLOP = re.compile(r"\$_(DFF|DFFE|SDFF|SDFFE|SDFFCE|DFFSR|DFFSRE|ALDFF|ALDFFE)_([NP01]+)_")
ASYNC_LETTERS = {"DFF": 3, "DFFE": 4, "DFFSR": 3, "DFFSRE": 4, "ALDFF": 2, "ALDFFE": 3}


def cell_nand2(cell):
    """NAND2 equivalents of one generic cell, or None for a cell this table does not know (a
    latch among them: the RTL has none, so one is a finding, not a cell to price)."""
    if cell in CELL_UM2:
        return CELL_UM2[cell] / NAND2_UM2
    m = FLOP.fullmatch(cell)
    if not m:
        return None
    kind, pol = m.groups()
    if kind.startswith("SDFF"):
        um2 = DFF_UM2 + SYNC_RESET_UM2
    elif len(pol) == ASYNC_LETTERS[kind]:
        um2 = DFFR_UM2
    elif len(pol) == ASYNC_LETTERS[kind] - (2 if kind in ("DFF", "DFFE") else 1):
        um2 = DFF_UM2
    else:
        return None
    if kind.endswith("E"):
        um2 += ENABLE_UM2
    return um2 / NAND2_UM2


def nand2_of(counts):
    """(cells, NAND2 equivalents) of a stat's cell counts, memories left out; or an error."""
    cells, nand2 = 0, 0.0
    for cell, k in counts.items():
        if cell.startswith("$mem"):
            continue
        w = cell_nand2(cell)
        if w is None:
            return None, None, f"a cell the NAND2 table does not know: {cell}"
        nand2 += w * k
        cells += k
    return cells, round(nand2, 1), None


# ---- The 16 nm figures (docs/area.md, each with its source) ----
# TSMC 16FF+: 28.88 million transistors per mm^2 (the Bohr metric: 0.6 NAND2 + 0.4 scan flop,
# WikiChip), so 28.88 / 4 = 7.22 million NAND2 per mm^2 at full density; placed and routed at
# 70% utilisation. SRAM: the 0.074 um^2 high-density 6T bit cell, at 60% array efficiency
# (periphery, sense amplifiers, redundancy) for a macro.
NODE_NM = 16
NAND2_PER_MM2 = 28.88e6 / 4
UTILISATION = 0.70
SRAM_BITCELL_UM2 = 0.074
SRAM_EFFICIENCY = 0.60
# The chip's SRAM macros, by block and array: VMEM's banks, the accumulators and the instruction
# memory. Every other random-access array (FIFOs, queues, the router's buffers, the MXU's weight
# buffer and deskew buffers) is built from flops, as a real design would build them.
SRAM_ARRAYS = {"vmem": ["mem_q"], "mxu_acc": ["mem_q"], "core": ["imem_q"]}


def logic_mm2(nand2):
    return nand2 / NAND2_PER_MM2 / UTILISATION


def sram_mm2(bits):
    return bits * SRAM_BITCELL_UM2 / SRAM_EFFICIENCY * 1e-6


# ---- Presets and blocks ----
def load_presets():
    path = os.environ.get("TENSORPOD_CONFIG", os.path.join(ROOT, "configs", "presets.json"))
    with open(path) as f:
        d = json.load(f)

    def merge(a, b):
        out = dict(a)
        for k, v in b.items():
            out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
        return out

    def resolve(name, seen=()):
        if name in seen:
            sys.exit(f"area: preset base cycle {' -> '.join(seen + (name,))}")
        p = d["presets"].get(name) or d["bases"].get(name)
        if p is None:
            sys.exit(f"area: unknown preset or base '{name}'")
        base = p.get("base")
        return merge(resolve(base, seen + (name,)), p) if base else p

    presets = {name: resolve(name) for name in d["presets"]}
    for p in presets.values():  # the controllers that serve the chip: chip.hbm over hbm (docs/chip.md)
        p["chip_hbm"] = merge(p["hbm"], p["chip"].get("hbm", {}))
    return presets


def log2(v):
    return int(math.log2(v))


def hbm_params(p):
    h, t = p["chip_hbm"], p["chip_hbm"]["timing"]
    out = {"BankGroups": h["bank_groups"], "BanksPerGroup": h["banks_per_group"], "QD": h["queue"], "WQD": h["write_queue"],
           "HiWm": h["write_hi"], "LoWm": h["write_lo"], "StarveLimit": h["starve_limit"], "RowW": log2(h["rows"]), "ColW": log2(h["columns"]),
           "ClosedPage": int(bool(h.get("closed_page"))), "BankLow": int(bool(h.get("bank_interleave")))}
    for key, param in [("cl", "CL"), ("cwl", "CWL"), ("trcd", "TRCD"), ("trp", "TRP"), ("tras", "TRAS"),
                       ("trc", "TRC"), ("tccd_s", "TCCDS"), ("tccd_l", "TCCDL"), ("trrd_s", "TRRDS"),
                       ("trrd_l", "TRRDL"), ("tfaw", "TFAW"), ("twtr_s", "TWTRS"), ("twtr_l", "TWTRL"),
                       ("trtp", "TRTP"), ("twr", "TWR"), ("trfc", "TRFC"), ("trefi", "TREFI")]:
        out[param] = t[key]
    return out


# name: (top module, parameters of a preset, scaling variable of a preset, fit basis, what)
# The parameters are those tp_chip gives the block (rtl/chip/tp_chip.sv), from the preset as
# cmake/verilated.cmake maps it.
def n_(p):
    return p["mxu"]["n"]


BLOCKS = {
    "mxu_array": ("tp_mxu_array", lambda p: {"N": n_(p), "TagW": 17}, lambda p: n_(p), "n2",
                  "the systolic array: n x n bf16 x bf16 + fp32 cells, weight double buffer, skew"),
    "mxu_acc": ("tp_mxu_acc", lambda p: {"N": n_(p), "AccRows": p["mxu"]["acc_rows"]}, lambda p: n_(p), "n",
                "the accumulators: acc_rows x n fp32 words (SRAM) and n fp32 adders"),
    "vpu": ("tp_vpu", lambda p: {"N": n_(p), "S": p["chip"]["sublanes"]},
            lambda p: n_(p) * p["chip"]["sublanes"], "n", "the vector unit: sublanes x n fp32 lanes"),
    "vmem": ("tp_vmem", lambda p: {"W": 32 * n_(p), "Rows": p["chip"]["vmem_rows"], "Banks": p["chip"]["vmem_banks"],
                                   "NR": 3 + 3 * p["chip"]["sublanes"] + 1, "NW": 1 + p["chip"]["sublanes"] + 1},
             lambda p: n_(p) * (4 + 4 * p["chip"]["sublanes"] + 2), "n",
             "VMEM: the banks (SRAM) and their request arbitration and read/write crossbars"),
    "core": ("tp_core", lambda p: {"N": n_(p), "AccRows": p["mxu"]["acc_rows"], "VmemRows": p["chip"]["vmem_rows"],
                                   "ImemWords": p["chip"]["imem_words"], "Queue": p["chip"]["queue"],
                                   "HbmBeats": p["chip"]["hbm_beats"]},
             lambda p: p["chip"]["queue"], "n", "the front end: instruction memory, scalar unit, decode, unit queues, semaphores, counters"),
    "dma_ld": ("tp_dma_ld", lambda p: {"W": 32 * n_(p)}, lambda p: n_(p), "n", "the load DMA"),
    "dma_st": ("tp_dma_st", lambda p: {"W": 32 * n_(p)}, lambda p: n_(p), "n", "the store DMA"),
    "mxu_unit": ("tp_mxu_unit", lambda p: {"N": n_(p)}, lambda p: n_(p), "n",
                 "the MXU's unit: weight and activation streams from VMEM"),
    "ici_unit": ("tp_ici_unit", lambda p: {"W": 32 * n_(p), "V": p["ici"]["vcs"], "FlitW": p["ici"]["flit_bits"],
                                           "Engines": p["ici"].get("local_ports", 1)},
                 lambda p: n_(p), "n", "the ICI unit: its send engines (VMEM rows to packets) and the receive side"),
    "router": ("tp_ici_router", lambda p: {"V": p["ici"]["vcs"], "B": p["ici"]["buf_flits"],
                                           "FlitW": p["ici"]["flit_bits"], "R": p["ici"]["replay_flits"],
                                           "SaIters": p["ici"].get("sa_iters", 1),
                                           "ClassChoice": int(p["ici"].get("class_choice", False)),
                                           "Locals": p["ici"].get("local_ports", 1),
                                           "TurnRoom": p["ici"].get("turn_room", 1)},
               lambda p: p["ici"]["vcs"] * p["ici"]["buf_flits"], "n",
               "the torus router with its four links' layer (replay buffers, CRC, credits)"),
    "link_tx": ("tp_ici_link_tx", lambda p: {"FW": flit_bits(p), "V": p["ici"]["vcs"], "B": p["ici"]["buf_flits"],
                                             "R": p["ici"]["replay_flits"]},
                lambda p: p["ici"]["replay_flits"], "n", "one link's sender: replay buffer, go-back-N, CRC"),
    "link_rx": ("tp_ici_link_rx", lambda p: {"FW": flit_bits(p), "V": p["ici"]["vcs"]},
                lambda p: flit_bits(p), "n", "one link's receiver: CRC check, sequence, credits"),
    "hbm_ctrl": ("tp_hbm_ctrl", hbm_params, lambda p: p["chip_hbm"]["queue"] + p["chip_hbm"]["write_queue"], "n",
                 "one of the chip's HBM pseudo-channel controllers (chip.hbm over hbm; the chip has channels x pseudo-channels)"),
}
# The blocks too slow to synthesise at large n (the MXU array grows with n^2, the vector unit
# with its lanes): synthesised up to this n; larger presets' figures come from the block's fit.
MAX_N = {"mxu_array": 8, "vpu": 8}
# ... and the first two at these sizes of n too (the other parameters of SWEEP_BASE), for the fit.
SWEEP = {"mxu_array": [2, 3, 4, 6, 8], "vpu": [2, 4, 6, 8]}
SWEEP_BASE = "tiny"
# What make test synthesises (--quick): the round-robin arbiter at three sizes.
QUICK = [("rr_arb", "tp_rr_arb", {"N": n}) for n in (2, 4, 8)]


def flit_bits(p):
    """FW of the link layer: 2 + VW + 4 CW + HOPW + FlitW (rtl/ici/tp_ici_pkg.sv, sw/isa/hw.json)."""
    with open(os.path.join(ROOT, "sw", "isa", "hw.json")) as f:
        ici = json.load(f)["ici"]
    vw = max(1, math.ceil(math.log2(p["ici"]["vcs"]))) if p["ici"]["vcs"] > 1 else 1
    return 2 + vw + 4 * ici["coord_bits"] + ici["hop_bits"] + p["ici"]["flit_bits"]


# ---- Sources ----
def rtl_files():
    files = []
    for d in sorted(os.listdir(os.path.join(ROOT, "rtl"))):
        full = os.path.join(ROOT, "rtl", d)
        if os.path.isdir(full):
            files += [os.path.join(full, f) for f in sorted(os.listdir(full)) if f.endswith(".sv")]
    return files


def module_files(gen_dir):
    """module name -> file, packages (in dependency order), module -> modules it instantiates."""
    mods, deps = {}, {}
    pkgs = [os.path.join(gen_dir, "tp_hw_pkg.sv"), os.path.join(gen_dir, "tp_isa_pkg.sv")]
    for f in rtl_files():
        text = re.sub(r"//.*", "", open(f).read())
        for m in re.finditer(r"^\s*module\s+(\w+)", text, re.M):
            mods[m.group(1)] = f
            body = text[m.end():text.find("endmodule", m.end())]
            deps[m.group(1)] = sorted(set(re.findall(r"^\s*(tp_\w+)\s*(?:#\s*\(|\w+\s*\()", body, re.M)))
        if re.search(r"^\s*package\s+\w+", text, re.M):
            pkgs.append(f)
    # Packages that read another package's names come after it (the generated ones first).
    order = ["tp_hw_pkg", "tp_isa_pkg", "tp_fp_pkg", "tp_secded_pkg", "tp_ici_pkg", "tp_vpu_pkg"]
    rank = {name: i for i, name in enumerate(order)}
    pkgs.sort(key=lambda f: rank.get(os.path.basename(f)[:-3], len(order)))
    return mods, pkgs, deps


def generated_sources(work, tool):
    """Generate the ISA packages into work/gen (scripts/gen_isa.py, as CMake does): (gen, and
    module_files' module -> file, packages, module -> modules)."""
    os.makedirs(work, exist_ok=True)
    gen = os.path.join(work, "gen")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_isa.py"),
                        os.path.join(ROOT, "sw", "isa", "isa.json"), os.path.join(ROOT, "sw", "isa", "hw.json"), gen],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{tool}: scripts/gen_isa.py failed: {r.stderr.strip()}")
    return (gen, *module_files(gen))


def closure(top, mods, deps):
    out, todo = [], [top]
    while todo:
        m = todo.pop()
        if m in out:
            continue
        if m not in mods:
            sys.exit(f"area: module {m} (instantiated under {top}) is in no file of rtl/")
        out.append(m)
        todo += deps.get(m, [])
    return sorted({mods[m] for m in out})


# ---- Synthesis ----
PREFIX = ("proc; flatten; opt_expr; opt_clean; opt -nodffe -nosdff; fsm; opt; wreduce; peepopt; "
          "opt_clean; alumacc; opt; memory -nomap; opt_clean")


def yosys(script, log, timeout):
    t0 = time.monotonic()
    try:
        r = subprocess.run(["yosys", "-q", "-l", log, "-p", script], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0, f"timed out after {timeout} s (log: {log})"
    if r.returncode != 0:
        err = (r.stderr or r.stdout).strip().splitlines()
        return None, time.monotonic() - t0, f"yosys failed: {err[-1] if err else '?'} (log: {log})"
    return r, time.monotonic() - t0, None


def memories(dump):
    """The $mem_v2 cells of a `dump`: name, words, width, read and write ports."""
    out = []
    for cell in re.split(r"\n\s*cell ", dump)[1:]:
        if not cell.startswith("$mem_v2"):
            continue
        name = cell.split()[1].lstrip("\\")

        def param(p):
            m = re.search(r"parameter \\" + p + r" (\d+)\s", cell)
            return int(m.group(1)) if m else 0

        words, width = param("SIZE"), param("WIDTH")
        out.append({"name": name, "words": words, "width": width, "bits": words * width,
                    "read_ports": param("RD_PORTS"), "write_ports": param("WR_PORTS")})
    return out


def lower(block, top, params, files, pkgs, work):
    """Lower a block's sources into their own folder: (yosys' read commands, error)."""
    tag = f"{block}-" + hashlib.sha1(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]
    low = os.path.join(work, "lowered", tag)
    os.makedirs(low, exist_ok=True)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "yosys_lower.py"), "--top", top, low]
                       + pkgs + files, capture_output=True, text=True)
    if r.returncode != 0:
        return tag, None, f"lowering failed: {r.stderr.strip()}"
    srcs = " ".join(os.path.join(low, os.path.basename(f)) for f in pkgs + files)
    chparam = " ".join(f"-set {k} {v}" for k, v in params.items())
    return tag, f"read_verilog -sv {srcs}; chparam {chparam} {top}; hierarchy -check -top {top}", None


def read_check(block, top, params, files, pkgs, work, timeout):
    tag, read, err = lower(block, top, params, files, pkgs, work)
    if err:
        return err
    _, _, err = yosys(read, os.path.join(work, f"{tag}.read.log"), timeout)
    return err


def synth(block, top, params, files, pkgs, work, timeout):
    """Synthesise one block; the result entry (or one with an error)."""
    tag, read, err = lower(block, top, params, files, pkgs, work)
    if err:
        return {"error": err}
    read = f"{read}; {PREFIX}"
    log1 = os.path.join(work, f"{tag}.mem.log")
    dump_file = os.path.join(work, f"{tag}.mem.txt")
    _, t1, err = yosys(f"{read}; tee -q -o {dump_file} dump t:$mem_v2", log1, timeout)
    if err:
        return {"error": err}
    mems = memories(open(dump_file).read())
    sram = [m for m in mems if m["name"] in SRAM_ARRAYS.get(block, [])]
    lost = set(SRAM_ARRAYS.get(block, [])) - {m["name"] for m in sram}
    if lost:
        return {"error": f"no SRAM array {', '.join(sorted(lost))} in {top} (renamed? SRAM_ARRAYS in scripts/area.py)"}
    stat_file = os.path.join(work, f"{tag}.stat.txt")
    to_map = "".join(f"memory_map */c:{m['name']}; " for m in mems if m not in sram)
    script = (f"{read}; {to_map}opt -full; techmap; opt -fast; abc -fast; opt -fast; opt_clean; "
              f"tee -q -o {stat_file} stat")
    _, t2, err = yosys(script, os.path.join(work, f"{tag}.log"), timeout)
    if err:
        return {"error": err}
    counts = {}
    for m in re.finditer(r"^\s+(\$\S+)\s+(\d+)\s*$", open(stat_file).read(), re.M):
        counts[m.group(1)] = int(m.group(2))
    if counts.get("$mem_v2", 0) != len(sram):
        return {"error": f"{counts.get('$mem_v2', 0)} memories left after mapping, {len(sram)} SRAM arrays "
                         f"(stat: {stat_file})"}
    cells, nand2, err = nand2_of(counts)
    if err:
        return {"error": f"{err} (stat: {stat_file})"}
    flops = sum(k for c, k in counts.items() if FLOP.fullmatch(c))
    return {"cells": cells, "nand2_equivalent": nand2, "flops": flops,
            "memory_bits": sum(m["bits"] for m in sram), "memories": sram,
            "flop_arrays": [m for m in mems if m not in sram], "cell_types": counts,
            "synth_seconds": round(t1 + t2, 1)}


# ---- Fits ----
def fit(points, basis):
    """Least squares of nand2 against the basis (n2: a n^2 + b n + c, or a n + c when there are
    fewer than four points; n: a x + c): coefficients and the largest relative error on the points."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    if basis == "n2" and len(points) >= 4:
        cols = [[x * x for x in xs], xs, [1.0] * len(xs)]
        names = ["n^2", "n", "1"]
    elif basis == "n2":
        cols = [[x * x for x in xs], [1.0] * len(xs)]
        names = ["n^2", "1"]
    else:
        cols = [xs, [1.0] * len(xs)]
        names = ["x", "1"]
    k = len(cols)
    if len(points) < k:
        return None
    # Normal equations (k <= 3): solve A^T A c = A^T y by Gaussian elimination.
    ata = [[sum(cols[i][r] * cols[j][r] for r in range(len(xs))) for j in range(k)] for i in range(k)]
    aty = [sum(cols[i][r] * ys[r] for r in range(len(xs))) for i in range(k)]
    for i in range(k):
        piv = ata[i][i]
        if abs(piv) < 1e-12:
            return None
        for j in range(i + 1, k):
            f = ata[j][i] / piv
            for c in range(i, k):
                ata[j][c] -= f * ata[i][c]
            aty[j] -= f * aty[i]
    coef = [0.0] * k
    for i in reversed(range(k)):
        coef[i] = (aty[i] - sum(ata[i][j] * coef[j] for j in range(i + 1, k))) / ata[i][i]

    def value(x):
        v = [x * x, x, 1.0] if names[0] == "n^2" and k == 3 else ([x * x, 1.0] if names[0] == "n^2" else [x, 1.0])
        return sum(c * b for c, b in zip(coef, v))

    err = round(max(abs(value(x) - y) / y for x, y in points), 4) if all(y > 0 for y in ys) else None
    return {"terms": names, "coefficients": [round(c, 3) for c in coef], "max_rel_error": err,
            "points": [[x, y] for x, y in points], "value": value}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="tiny,odd,small,v2")
    ap.add_argument("--extrapolate", default="", help="more presets whose figures come from the fits")
    ap.add_argument("--blocks", default=",".join(BLOCKS))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "reports", "area.json"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "area"))
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per yosys run")
    ap.add_argument("--no-sweep", action="store_true", help="no extra sizes for the n^2 blocks")
    ap.add_argument("--quick", action="store_true", help="make test's check: the arbiter at 3 sizes")
    ap.add_argument("--plot", default=None, help="the plot (default: <out dir>/plots/area.png)")
    ap.add_argument("--update", action="store_true",
                    help="keep the other blocks' results of the existing --out report and redo the fits")
    ap.add_argument("--merge", action="append", default=[], metavar="REPORT",
                    help="with --update: take the results of another area.json too (runs made apart)")
    ap.add_argument("--check", action="store_true",
                    help="only read and elaborate every block at the smallest sizes (make test: the proc "
                         "pass and synthesis take minutes on the core and the n^2 blocks)")
    a = ap.parse_args()
    if a.timeout <= 0:
        sys.exit("area: --timeout must be a positive number of seconds")

    presets = load_presets()
    want = [p for p in a.presets.split(",") if p]
    for p in want + [p for p in a.extrapolate.split(",") if p]:
        if p not in presets:
            sys.exit(f"area: unknown preset '{p}' (known: {', '.join(presets)})")
    blocks = [b for b in a.blocks.split(",") if b]
    for b in blocks:
        if b not in BLOCKS:
            sys.exit(f"area: unknown block '{b}' (known: {', '.join(BLOCKS)})")
    if subprocess.run(["which", "yosys"], capture_output=True).returncode != 0:
        sys.exit("area: yosys is not installed (scripts/install-deps.sh yosys)")

    gen, mods, pkgs, deps = generated_sources(a.work, "area")

    results, failures = [], []

    def run(block, top, params, preset, note=None):
        t0 = time.monotonic()
        print(f"area: {block} at {preset} ({', '.join(f'{k}={v}' for k, v in params.items())}) ...", end="", flush=True)
        r = synth(block, top, params, closure(top, mods, deps), pkgs, a.work, a.timeout)
        entry = {"block": block, "preset": preset, "top": top, "params": params,
                 "what": BLOCKS[block][4] if block in BLOCKS else "the round-robin arbiter", **r}
        if note:
            entry["note"] = note
        if "error" in r:
            print(f" FAILED: {r['error']}")
            failures.append(entry)
        else:
            print(f" {r['cells']} cells, {r['nand2_equivalent']:.0f} NAND2, {r['memory_bits']} memory bits, "
                  f"{time.monotonic() - t0:.0f} s")
            results.append(entry)
        return entry

    if a.check:
        bad = 0
        for b in blocks:
            top, params, _, _, _ = BLOCKS[b]
            q = with_n(presets[SWEEP_BASE], min(SWEEP[b])) if b in SWEEP else presets[SWEEP_BASE]
            err = read_check(b, top, params(q), closure(top, mods, deps), pkgs, a.work, a.timeout)
            print(f"area: {b} ({top}): {'reads' if not err else 'FAILED: ' + err}")
            bad += bool(err)
        return 1 if bad else 0

    if a.quick:
        for block, top, params in QUICK:
            run(block, top, params, "-")
        write(a, results, [], {}, failures, presets)
        return 1 if failures else 0

    for b in blocks:
        top, params, scale, basis, _ = BLOCKS[b]
        for p in want:
            if n_(presets[p]) <= MAX_N.get(b, n_(presets[p])):
                run(b, top, params(presets[p]), p)
        if b in SWEEP and not a.no_sweep:
            for n in SWEEP[b]:
                if any(r["block"] == b and r["params"].get("N") == n for r in results):
                    continue
                run(b, top, params(with_n(presets[SWEEP_BASE], n)), f"sweep n={n}", note=f"{SWEEP_BASE} with n = {n}")

    # --update: the report's other results stay (those of a block and preset run again are
    # replaced), priced again with this table.
    if a.update:
        old = []
        for path in ([a.out] if os.path.exists(a.out) else []) + a.merge:
            with open(path) as f:
                old += json.load(f).get("results", [])
        done = {(r["block"], r["preset"]) for r in results}
        for r in old:
            if (r["block"], r["preset"]) in done:
                continue
            cells, nand2, err = nand2_of(r["cell_types"])
            kept = {m["name"] for m in r.get("memories", [])}
            stale = sorted(kept ^ set(SRAM_ARRAYS.get(r["block"], [])))
            if stale:
                err = f"its SRAM arrays differ from SRAM_ARRAYS in {', '.join(stale)}: synthesise it again"
            if err:
                failures.append({**r, "error": err})
                continue
            results.append({**r, "cells": cells, "nand2_equivalent": nand2})
            done.add((r["block"], r["preset"]))  # the first report that has it wins
    blocks_all = [b for b in BLOCKS if any(r["block"] == b for r in results)]

    # Fits and extrapolation: each block's NAND2 against its scaling variable, at every wanted
    # preset (and --extrapolate's) the block was not synthesised at.
    extrapolated, fits = [], {}
    targets = list(dict.fromkeys(want + [p for p in a.extrapolate.split(",") if p]))
    for b in blocks_all:
        top, params, scale, basis, _ = BLOCKS[b]
        pts = sorted({(scale(preset_of(r, presets)), r["nand2_equivalent"]) for r in results if r["block"] == b})
        f = fit(pts, basis) if len({x for x, _ in pts}) >= 2 else None
        if f:
            fits[b] = {k: v for k, v in f.items() if k != "value"}
        for p in targets:
            if any(r["block"] == b and r["preset"] == p for r in results):
                continue
            if not f:
                failures.append({"block": b, "preset": p, "error": f"not synthesised at {p} and no fit to extrapolate "
                                 f"from (points: {pts}); synthesise it there or at more sizes"})
                continue
            x = scale(presets[p])
            extrapolated.append({"block": b, "preset": p, "x": x, "nand2_equivalent": round(f["value"](x), 1),
                                 "memory_bits": memory_bits_model(b, presets[p]),
                                 "fit": {k: v for k, v in f.items() if k not in ("value", "points")}})
    write(a, results, extrapolated, fits, failures, presets)
    return 1 if failures else 0


def with_n(p, n):
    """A copy of preset p with mxu.n = n."""
    q = json.loads(json.dumps(p))
    q["mxu"]["n"] = n
    return q


def preset_of(result, presets):
    """The preset a result was synthesised at (a sweep's: SWEEP_BASE with its n)."""
    if result["preset"] in presets:
        return presets[result["preset"]]
    return with_n(presets[SWEEP_BASE], result["params"]["N"])


def memory_bits_model(block, p):
    """A block's SRAM bits at a preset, from the preset (what the measured runs count)."""
    n = n_(p)
    if block == "mxu_acc":
        return p["mxu"]["acc_rows"] * n * 32
    if block == "vmem":
        return p["chip"]["vmem_rows"] * n * 32
    if block == "core":
        return p["chip"]["imem_words"] * 128
    return 0


def write(a, results, extrapolated, fits, failures, presets):
    per_preset = {}
    for e in results + extrapolated:
        if e["preset"] not in presets:
            continue
        s = per_preset.setdefault(e["preset"], {"nand2_equivalent": 0.0, "memory_bits": 0, "blocks": []})
        if e["block"] in ("link_tx", "link_rx"):
            continue  # inside the router's figure
        count = hbm_count(presets[e["preset"]]) if e["block"] == "hbm_ctrl" else 1
        s["nand2_equivalent"] += e["nand2_equivalent"] * count
        s["memory_bits"] += e["memory_bits"] * count
        s["blocks"].append(e["block"] + (f" x {count}" if count > 1 else ""))
    area = []
    for p, s in per_preset.items():
        area.append({"preset": p, "node_nm": NODE_NM, "nand2_equivalent": round(s["nand2_equivalent"]),
                     "memory_bits": s["memory_bits"], "logic_mm2": round(logic_mm2(s["nand2_equivalent"]), 4),
                     "sram_mm2": round(sram_mm2(s["memory_bits"]), 4),
                     "area_mm2": round(logic_mm2(s["nand2_equivalent"]) + sram_mm2(s["memory_bits"]), 4),
                     "blocks": s["blocks"],
                     "complete": all(b in [x.split(" ")[0] for x in s["blocks"]] for b in BLOCKS
                                     if b not in ("link_tx", "link_rx"))})
    report = {"tool": "area", "yosys": subprocess.run(["yosys", "-V"], capture_output=True, text=True).stdout.strip(),
              "node_nm": NODE_NM,
              "method": {"flow": PREFIX + "; memory_map (all but the SRAM arrays); opt -full; techmap; abc -fast",
                         "nand2_um2": NAND2_UM2, "sram_arrays": SRAM_ARRAYS,
                         "nand2_per_mm2": NAND2_PER_MM2, "utilisation": UTILISATION,
                         "sram_bitcell_um2": SRAM_BITCELL_UM2, "sram_efficiency": SRAM_EFFICIENCY},
              "results": results, "extrapolated": extrapolated, "fits": fits, "area_mm2": area,
              "failures": failures}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"area: wrote {a.out} ({len(results)} synthesised, {len(extrapolated)} extrapolated, "
          f"{len(failures)} failed)")
    for s in area:
        print(f"area: {s['preset']}: {s['nand2_equivalent']:,} NAND2 + {s['memory_bits']:,} SRAM bits = "
              f"{s['area_mm2']:.3f} mm^2 at {NODE_NM} nm" + ("" if s["complete"] else " (not every block)"))
    plot(a, report)


def hbm_count(p):
    return p["chip_hbm"].get("channels", 1) * p["chip_hbm"].get("pseudo_channels", 1)


def plot(a, report):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        print("area: no matplotlib, no plot (scripts/install-deps.sh python3-matplotlib)")
        return
    out = a.plot or os.path.join(os.path.dirname(os.path.abspath(a.out)), "plots", "area.png")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    entries = [e for e in report["results"] + report["extrapolated"] if not e["preset"].startswith("sweep")
               and e["preset"] != "-"]
    presets = sorted({e["preset"] for e in entries}, key=lambda p: [s["nand2_equivalent"] for s in report["area_mm2"]
                                                                     if s["preset"] == p] or [0])
    blocks = sorted({e["block"] for e in entries})
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    width = 0.8 / max(1, len(presets))
    handles = []
    for i, p in enumerate(presets):
        ys = [next((e["nand2_equivalent"] for e in entries if e["block"] == b and e["preset"] == p), 0) for b in blocks]
        extra = [any(e["block"] == b and e["preset"] == p for e in report["extrapolated"]) for b in blocks]
        bars = axes[0].bar([k + i * width for k in range(len(blocks))], ys, width)
        handles.append(Patch(facecolor=bars[0].get_facecolor(), label=p))  # unhatched, whatever bar 0 is
        for bar, x in zip(bars, extra):
            if x:
                bar.set_hatch("//")
    axes[0].set_yscale("log")
    axes[0].set_xticks([k + width * (len(presets) - 1) / 2 for k in range(len(blocks))])
    axes[0].set_xticklabels(blocks, rotation=45, ha="right")
    axes[0].set_ylabel("NAND2 equivalents (hatched: from the fit)")
    axes[0].legend(handles=handles)
    axes[0].set_title("Logic per block and preset (yosys, generic cells)")
    for b, f in report["fits"].items():
        pts = f["points"]
        axes[1].loglog([x for x, _ in pts], [y for _, y in pts], "o-", label=f"{b} (fit err {100 * (f['max_rel_error'] or 0):.1f}%)")
    axes[1].set_xlabel("scaling variable (n, lanes, ...)")
    axes[1].set_ylabel("NAND2 equivalents")
    axes[1].set_title("Measured points of each fit")
    if report["fits"]:
        axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"area: wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
