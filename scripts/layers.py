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
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(?:myrewrite/)?([a-z_]+)/[^"]+"', re.M)


def folder_files():
    for top in ("src", os.path.join("include", "myrewrite")):
        for name in LAYERS:
            d = os.path.join(ROOT, top, name)
            if not os.path.isdir(d):
                continue
            for f in sorted(os.listdir(d)):
                if f.endswith((".c", ".h")):
                    yield name, os.path.join(d, f)


def edges():
    out = {}
    for name, path in folder_files():
        with open(path, encoding="utf-8") as fh:
            for dep in INCLUDE.findall(fh.read()):
                if dep != name and dep in LAYERS:
                    out.setdefault((name, dep), []).append(os.path.relpath(path, ROOT))
    return out


def object_files(top):
    """(folder, path) of each object file under top whose path names a
    folder: .../<folder>/<name>.c.o, as CMake lays them out."""
    for root, _, files in os.walk(top):
        folder = os.path.basename(root)
        if folder not in LAYERS:
            continue
        for f in sorted(files):
            # an object whose source is gone (renamed or removed since the build
            # last ran there) is stale: its calls are not the tree's
            src = os.path.join(ROOT, "src", folder, f[:-2])
            if f.endswith(".c.o") and os.path.exists(src):
                yield folder, os.path.join(root, f)


def call_edges(top):
    """{(a, b): [symbols]}: folder a's objects use symbols folder b's define."""
    defined, used = {}, []
    for folder, path in object_files(top):
        out = subprocess.run(["nm", "-P", path], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            sym, kind = parts[0], parts[1]
            if kind == "U":
                used.append((folder, sym))
            elif kind in "TDBRCGSV":
                defined.setdefault(sym, folder)
    out = {}
    for folder, sym in used:
        dep = defined.get(sym)
        if dep and dep != folder:
            out.setdefault((folder, dep), set()).add(sym)
    return {k: sorted(v) for k, v in out.items()}


def loops(graph):
    """Strongly connected components of more than one folder (Tarjan)."""
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
                comps.append(sorted(comp, key=LAYERS.index))

    for v in LAYERS:
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


def main():
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
    if "--objects" in sys.argv:
        top = sys.argv[sys.argv.index("--objects") + 1]
        if not any(True for _ in object_files(top)):
            print("FAIL: no object files under %s" % top)
            bad += 1
        else:
            bad += check_calls(top)
    print("layers check: %s" % ("failed" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
