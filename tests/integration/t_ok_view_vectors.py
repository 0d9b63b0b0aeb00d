#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The OK packets test_ok_view.c replays are still what this mariadbd sends.

Runs tests/unit/gen_ok_view_vectors.py's capture against the suite's mariadbd
(direct, no proxy: it is the server's behaviour under test) and compares every
vector with tests/unit/ok_view_vectors.h: the same statements, clients and
settings, and byte for byte the same packets on the all-trackers connection
and on the direct one, but for the order of system-variable entries within
one OK (the server's hash order, which changes from one server start to the
next). A difference means the server answers otherwise than the unit test
assumes: regenerate the header (the command is in the script) and look at
what test_ok_view then says.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "unit"))
import mrtest as t  # noqa: E402
import gen_ok_view_vectors as gen  # noqa: E402

HEADER = os.path.join(HERE, "..", "unit", "ok_view_vectors.h")

gen.PORT = int(os.environ["MR_DIRECT_PORT"])
committed = gen.read_header(HEADER)
t.check(len(committed) > 200, "the committed header holds the vectors (%d)" % len(committed))
fresh = gen.capture()
t.eq("vectors captured", len(committed), len(fresh))


def canon(v):
    label, kind, caps, want, pa, pd = v
    return (label, kind, caps, want, gen.canonical(pa), gen.canonical(pd))


differ = [(a[0], a[1]) for a, b in zip(committed, fresh) if canon(a) != canon(b)]
t.check(not differ, "every vector is what mariadbd sends now",
        "differ: %s" % differ[:5])
reordered = sum(1 for a, b in zip(committed, fresh) if a != b and canon(a) == canon(b))
t.log("%d vectors, %d with their variables in another order" % (len(fresh), reordered))
t.done()
