#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The harness's own test: a proxy that ends with a sanitizer's finding fails its test.

san_standin (tests/integration/san_standin.c, built with this build's sanitizer) takes the
proxy's place, started through the same code as a proxy: mrtest.Proxy in a child Python
test, env.sh's mr_start_proxy in a child shell test. At SIGTERM it loses a heap block in an
ASan build (LeakSanitizer reports it), races two threads on a counter in a TSan build, and
in a build without a sanitizer exits with the sanitizer status (MR_SAN_STATUS, 66) as one
would. Each child below must exit non-zero and say "not ok - proxy NAME ended ... without a
sanitizer finding":
  * a `with t.Proxy(...)` block left normally, then t.done();
  * a proxy still running at t.done();
  * a proxy still running when the test exits 77 (a skip) without t.done() (the exit hook);
  * a proxy killed with SIGKILL beside the stand-in, which still gets SIGTERM;
  * a one-shot run through t.run_bin (as for --check);
  * a shell test whose stand-in is left to the EXIT trap (mr_cleanup);
and run.sh's scan (mr_sanitizer_report) finds the report in the stand-in's log (sanitizer
builds). The control: each child with standin=clean exits 0.
Environment: MR_BUILD (san_standin), MR_TMP. No mariadbd or proxy of the suite is used.
"""
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("MR_BUILD", os.path.join(ROOT, "build"))
STANDIN = os.path.join(BUILD, "tests", "integration", "san_standin")
LIB = os.path.join(ROOT, "tests", "lib")

PY_HEAD = """
import sys
sys.path.insert(0, %r)
import mrtest as t
STANDIN, MODE = %r, %r
def standin(name):
    return t.Proxy(name, command=[STANDIN], flags=["--set", "standin=" + MODE], backend=False,
                   through=False, workers=None, log_level=None)
"""

PY_CASES = {
    "with": """
with standin("harness-with"):
    pass
t.done()
""",
    "done": """
standin("harness-done").start()
t.done()
""",
    "skip": """
standin("harness-skip").start()
sys.exit(77)
""",
    "kill9": """
crashed = standin("harness-kill9-crashed").start()
standin("harness-kill9-other").start()
crashed.kill9()
t.done()
""",
    "run_bin": """
t.BIN = STANDIN
t.run_bin(["--set", "standin=" + MODE])
t.done()
""",
}

SH_CASE = """
. %s/env.sh
trap mr_cleanup EXIT
mr_free_port port
MR_BIN=%s mr_start_proxy harness-shell "$port" "$port" --set standin=%s || exit 3
mr_done
"""


# What each child exits with when the stand-in is clean.
CLEAN_STATUS = {"skip": 77}


def run_child(argv):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120)
    return r.returncode, r.stdout


def fails_with_finding(case, proxy, rc, out, mode):
    if mode == "clean":
        want = CLEAN_STATUS.get(case, 0)
        if not t.eq("python, %s, standin=clean: the child exits %d" % (case, want), want, rc):
            print(out)
        return
    want = "not ok - %s ended" % (proxy if case == "run_bin" else "proxy " + proxy)
    t.check(rc != 0 and want in out,
                   "python, %s, standin=%s: the child test fails, naming the proxy"
                   % (case, mode),
                   "exit status %s; output:\n%s" % (rc, out))


def python_cases(mode):
    for case, body in PY_CASES.items():
        path = os.path.join(t.TMP, "harness-%s.py" % case)
        with open(path, "w") as f:
            f.write(PY_HEAD % (LIB, STANDIN, mode) + body)
        rc, out = run_child([sys.executable, path])
        proxy = {"kill9": "harness-kill9-other", "run_bin": "myrewrite --set standin=" + mode}.get(
            case, "harness-" + case)
        fails_with_finding(case, proxy, rc, out, mode)


def shell_case(mode):
    rc, out = run_child(["bash", "-c", SH_CASE % (LIB, STANDIN, mode)])
    if mode == "clean":
        if not t.eq("shell, standin=clean: the child test passes", 0, rc):
            print(out)
        return
    t.check(rc not in (0, 3) and "not ok - proxy pid" in out and "harness-shell.log" in out,
            "shell, standin=%s: the EXIT trap fails the child test, naming the log" % mode,
            "exit status %s; output:\n%s" % (rc, out))


def run_sh_scan(mode):
    """run.sh's scan of a test's logs, on the shell stand-in's log."""
    rc, out = t.env_sh('mr_sanitizer_report "$MR_TMP/harness-shell.log"')
    if mode == "clean":
        t.eq("run.sh's scan finds no report after standin=clean", 1, rc)
    else:
        t.check(rc == 0 and "Sanitizer" in out,
                "run.sh's scan finds the %s report in the stand-in's log" % mode, out)


def main():
    os.makedirs(t.TMP, exist_ok=True)
    which = subprocess.run([STANDIN, "--which"], stdout=subprocess.PIPE, text=True,
                           check=True).stdout.strip()
    mode = {"address": "leak", "thread": "race", "none": "status"}[which]
    t.log("san_standin built with %s: standin=%s" % (which, mode))
    for m in ("clean", mode):
        python_cases(m)
        shell_case(m)
        if which != "none":
            run_sh_scan(m)
    # The reports above are this test's findings, not the suite's: run.sh
    # fails a test whose logs hold one.
    for f in glob.glob(os.path.join(t.TMP, "harness-*")):
        os.remove(f)
    t.done()


if __name__ == "__main__":
    main()
