#!/usr/bin/env python3
"""Lower tensorpod's SystemVerilog to the subset Debian 12's yosys (0.23) reads (docs/area.md).

The RTL is written for Verilator. yosys 0.23's front end rejects these, and each is rewritten
into what it reads, keeping the bits the same:
  - `import pkg::*;`: every use of the package's names is qualified (`pkg::name`), the import
    removed. A name a module declares that its imported package also exports would become a
    qualified declaration, which yosys rejects: shadowing fails loudly, never silently.
  - another package's parameter in a package: its literal value;
  - `return` in functions: a tail return (nothing runs after it) assigns the function's name; any
    other gets a flag (`<f>__done`), so the first return that runs sets the result (the
    functions are pure: what runs after a taken return changes nothing that is read);
  - multi-dimensional packed arrays: vectors, with their indices turned into bit offsets;
  - the unpacked-array ports of the synthesis tops (--top): vectors `<port>__flat`;
  - struct-typed arrays and function variables, and `a[i].field`: vectors and bit selects;
  - named assignment patterns `'{f: v}`: concatenations in the struct's field order;
  - casts to types (`T'(x)`, `int'(x)`), `$bits(pkg::T)` and `parameter string`;
  - with --formal (make formal, which reads the simulation checks: `read_verilog -formal` does not
    define SYNTHESIS): the action blocks of immediate assertions (`assert (c) else $error(...);`)
    are dropped, and a bare `$error(...);` inside an `ifndef SYNTHESIS` region becomes
    `assert (1'b0);`, so that each simulation check is a proof obligation.
Line numbers stay as in rtl/ (yosys' errors point at the right line). Usage:
  yosys_lower.py [--formal] [--top MODULE[,MODULE...]] OUT_DIR FILE...
writes OUT_DIR/<basename> of every FILE (.vlt files are skipped). Exits non-zero with file:line on
what it cannot lower.
"""
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
TYPE_WORDS = {"logic", "bit", "int", "integer", "reg", "byte", "shortint", "longint", "wire"}


def fail(path, line, msg):
    sys.exit(f"{path}:{line}: yosys_lower: {msg}")


def code_mask(text):
    """A list of booleans, True where text[i] is code (not a comment or a string)."""
    mask = [True] * len(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            i += 1
            continue
        for k in range(i, min(j, n)):
            mask[k] = False
        i = j
    return mask


def blank_comments(text):
    mask = code_mask(text)
    return "".join(c if mask[i] or c == "\n" else " " for i, c in enumerate(text))


FUNC = re.compile(r"\bfunction\s+(?:(?:automatic|static)\s+)?")


def function_name(code, start):
    """The name of the function whose `function` keyword matched at code[start:], and the index
    after it: the last identifier before the port list's '(', bracket groups ([$clog2(N)-1:0] in
    a return type) skipped. (None, start) when there is no port list."""
    i, name, end = start, None, start
    while i < len(code):
        c = code[i]
        if c == "[":
            gs = groups_at(code, i)
            i = gs[-1][1]
        elif c == "(":
            return name, end
        elif c == ";":
            return None, start
        elif c.isalpha() or c == "_":
            m = IDENT.match(code, i)
            name, end, i = m.group(0), m.end(), m.end()
        else:
            i += 1
    return None, start


def split_top(text):
    """text split at its top-level commas (not inside (), [] or {})."""
    parts, depth, cur = [], 0, ""
    for c in text:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    return parts


def package_names(text):
    """The names a package exports: parameters, typedefs, enum members and functions."""
    code = blank_comments(text)
    names = set()
    for m in re.finditer(r"\b(localparam|parameter)\b([^;]*);", code):
        for p in split_top(m.group(2)):
            lhs = p.split("=")[0]
            ids = IDENT.findall(lhs)
            if ids:
                names.add(ids[-1])
    for m in re.finditer(r"\btypedef\s+(struct|union|enum)\b[^{]*\{(.*?)\}\s*(\w+)\s*;", code, re.S):
        names.add(m.group(3))
        if m.group(1) == "enum":
            for item in m.group(2).split(","):
                ids = IDENT.findall(item.split("=")[0])
                if ids:
                    names.add(ids[0])
    for m in re.finditer(r"\btypedef\s+(?!struct|union|enum)[^;{]*?(\w+)\s*;", code):
        names.add(m.group(1))
    for m in FUNC.finditer(code):
        name, _ = function_name(code, m.end())
        if name:
            names.add(name)
    return names


def qualify(path, text, exports):
    """Remove imports and qualify the imported names, scope by scope."""
    mask = code_mask(text)
    out = []
    pos = 0
    imports = []  # packages imported in the current module or package
    for t in re.finditer(r"\bimport\s+(\w+)\s*::\s*\*\s*;|[A-Za-z_][A-Za-z0-9_$]*", text):
        s = t.start()
        if not mask[s]:
            continue
        line = text.count("\n", 0, s) + 1
        word = t.group(0)
        if t.group(1):
            if t.group(1) not in exports:
                fail(path, line, f"import of unknown package {t.group(1)}")
            imports.append(t.group(1))
            out.append(text[pos:s])
            pos = t.end()
            continue
        if word in ("endmodule", "endpackage"):
            imports = []
            continue
        prev = text[s - 1] if s > 0 else ""
        if text[max(0, s - 2):s] == "::" or prev in ".'$`" or text[t.end():t.end() + 2] == "::":
            continue
        owners = [p for p in imports if word in exports[p]]
        if len(owners) > 1:
            fail(path, line, f"{word} is exported by {', '.join(owners)}")
        if owners:
            out.append(text[pos:s])
            out.append(f"{owners[0]}::{word}")
            pos = t.end()
    out.append(text[pos:])
    return "".join(out)


def call_end(path, code, i, what="unbalanced parentheses"):
    """The index after the `)` that closes the `(` at code[i]."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "(":
            depth += 1
        elif code[j] == ")":
            depth -= 1
            if depth == 0:
                return j + 1
    fail(path, code.count("\n", 0, i) + 1, what)


def header_end(path, code, start):
    """The index of the ';' that ends the function header whose name ends at start."""
    return code.index(";", call_end(path, code, code.index("(", start), "no end of a function header") - 1)


def skip_statement(code, i):
    """The index after the statement at code[i] (begin..end, case..endcase, or up to ';')."""
    m = re.compile(r"\s*(begin|case|casez|casex|if)\b").match(code, i)
    if m and m.group(1) == "begin":
        depth = 0
        for t in re.finditer(r"\b(begin|end)\b", code[i:]):
            depth += 1 if t.group(1) == "begin" else -1
            if depth == 0:
                return i + t.end()
        return len(code)
    if m and m.group(1).startswith("case"):
        t = re.compile(r".*?\bendcase\b", re.S).match(code, i)
        return t.end() if t else len(code)
    j = code.find(";", i)
    return len(code) if j < 0 else j + 1


def in_tail(code, i, end):
    """True when nothing runs after the statement ending at code[i] up to code[end] (the
    endfunction): what follows is only `end`, `endcase`, `else` branches and other case items."""
    label = re.compile(r"\s*(?!(?:begin|end|if|else|case|for|while)\b)(default|[\w'\s,]+?)\s*:(?!:)")
    while True:
        m = re.compile(r"\s*").match(code, i)
        i = m.end()
        if i >= end:
            return True
        w = re.compile(r"(endcase|end|else)\b").match(code, i)
        if w and w.group(1) in ("end", "endcase"):
            i = w.end()
            continue
        if w and w.group(1) == "else":
            i = skip_statement(code, w.end())
            continue
        m = label.match(code, i)
        if m:
            i = skip_statement(code, m.end())
            continue
        return False


def lower_returns(path, text):
    """Rewrite `return` in functions as assignments to the function's name."""
    lines = text.split("\n")
    code_lines = blank_comments(text).split("\n")
    code = "\n".join(code_lines)
    line_at = [0]
    for x in code_lines:
        line_at.append(line_at[-1] + len(x) + 1)
    i = 0
    while i < len(lines):
        m = re.match(r"\s*" + FUNC.pattern, code_lines[i])
        name, name_end = function_name(code, line_at[i] + m.end()) if m else (None, 0)
        if not name:
            i += 1
            continue
        semi = header_end(path, code, name_end)
        h = code.count("\n", 0, semi)
        if re.search(r"\bendfunction\b", code_lines[h][semi - line_at[h]:]):
            if re.search(r"\breturn\b", code_lines[h]):
                fail(path, h + 1, f"function {name}: a function on one line with a return (write it on several)")
            i = h + 1
            continue
        e = h + 1
        while e < len(lines) and not re.match(r"\s*endfunction\b", code_lines[e]):
            e += 1
        if e >= len(lines):
            fail(path, i + 1, f"function {name}: no endfunction")
        rets = [k for k in range(h + 1, e) if re.search(r"\breturn\b", code_lines[k])]
        last_stmt = max((k for k in range(h + 1, e) if code_lines[k].strip()), default=None)
        ends = {k: next(j for j in range(k, e) if ";" in code_lines[j][code_lines[j].find("return") if j == k else 0:])
                for k in rets}
        if len(rets) == 1 and ends[rets[0]] == last_stmt and re.match(r"\s*return\b", code_lines[rets[0]]):
            k = rets[0]
            lines[k] = re.sub(r"\breturn\b", f"{name} =", lines[k], count=1)
            rets = []
        elif rets and not re.search(r"\b(for|while|repeat|forever|do)\b", code[line_at[h + 1]:line_at[e]]):
            # Returns with nothing after them (the last statement of a case item, an if's branch)
            # just assign; the others set a flag that skips the assignments of later ones. In a
            # loop a return is never in tail position (the loop goes on): flags.
            tail = {k for k in rets if in_tail(code, line_at[ends[k]] + code_lines[ends[k]].index(";",
                    code_lines[ends[k]].find("return") if ends[k] == k else 0) + 1, line_at[e])}
            if tail == set(rets):
                for k in rets:
                    lines[k] = re.sub(r"\breturn\b", f"{name} =", lines[k], count=1)
                rets = []
        if rets:
            flag = f"{name}__done"
            # Any other assignment to the function's name would run after a taken return.
            body = code[line_at[h + 1]:line_at[e]]
            if re.search(r"(?<![\w.])" + name + r"\s*(\[[^\]]*\]\s*)*(?<![=!<>])=(?!=)", body):
                fail(path, h + 1, f"function {name}: early returns and an assignment to {name} (write one form)")
            for k in rets:
                # A return may span lines: rewrite lines k .. the one with its ';' as one string.
                k2 = ends[k]
                span = "\n".join(lines[k:k2 + 1])
                mm = re.search(r"\breturn\b(.*?);", span, re.S)
                span = (span[:mm.start()] + f"begin if (!{flag}) {name} ={mm.group(1)}; "
                        f"{flag} = 1'b1; end" + span[mm.end():])
                lines[k:k2 + 1] = span.split("\n")
            # Declarations come first in a function body: the flag's reset goes before the first
            # statement, its declaration right after the header (same line, so lines stay put).
            first = None
            for k in range(h + 1, e):
                words = IDENT.findall(code_lines[k])
                if not words:
                    continue
                if words[0] in TYPE_WORDS or re.match(r"\s*\w+(::\w+)?\s+\w+(\s*,\s*\w+)*\s*;", code_lines[k]):
                    continue
                first = k
                break
            if first is None:
                fail(path, h + 1, f"function {name}: no statement")
            col = semi - line_at[h] + 1  # after the header's ';', before a trailing comment
            lines[h] = lines[h][:col] + f" logic {flag};" + lines[h][col:]
            lines[first] = f"{flag} = 1'b0; " + lines[first]
        i = e + 1
    return "\n".join(lines)


KEYWORDS = {"input", "output", "inout", "logic", "wire", "reg", "bit", "parameter", "localparam"}


def groups_at(text, i):
    """The bracket groups [..][..] starting at text[i]: a list of (start, end) of each group."""
    out = []
    while i < len(text) and text[i] == "[":
        depth, j = 0, i
        while j < len(text):
            if text[j] == "[":
                depth += 1
            elif text[j] == "]":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        out.append((i, j + 1))
        i = j + 1
    return out


def top_level(expr, chars):
    """The index of the first of chars at bracket depth 0 in expr, or -1."""
    depth = 0
    expr = expr.replace("::", "  ")  # a package separator is not a range's colon
    for k, c in enumerate(expr):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c in chars:
            return k
    return -1


def dims_of(path, line, groups_text):
    """The widths of packed dims written as [msb:0]...; fails on anything else."""
    widths = []
    for g in re.findall(r"\[([^\[\]]*)\]", groups_text):
        c = top_level(g, ":")
        msb, lsb = (g, "") if c < 0 else (g[:c], g[c + 1:])
        if lsb.strip() != "0":
            fail(path, line, f"packed dimension [{g}] does not end at 0")
        widths.append(f"(({msb.strip()})+1)")
    return widths


def product(ws):
    return "*".join(ws) if ws else "1"


def part_select(e):
    """The index of a top-level '+:' or '-:' in a select's text, or -1."""
    depth = 0
    for k, c in enumerate(e):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c in "+-" and e[k + 1:k + 2] == ":":
            return k
    return -1


def fold_select(base, e):
    """The select [base + e] of bits, where e is what a select of them said: an index, a range
    h:l or a part select b +: w (b -: w)."""
    k = part_select(e)
    if k >= 0:
        return f"[{base}+({e[:k]}){e[k:k + 2]}{e[k + 2:]}]"
    c = top_level(e, ":")
    if c >= 0 and top_level(e, "?") < 0:
        return f"[{base}+({e[c + 1:]}) +: ({e[:c]})-({e[c + 1:]})+1]"
    return f"[{base}+({e})]"


def packed_decls(path, code, types):
    """The multi-dimensional packed declarations of one scope: (edits, names -> widths)."""
    line = lambda pos: code.count("\n", 0, pos) + 1
    edits, scope = [], {}

    def take_names(k, ws, typedef):
        while True:
            m = re.compile(r"\s*([A-Za-z_]\w*)").match(code, k)
            if not m or m.group(1) in KEYWORDS:
                return
            if typedef:
                types[m.group(1)] = ws
                return
            if m.group(1) in scope and scope[m.group(1)] != ws:
                fail(path, line(m.start(1)), f"{m.group(1)} declared twice with different dimensions")
            if re.compile(r"\s*\[").match(code, m.end()):
                fail(path, line(m.start(1)), f"{m.group(1)}: unpacked dimensions on a multi-dimensional packed array")
            scope[m.group(1)] = ws
            k = m.end()
            init = re.compile(r"\s*=").match(code, k)
            if init:  # skip the initialiser, up to the next top-level ',' or ';'
                depth, k = 0, init.end()
                while k < len(code) and not (depth == 0 and code[k] in ",;)"):
                    depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(code[k], 0)
                    k += 1
            n = re.compile(r"\s*,\s*([A-Za-z_]\w*)").match(code, k)
            if not n or n.group(1) in KEYWORDS:
                return
            k = code.index(",", k) + 1

    for m in re.finditer(r"\b(?:logic|wire|reg|bit)\s*((?:\[[^\[\]]*\]\s*){2,})", code):
        ws = dims_of(path, line(m.start(1)), m.group(1))
        edits.append((m.start(1), m.end(1), f"[{product(ws)}-1:0] "))
        typedef = re.match(r"\s*typedef\b", code[code.rfind("\n", 0, m.start()) + 1:m.start()])
        take_names(m.end(1), ws, typedef)
    for tname, ws in list(types.items()):
        for m in re.finditer(r"(?<![\w:])(?:\w+::)?" + re.escape(tname) + r"\b(?=\s+\w)", code):
            take_names(m.end(), ws, False)
    return edits, scope


def rewrite_uses(path, seg, code, scope):
    """seg with every indexed use of a flattened name rewritten (code: seg without comments)."""
    out, pos = [], 0
    for m in re.finditer(r"[A-Za-z_]\w*", code):
        w = m.group(0)
        if w not in scope or m.start() < pos:
            continue
        prev = code[m.start() - 1] if m.start() else ""
        if (prev and prev in ".'$`") or code[max(0, m.start() - 2):m.start()] == "::":
            continue
        gs = groups_at(code, m.end())
        if not gs:
            continue
        ws = scope[w]
        gs = gs[:len(ws)]
        parts = [rewrite_uses(path, seg[a + 1:b - 1], code[a + 1:b - 1], scope) for a, b in gs]
        full = len(parts) == len(ws)  # the last group selects bits of an element
        off = []
        for j, e in enumerate(parts[:-1] if full else parts):
            if top_level(e, ":") >= 0 and top_level(e, "?") < 0:
                fail(path, code.count("\n", 0, m.start()) + 1, f"a range over an array dimension of {w}")
            off.append(f"({e})*{product(ws[j + 1:])}")
        base = "+".join(off) if off else "0"
        if full:
            idx = fold_select(base, parts[-1])
        else:
            idx = f"[{base} +: {product(ws[len(parts):])}]"
        out.append(seg[pos:m.end()])
        out.append(idx)
        pos = gs[-1][1]
    out.append(seg[pos:])
    return "".join(out)


def flatten_packed(path, text, types):
    """Multi-dimensional packed arrays become vectors (the same bits: x[i] is x[i*W +: W])."""
    out, pos = [], 0
    code = blank_comments(text)
    for m in re.finditer(r"\b(module|package)\b.*?\b(endmodule|endpackage)\b", code, re.S):
        seg, seg_code = text[m.start():m.end()], code[m.start():m.end()]
        edits, scope = packed_decls(path, seg_code, types)
        # A flattened name declared again with another type (a function's argument, a local)
        # would be rewritten too: refuse it.
        for name in scope:
            for d in re.finditer(r"\b(?:input|output|inout|logic|wire|reg|bit|int|integer)\b([^;()]*?)\b" + name
                                 + r"\b(?!\s*[\[(.])", seg_code):
                if not re.search(r"\]\s*\[", d.group(1)) and not any(re.search(r"\b" + t + r"\b", d.group(1))
                                                                       for t in types):
                    fail(path, code.count("\n", 0, m.start() + d.start()) + 1,
                         f"{name} is also declared here with another type than its multi-dimensional one: rename one")
        for a, b, r in sorted(edits, reverse=True):
            seg, seg_code = seg[:a] + r + seg[b:], seg_code[:a] + r + seg_code[b:]
        out.append(text[pos:m.start()])
        out.append(rewrite_uses(path, seg, seg_code, scope) if scope else seg)
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def fold_package_refs(texts):
    """yosys 0.23 reads pkg::name in modules but not in another package's parameters: inside
    packages, a reference to another package's literal parameter becomes its value."""
    values = {}
    num = r"(\d+|\d*'[sS]?[dhbo][0-9a-fA-F_]+)"
    for _ in range(4):  # chains of packages: fold until nothing changes
        for f, t in texts.items():
            code = blank_comments(t)
            for pm in re.finditer(r"\bpackage\s+(\w+)\s*;(.*?)\bendpackage\b", code, re.S):
                # Integer parameters only: a sized one's value would lose its width.
                for m in re.finditer(r"\blocalparam(?:\s+int(?:\s+unsigned)?|\s+integer)?\s+(\w+)\s*=\s*\(?" + num
                                     + r"\)?\s*[;,]", pm.group(2)):
                    values[f"{pm.group(1)}::{m.group(1)}"] = m.group(2)

        def sub(m):
            return f"({values[m.group(0)]})" if m.group(0) in values else m.group(0)

        changed = False
        for f, t in texts.items():
            out, pos = [], 0
            for pm in re.finditer(r"\bpackage\b.*?\bendpackage\b", t, re.S):
                out.append(t[pos:pm.start()])
                out.append(re.sub(r"\b\w+::\w+\b", sub, pm.group(0)))
                pos = pm.end()
            out.append(t[pos:])
            new = "".join(out)
            changed |= new != t
            texts[f] = new
        if not changed:
            return


def logic_typedef_widths(texts):
    """Widths of `typedef logic [msb:0] name;` in packages, as pkg::name -> expression."""
    widths = {}
    for t in texts.values():
        code = blank_comments(t)
        for pm in re.finditer(r"\bpackage\s+(\w+)\s*;(.*?)\bendpackage\b", code, re.S):
            pkg = pm.group(1)
            for m in re.finditer(r"\btypedef\s+logic\s*\[((?:[^\[\]:]|::)*):\s*0\s*\]\s*(\w+)\s*;", pm.group(2)):
                msb = re.sub(r"(?<![\w:])([A-Za-z_]\w*)", lambda x: f"{pkg}::{x.group(1)}", m.group(1))
                widths[f"{pkg}::{m.group(2)}"] = f"(({msb})+1)"
    return widths


def flatten_ports(path, text, module, typedefs):
    """The unpacked-array ports of `module` (a synthesis top: no parent connects them) become
    vectors named <port>__flat; inside, the original arrays are assigned from or to them."""
    code = blank_comments(text)
    m = re.search(r"\bmodule\s+" + module + r"\b", code)
    if not m:
        fail(path, 1, f"no module {module}")
    # The port list: from the '(' after the parameters to its ')' and ';'.
    i = m.end()
    if code[i:].lstrip().startswith("#"):
        i = code.index("#", i)
        depth, j = 0, code.index("(", i)
        while True:
            depth += {"(": 1, ")": -1}.get(code[j], 0)
            if depth == 0:
                break
            j += 1
        i = j + 1
    start = code.index("(", i)
    depth, j = 0, start
    while True:
        depth += {"(": 1, ")": -1}.get(code[j], 0)
        if depth == 0:
            break
        j += 1
    end = j
    semi = code.index(";", end)
    port = re.compile(r"\b(input|output)\s+((?:logic|wire)\s*(?:\[[^\[\]]*\])?|(?:\w+::)?\w+)\s+(\w+)"
                      r"\s*((?:\[[^\[\]]*\]\s*)+)(?=[,)/\s])")
    edits, body = [], []
    for pm in port.finditer(code, start, end):
        direction, typ, name, udims = pm.group(1), pm.group(2).strip(), pm.group(3), pm.group(4)
        rng = re.search(r"\[((?:[^\[\]:]|::)*):\s*0\s*\]", typ)
        if rng:
            w = f"(({rng.group(1)})+1)"
        elif typ in ("", "logic", "wire"):
            w = "1"
        elif typ in typedefs:
            w = typedefs[typ]
        else:
            fail(path, code.count("\n", 0, pm.start()) + 1, f"port {name}: element type {typ} has no known width")
        counts = [d.strip() for d in re.findall(r"\[([^\[\]]*)\]", udims)]
        total = "*".join(f"({c})" for c in counts + [w])
        edits.append((pm.start(), pm.end(), f"{direction} logic [{total}-1:0] {name}__flat"))
        loops, idx = "", "0"
        for k, c in enumerate(counts):
            loops += f"for (genvar {name}__g{k} = 0; {name}__g{k} < ({c}); {name}__g{k}++) begin : g_{name}_{k} "
            idx = f"({idx})*({c})+{name}__g{k}"
        elem = name + "".join(f"[{name}__g{k}]" for k in range(len(counts)))
        flat = f"{name}__flat[({idx})*{w} +: {w}]"
        assign = f"assign {flat} = {elem};" if direction == "output" else f"assign {elem} = {flat};"
        elem_type = f"logic [{w}-1:0]" if typ in typedefs else typ  # 0.23: no arrays of pkg types
        body.append(f"{elem_type} {name} {udims.strip()}; {loops}{assign} " + "end " * len(counts))
    for a, b, r in sorted(edits, reverse=True):
        text = text[:a] + r + text[b:]
        semi += len(r) - (b - a)
    return text[:semi + 1] + " " + " ".join(body) + text[semi + 1:]


def balance_signed(path, text):
    """Close the extra parenthesis each `$signed(32'(` rewrite of int'( opened."""
    out, pos = [], 0
    for m in re.finditer(re.escape("$signed(32'("), text):
        depth, j = 1, m.end()
        while depth:
            if j >= len(text):
                fail(path, text.count("\n", 0, m.start()) + 1, "unbalanced int'( cast")
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        out.append(text[pos:j])
        out.append(")")
        pos = j
    out.append(text[pos:])
    return "".join(out)


def named_patterns(path, text, structs):
    """'{field: value, ...} of a packed struct becomes a concatenation in the struct's field
    order (the first field is the most significant), each value cast to its field's width;
    every field named once, the struct the only one with those fields."""
    code = blank_comments(text)
    out, pos = [], 0
    for m in re.finditer(r"'\{", code):
        line = code.count("\n", 0, m.start()) + 1
        depth, j = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        body = text[m.end():j - 1]
        pairs = {}
        for it in split_top(body):
            k, sep, v = it.partition(":")
            if not sep or not re.fullmatch(r"\s*\w+\s*", k):
                fail(path, line, "an assignment pattern that is not field: value")
            if k.strip() in pairs:
                fail(path, line, f"field {k.strip()} twice in an assignment pattern")
            pairs[k.strip()] = v.strip()
        layouts = {tuple(fs) for name, fs in structs.items() if sorted(f for f, _ in fs) == sorted(pairs)}
        if len(layouts) != 1:
            fail(path, line, "no packed struct with the pattern's fields" if not layouts else
                 "more than one packed struct with the pattern's fields")
        fields = next(iter(layouts))
        out.append(text[pos:m.start()])
        out.append("{" + ", ".join(f"({w})'({pairs[f]})" for f, w in fields) + "\n" * body.count("\n") + "}")
        pos = j
    out.append(text[pos:])
    return "".join(out)


def struct_table(texts):
    """Packed struct name (and pkg::name) -> [(field, width)], the first field first. Fields must
    be `logic [msb:0] name;` or `logic name;`, and a name means one layout everywhere."""
    structs = {}
    field = re.compile(r"\blogic\s*(?:\[((?:[^\[\]:]|::)*):\s*0\s*\])?\s*(\w+)\s*;")
    for f, t in texts.items():
        code = blank_comments(t)
        for pm in re.finditer(r"\b(?:package\s+(\w+)|module\s+\w+)\b(.*?)\b(?:endpackage|endmodule)\b", code, re.S):
            for m in re.finditer(r"\btypedef\s+struct\s+packed\s*\{(.*?)\}\s*(\w+)\s*;", pm.group(2), re.S):
                line = code.count("\n", 0, pm.start(2) + m.start()) + 1
                fields = [(fm.group(2), f"(({fm.group(1)})+1)" if fm.group(1) else "1")
                          for fm in field.finditer(m.group(1))]
                if len(fields) != m.group(1).count(";"):
                    fail(f, line, f"struct {m.group(2)}: a field that is not `logic [msb:0] name;`")
                for key in [m.group(2)] + ([f"{pm.group(1)}::{m.group(2)}"] if pm.group(1) else []):
                    if structs.get(key, fields) != fields:
                        fail(f, line, f"two packed structs named {m.group(2)} with different fields")
                    structs[key] = fields
    return structs


def type_casts(path, text, type_names, widths):
    """T'(x) with T a type becomes W'(x), W its width; a type of unknown width fails."""
    if not type_names:
        return text

    def sub(m):
        name = m.group(1)
        w = widths.get(name) or widths.get(name.split("::")[-1])
        if w is None:
            fail(path, text.count("\n", 0, m.start()) + 1, f"a cast to {name}, whose width is not known")
        return f"({w})'("

    names = "|".join(sorted(type_names))
    return re.sub(r"(?<![\w'])((?:\w+::)?\b(?:" + names + r"))'\(", sub, text)


def struct_members(path, text, structs):
    """0.23 reads x.field on a struct variable in a module but not on an array element, nor in a
    function: struct variables and arrays become vectors, a[i].field the field's bits,
    a[i][offset +: width] (a packed struct's last field is its lowest bits)."""
    code = blank_comments(text)
    arrays, decls = {}, []
    for m in re.finditer(r"(?<![\w:])((?:\w+::)?\w+)\s+(\w+)\s*((?:\[[^\[\]]*\]\s*)*);", code):
        if m.group(1) in structs:
            entry = (structs[m.group(1)], len(re.findall(r"\[", m.group(3))))
            if arrays.get(m.group(2), entry) != entry:
                fail(path, code.count("\n", 0, m.start()) + 1, f"{m.group(2)} declared with two struct types")
            arrays[m.group(2)] = entry
            decls.append((m.start(1), m.end(1), "+".join(w for _, w in structs[m.group(1)])))
    if not arrays:
        return text
    out, pos = [], 0
    # The array's elements become plain vectors of the struct's width (0.23 does not index
    # arrays of structs); every field access below is a bit select.
    for a, b, width in sorted(decls, reverse=True):
        text = text[:a] + f"logic [({width})-1:0]" + text[b:]
        code = code[:a] + f"logic [({width})-1:0]" + code[b:]
    for m in re.finditer(r"(?<![\w.:'])(" + "|".join(arrays) + r")\b", code):
        fields, ndims = arrays[m.group(1)]
        gs = groups_at(code, m.end())
        if len(gs) != ndims:
            continue
        f = re.compile(r"\.(\w+)\b").match(code, gs[-1][1] if gs else m.end())
        if not f:
            continue
        names = [n for n, _ in fields]
        if f.group(1) not in names:
            fail(path, code.count("\n", 0, m.start()) + 1, f"no field {f.group(1)} in {m.group(1)}'s struct")
        k = names.index(f.group(1))
        off = "+".join(w for _, w in fields[k + 1:]) or "0"
        out.append(text[pos:f.start()])
        sel = groups_at(code, f.end())
        if not sel:
            out.append(f"[({off}) +: {fields[k][1]}]")
            pos = f.end()
            continue
        # A select of the field's bits folds into one select (Verilog has no x[a +: w][b]).
        if len(sel) > 1:
            fail(path, code.count("\n", 0, m.start()) + 1, f"two selects of field {f.group(1)}")
        out.append(fold_select(f"({off})", text[sel[0][0] + 1:sel[0][1] - 1]))
        pos = sel[0][1]
    out.append(text[pos:])
    return "".join(out)


def keep_lines(text):
    """Blanks of the same length that keep the newlines, so that line numbers do not move."""
    return re.sub(r"[^\n]", " ", text)


def lower_checks(path, text):
    """--formal: simulation checks as plain assertions (see the module comment)."""
    code = blank_comments(text)
    out, last = [], 0
    # assert (c) else $error(...);  ->  assert (c);
    for m in re.finditer(r"\bassert\s*\(", code):
        end = call_end(path, code, m.end() - 1)
        a = re.match(r"\s*else\s*\$(?:error|fatal|warning)\s*\(", code[end:])
        if not a:
            continue
        stop = call_end(path, code, end + a.end() - 1)
        semi = re.match(r"\s*;", code[stop:])
        if not semi:
            fail(path, code.count("\n", 0, stop) + 1, "no ';' after an assertion's action block")
        out += [text[last:end], keep_lines(text[end:stop])]
        last = stop
    out.append(text[last:])
    text = "".join(out)
    # $error(...); in an `ifndef SYNTHESIS region -> assert (1'b0);
    code = blank_comments(text)
    out, last = [], 0
    for region in re.finditer(r"`ifndef\s+SYNTHESIS\b(.*?)`(?:else|endif)", code, re.S):
        for m in re.finditer(r"\$error\s*\(", code[region.start(1):region.end(1)]):
            i = region.start(1) + m.start()
            stop = call_end(path, code, region.start(1) + m.end() - 1)
            repl = "assert (1'b0)"
            out += [text[last:i], repl + keep_lines(text[i:stop])[len(repl):]]
            last = stop
    out.append(text[last:])
    return "".join(out)


def main():
    args = sys.argv[1:]
    tops = []
    formal = False
    if args and args[0] == "--formal":
        formal, args = True, args[1:]
    if len(args) >= 2 and args[0] == "--top":
        tops, args = args[1].split(","), args[2:]
    if len(args) < 2:
        sys.exit("usage: yosys_lower.py [--formal] [--top MODULE[,MODULE...]] OUT_DIR FILE...")
    out_dir = args[0]
    files = [f for f in args[1:] if not f.endswith(".vlt")]
    texts = {f: open(f, encoding="utf-8").read() for f in files}
    if formal:
        texts = {f: lower_checks(f, t) for f, t in texts.items()}
    exports = {}
    for f, t in texts.items():
        for m in re.finditer(r"^\s*package\s+(\w+)\s*;", blank_comments(t), re.M):
            exports[m.group(1)] = package_names(t)
    os.makedirs(out_dir, exist_ok=True)
    texts = {f: qualify(f, t, exports) for f, t in texts.items()}
    fold_package_refs(texts)
    typedefs = logic_typedef_widths(texts)
    structs = struct_table(texts)
    type_names = set()
    for t in texts.values():
        code = blank_comments(t)
        for m in re.finditer(r"\btypedef\s+(?:struct|union|enum)\b[^{]*\{.*?\}\s*(\w+)\s*;", code, re.S):
            type_names.add(m.group(1))
        for m in re.finditer(r"\btypedef\s+(?!struct|union|enum)[^;{]*?(\w+)\s*;", code):
            type_names.add(m.group(1))
    widths = dict(typedefs)
    widths.update({k: "+".join(w for _, w in fs) for k, fs in structs.items()})
    types = {}  # multi-dimensional packed typedefs -> widths, from every file before any is rewritten
    for f, t in texts.items():
        flatten_packed(f, t, types)
    for f, t in texts.items():
        t = flatten_packed(f, lower_returns(f, t), types)
        t = re.sub(r"\bparameter\s+string\b", "parameter", t)  # 0.23 has no string type
        # 0.23 casts to sizes but not to types: a cast to a type is one to its width, int'(x) a
        # 32-bit signed cast.
        t = type_casts(f, t, type_names, widths)
        t = re.sub(r"(?<![\w'])int'\(", "$signed(32'(", t)
        t = balance_signed(f, t)
        t = named_patterns(f, t, structs)
        t = struct_members(f, t, structs)
        # A function returning a struct returns its bits.
        t = re.sub(r"(\bfunction\s+(?:automatic\s+)?)((?:\w+::)?\w+)(?=\s+\w+\s*\()",
                   lambda m: m.group(1) + (f"logic [({'+'.join(w for _, w in structs[m.group(2)])})-1:0]"
                                           if m.group(2) in structs else m.group(2)), t)
        # 0.23 has no $bits of a package's type: a logic typedef's width is written out.
        t = re.sub(r"\$bits\(\s*(\w+::\w+)\s*\)", lambda m: typedefs.get(m.group(1), m.group(0)), t)
        for top in tops:
            if re.search(r"\bmodule\s+" + top + r"\b", t):
                t = flatten_ports(f, t, top, typedefs)
        with open(os.path.join(out_dir, os.path.basename(f)), "w", encoding="utf-8") as o:
            o.write(t)


if __name__ == "__main__":
    main()
