#!/usr/bin/env python3
"""Check docs/chip.md's register table and counter table against sw/isa/hw.json (the source of
truth): every register (address, name, access) and every counter (index, name) in the same order,
nothing missing, nothing extra. usage: check_hw_docs.py <hw.json> <chip.md>; exit 1 names each
difference."""
import json
import re
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from gen_isa import counters  # noqa: E402  (the generator's own expansion of counter groups)


def main():
    hw = json.load(open(sys.argv[1]))
    doc = open(sys.argv[2]).read().splitlines()
    regs = [(int(m.group(1), 16), m.group(2), m.group(3)) for line in doc
            if (m := re.match(r"^\| (0x[0-9a-f]{3}) \| ([A-Z0-9_]+) \| (RW|R|W) \|", line))]
    # Counter rows: "| k | `name` |" or a group "| a..b | `n1`, `n2`, ... |".
    cnts = []
    for line in doc:
        m = re.match(r"^\| (\d+)(?:\.\.(\d+))? \| ((?:`[a-z0-9_]+`(?:, )?)+) \|", line)
        if not m:
            continue
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        names = re.findall(r"`([a-z0-9_]+)`", m.group(3))
        if len(names) != last - first + 1:
            print(f"check_hw_docs: counter row '{m.group(0)}' has {len(names)} names for {last - first + 1} indices")
            return 1
        cnts += [(first + i, n) for i, n in enumerate(names)]
    want_regs = [(int(c["addr"], 16), c["name"].upper(), c["access"]) for c in hw["csrs"]]
    want_cnts = [(k, n) for k, n, _ in counters(hw)]
    bad = []
    if regs != want_regs:
        for i in range(max(len(regs), len(want_regs))):
            got = regs[i] if i < len(regs) else None
            exp = want_regs[i] if i < len(want_regs) else None
            if got != exp:
                bad.append(f"register row {i}: docs/chip.md has {got}, hw.json {exp}")
    if cnts != want_cnts:
        for i in range(max(len(cnts), len(want_cnts))):
            got = cnts[i] if i < len(cnts) else None
            exp = want_cnts[i] if i < len(want_cnts) else None
            if got != exp:
                bad.append(f"counter row {i}: docs/chip.md has {got}, hw.json {exp}")
    for b in bad:
        print(f"check_hw_docs: {b}")
    if bad:
        print("check_hw_docs: docs/chip.md differs from sw/isa/hw.json (the table is right; fix the page)")
        return 1
    print(f"check_hw_docs: docs/chip.md matches sw/isa/hw.json ({len(regs)} registers, {len(cnts)} counters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
