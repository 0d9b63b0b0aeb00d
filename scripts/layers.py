#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Which folder of src/ includes which, and which calls which: the layer
graph and its loops.

  scripts/layers.py            print each folder's includes and every loop
  scripts/layers.py --check    also exit 1 when a folder includes one above it
                               that KNOWN_UPWARD does not list, or on a loop
  ... --objects DIR            also read the object files under DIR (a build's
                               CMakeFiles) with nm: a folder whose objects use a
                               symbol defined by a folder above it, or a loop of
                               such uses, fails too (a ctest runs this)
  scripts/layers.py --self-test  checks the per-file check on a small tree of
                               its own (a loop, an arrow up the rooms, a
                               shared header that ties nobody); a ctest runs it
  ... --files                  also draw the graph per file inside each folder
                               and fail on a loop in the folders FILE_CHECKED
                               names, or on an arrow up their ROOMS (with
                               --objects, the calls per file are checked too)

A folder's files are src/<folder>/* and include/myrewrite/<folder>/*. The
layer order is LAYERS below (lowest first): a folder may include its own
headers and those of the folders before it, never one after it, and may call
(or take the address of) only what they define. The session uses nothing of
a feature's folder (those between feature and session) but its table entry,
a `const mr_feature` whose name ends in `_feature`. Includes alone do not prove
the calls: a file may declare a function itself, or reach one through a
header of a folder below that names it, so the symbols are read too. Calls
through a function pointer (the feature hooks, the rule kinds) are no edge:
the table that holds them is the one place that names them.

Per file (--files). A node is one .c file. A header is no node of its own: it
stands for the files that define what it declares. File a has an edge to file
b of its folder when a includes a header of the folder (directly or through
the folder's headers it includes) that declares a function or global b
defines, and a names it. So a private header several files share (a
`*_impl.h`) ties each includer only to the files whose names it uses, and a
header of types only ties nobody. A loop of such edges is an include loop
per file. A folder may have rooms (subfolders of src/<folder>/, ROOMS lists
them lowest first); a file may then use files of its own room and of the
rooms before it, never one after it. The headers under
include/myrewrite/<folder>/ stay flat: each belongs to the room of the files
it declares. With --objects, nm gives the same per file from the objects
(a symbol one object uses and another of the folder defines), which also
sees a function a file declares itself.
"""
import os
import re
import subprocess
import sys

LAYERS = ["base", "net", "proto", "sql", "rules", "schema", "stats", "pool", "feature",
          "paginate", "delayed", "queue", "session", "admin", "http", "core"]
# The upward includes still there, each a step of work left (src/README.md,
# "What is not layered yet"). The check fails on any other, and on one of
# these that is gone, so the list only shrinks. It is empty: no folder
# includes one above it.
KNOWN_UPWARD = set()
# The folders whose files may not form a loop (--files): one line to edit.
FILE_CHECKED = ["delayed", "session"]
# The rooms of a folder, lowest first: a file uses only its own room and those before it.
ROOMS = {"delayed": ["rule", "sql", "statement", "flush", "mem", "group", "session"],
         "session": ["core", "pool", "stmt", "conn", "pump"]}
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(?:myrewrite/)?([a-z_]+)/[^"]+"', re.M)


def folder_files():
    for top in ("src", os.path.join("include", "myrewrite")):
        for name in LAYERS:
            d = os.path.join(ROOT, top, name)
            if not os.path.isdir(d):
                continue
            for root, dirs, files in os.walk(d):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith((".c", ".h")):
                        yield name, os.path.join(root, f)


def edges():
    out = {}
    for name, path in folder_files():
        with open(path, encoding="utf-8") as fh:
            for dep in INCLUDE.findall(fh.read()):
                if dep != name and dep in LAYERS:
                    out.setdefault((name, dep), []).append(os.path.relpath(path, ROOT))
    return out


def object_files(top):
    """(folder, path, source) of each object file under top whose path names
    a folder: .../<target>.dir/<folder>[/<room>]/<name>.c.o, as CMake lays
    them out; source is the .c relative to the tree's root."""
    for root, _, files in os.walk(top):
        parts = os.path.relpath(root, top).split(os.sep)
        at = next((i for i, p in enumerate(parts) if p.endswith(".dir")), None)
        if at is None or at + 1 >= len(parts) or parts[at + 1] not in LAYERS:
            continue
        folder = parts[at + 1]
        for f in sorted(files):
            # an object whose source is gone (renamed or removed since the build
            # last ran there) is stale: its calls are not the tree's
            src = os.path.join("src", *parts[at + 1:], f[:-2])
            if f.endswith(".c.o") and os.path.exists(os.path.join(ROOT, src)):
                yield folder, os.path.join(root, f), src


def nm_symbols(path):
    """(defined, used) symbol sets of one object file."""
    out = subprocess.run(["nm", "-P", path], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        if parts[1] == "U":
            used.add(parts[0])
        elif parts[1] in "TDBRCGSV":
            defined.add(parts[0])
    return defined, used


def call_edges(top):
    """{(a, b): [symbols]}: folder a's objects use symbols folder b's define."""
    defined, used = {}, []
    for folder, path, _ in object_files(top):
        d, u = nm_symbols(path)
        used.extend((folder, sym) for sym in u)
        for sym in d:
            defined.setdefault(sym, folder)
    out = {}
    for folder, sym in used:
        dep = defined.get(sym)
        if dep and dep != folder:
            out.setdefault((folder, dep), set()).add(sym)
    return {k: sorted(v) for k, v in out.items()}


def loops(graph, nodes=LAYERS):
    """Strongly connected components of more than one node (Tarjan), each
    in the order of nodes."""
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp, key=nodes.index))

    for v in nodes:
        if v not in index:
            visit(v)
    return comps


def check_calls(top):
    """Prints the call graph of the objects under top; the number of
    failures (an upward call, a loop)."""
    e = call_edges(top)
    graph = {}
    for a, b in e:
        graph.setdefault(a, set()).add(b)
    bad = 0
    for name in LAYERS:
        deps = sorted(graph.get(name, ()), key=LAYERS.index)
        print("%-9s calls %s" % (name, " ".join(deps) or "-"))
        for d in deps:
            if LAYERS.index(d) > LAYERS.index(name):
                print("FAIL: %s calls %s, a folder above it: %s" % (name, d, ", ".join(e[(name, d)])))
                bad += 1
    for c in loops(graph):
        print("FAIL: call loop: " + " <-> ".join(c))
        bad += 1
    # the session reaches a feature only through its table entry (feature/feature.h)
    lo, hi = LAYERS.index("feature"), LAYERS.index("session")
    for f in LAYERS[lo + 1:hi]:
        other = [x for x in e.get(("session", f), ()) if not x.endswith("_feature")]
        if other:
            print("FAIL: session uses %s other than its feature entry: %s" % (f, ", ".join(other)))
            bad += 1
    print("calls: %d edges between folders, %d failures" % (len(e), bad))
    return bad


# ---- per file (--files) ----

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
WORD = re.compile(r"[A-Za-z_]\w*")
# a line at column 0 that starts an external definition: a function (its
# parameter list is followed by a body) or a global (its name followed by = or ;)
DEF_FN = re.compile(r"^(?!static\b|typedef\b|extern\b|struct\s+\w+\s*\{)[A-Za-z_][\w \t*]*?\b(\w+)\s*\(", re.M)
DEF_VAR = re.compile(r"^(?!static\b|typedef\b|extern\b)(?:const\s+)?(?:struct\s+)?\w+[\s*]+(?:const\s+)?(\w+)\s*(?:\[[^\]]*\]\s*)?[=;]", re.M)


def strip(text):
    return COMMENT.sub(lambda m: " " if m.group(0)[0] == "/" else '""', text)


def definitions(text):
    """Names a .c file defines for other files: its non-static functions
    (a parameter list followed by a body) and globals."""
    out = set()
    for m in DEF_FN.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        rest = text[i + 1:].lstrip()
        while rest.startswith("__attribute__"):  # skip attributes after the list
            rest = rest[rest.index("))") + 2:].lstrip()
        if rest.startswith("{"):
            out.add(m.group(1))
    out.update(m.group(1) for m in DEF_VAR.finditer(text))
    return out


def resolve(inc, at):
    """The path (relative to the root) an #include "inc" in file at names."""
    for cand in (os.path.join("include", inc), os.path.join("src", inc),
                 os.path.join(os.path.dirname(at), inc)):
        if os.path.exists(os.path.join(ROOT, cand)):
            return os.path.normpath(cand)
    return None


def room_of(folder, path):
    """The room (subfolder of src/<folder>/) of a .c file, "" when none."""
    parts = path.split(os.sep)
    return parts[2] if len(parts) > 3 and parts[0] == "src" else ""


def file_graph(folder):
    """{a: {b: [names]}}: file a of the folder uses names b defines, declared
    in a header of the folder a reaches by its includes; and the files (.c,
    relative to the root) in order (room, then name)."""
    texts, incs = {}, {}
    for name, path in folder_files():
        if name != folder:
            continue
        rel = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as fh:
            raw = fh.read()
        texts[rel] = strip(raw)
        incs[rel] = [r for r in (resolve(i, rel) for i in re.findall(r'^\s*#\s*include\s+"([^"]+)"', raw, re.M)) if r]
    cfiles = [f for f in texts if f.endswith(".c")]
    definer = {}
    for f in cfiles:
        for n in definitions(texts[f]):
            definer.setdefault(n, f)
    words = {f: set(WORD.findall(t)) for f, t in texts.items()}
    graph = {}
    for a in cfiles:
        seen, todo = set(), [h for h in incs[a] if h in texts and h.endswith(".h")]
        while todo:  # the folder's headers a reaches
            h = todo.pop()
            if h not in seen:
                seen.add(h)
                todo.extend(x for x in incs[h] if x in texts and x.endswith(".h"))
        for h in seen:
            for n in words[h] & words[a]:
                b = definer.get(n)
                if b and b != a:
                    graph.setdefault(a, {}).setdefault(b, set()).add(n)
    rooms = ROOMS.get(folder, [])
    key = lambda f: ((rooms.index(room_of(folder, f)) if room_of(folder, f) in rooms else -1), f)
    return graph, sorted(cfiles, key=key)


def object_graph(top, folder):
    """The same graph from the objects: file a's object uses a symbol file
    b's object defines."""
    defined, used = {}, {}
    for name, path, src in object_files(top):
        if name == folder:
            d, used[src] = nm_symbols(path)
            for sym in d:
                defined.setdefault(sym, src)
    graph = {}
    for a, syms in used.items():
        for sym in syms:
            b = defined.get(sym)
            if b and b != a:
                graph.setdefault(a, {}).setdefault(b, set()).add(sym)
    return graph


def check_files(folder, graph, files, what):
    """Prints the loops and upward arrows of one folder's file graph; the
    number of failures (only a folder FILE_CHECKED names fails)."""
    rooms = ROOMS.get(folder)
    bad = 0
    flat = {a: set(bs) for a, bs in graph.items()}
    for c in loops(flat, files):
        print("%s loop in %s: %s" % (what, folder, " <-> ".join(os.path.basename(f) for f in c)))
        bad += 1
    for a in files:
        if rooms is None:
            break
        ra = room_of(folder, a)
        if ra not in rooms:
            print("%s: %s is in no room of %s (ROOMS)" % (what, a, folder))
            bad += 1
            continue
        for b, names in sorted(graph.get(a, {}).items()):
            rb = room_of(folder, b)
            if rb in rooms and rooms.index(rb) > rooms.index(ra):
                print("%s up: %s (room %s) uses %s (room %s): %s"
                      % (what, a, ra, b, rb, ", ".join(sorted(names))))
                bad += 1
    edges = sum(len(v) for v in graph.values())
    print("%s %-8s %d files, %d edges, %d loops or upward arrows%s" % (what, folder, len(files), edges, bad,
          "" if folder in FILE_CHECKED else " (not checked)"))
    return bad if folder in FILE_CHECKED else 0


def self_test():
    """The per-file check on a tree made here: two rooms of delayed/, a file
    of the lower that calls one of the upper (a loop and an arrow up), then
    the same tree without that call, where a private header declaring the
    functions of both files ties only the one that uses the other."""
    import tempfile
    global ROOT, FILE_CHECKED, ROOMS
    saved = ROOT, FILE_CHECKED, ROOMS
    FILE_CHECKED, ROOMS = ["delayed"], {"delayed": ["low", "high"]}
    files = {
        "src/delayed/low/low.h": "int low_fn(void);\n",
        "src/delayed/low/shared_impl.h": "/* high_fn */\nint low_fn(void);\nint high_fn(void);\n",
        "src/delayed/high/high.h": "typedef int high_t;\nint high_fn(void);\n",
        "src/delayed/high/high.c": '#include "delayed/low/shared_impl.h"\n'
                                   "int high_fn(void)\n{\n    return low_fn();\n}\n",
    }
    up = ('#include "delayed/high/high.h"\n#include "delayed/low/low.h"\n'
          "static int helper(void) { return 1; }\nint low_fn(void)\n{\n    return high_fn() + helper();\n}\n")
    clean = '#include "delayed/low/shared_impl.h"\nint low_fn(void)\n{\n    return 1;\n}\n'
    bad = []
    try:
        for low_c, want in ((up, 2), (clean, 0)):
            with tempfile.TemporaryDirectory() as d:
                ROOT = d
                for name, text in dict(files, **{"src/delayed/low/low.c": low_c}).items():
                    os.makedirs(os.path.join(d, os.path.dirname(name)), exist_ok=True)
                    with open(os.path.join(d, name), "w", encoding="utf-8") as fh:
                        fh.write(text)
                graph, order = file_graph("delayed")
                got = check_files("delayed", graph, order, "self-test")
                edges = {(os.path.basename(a), os.path.basename(b)) for a in graph for b in graph[a]}
                if got != want or ("high.c", "low.c") not in edges:
                    bad.append("want %d failures and high.c -> low.c, got %d and %s"
                               % (want, got, sorted(edges)))
    finally:
        ROOT, FILE_CHECKED, ROOMS = saved
    for b in bad:
        print("FAIL: self-test: " + b)
    print("layers self-test: %s" % ("failed" if bad else "ok"))
    return 1 if bad else 0


def main():
    if "--self-test" in sys.argv:
        return self_test()
    e = edges()
    graph = {}
    for a, b in e:
        graph.setdefault(a, set()).add(b)
    upward = []
    for name in LAYERS:
        deps = sorted(graph.get(name, ()), key=LAYERS.index)
        print("%-9s -> %s" % (name, " ".join(deps) or "-"))
        for d in deps:
            if LAYERS.index(d) > LAYERS.index(name):
                upward.append((name, d))
    comps = loops(graph)
    for c in comps:
        print("loop: " + " <-> ".join(c))
    for a, b in upward:
        print("upward: %s includes %s in %s" % (a, b, ", ".join(sorted(set(e[(a, b)])))))
    print("layers: %d folders, %d loops, %d upward includes" % (len(LAYERS), len(comps), len(upward)))
    if "--check" not in sys.argv:
        return 0
    bad = 0
    for a, b in upward:
        if (a, b) not in KNOWN_UPWARD:
            print("FAIL: %s includes %s, a folder above it" % (a, b))
            bad += 1
    for a, b in sorted(KNOWN_UPWARD - set(upward)):
        print("FAIL: %s no longer includes %s: take it out of KNOWN_UPWARD" % (a, b))
        bad += 1
    for c in comps:  # a loop has an upward include, but say so plainly
        print("FAIL: include loop: " + " <-> ".join(c))
        bad += 1
    top = sys.argv[sys.argv.index("--objects") + 1] if "--objects" in sys.argv else None
    if top:
        if not any(True for _ in object_files(top)):
            print("FAIL: no object files under %s" % top)
            bad += 1
            top = None
        else:
            bad += check_calls(top)
    if "--files" in sys.argv:
        for name in LAYERS:
            graph, files = file_graph(name)
            bad += check_files(name, graph, files, "includes")
            if top:
                bad += check_files(name, object_graph(top, name), files, "calls")
    print("layers check: %s" % ("failed" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
