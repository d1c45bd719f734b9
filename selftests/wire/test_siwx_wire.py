#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
test_siwx_wire.py - include/siwx/wire.h is the one home of the wire
constants; this test fails on any drift from it.

  - siwx_wire.py (what every Python decoder uses) against the C compiler:
    a C program generated from the header's names prints every value as
    the compiler evaluates it; each must equal the Python value;
  - the header's own rules (siwx_wire.parse raises on a #define it cannot
    read, a name defined twice, a missing SIWX_ prefix);
  - the rdma-core and Linux copies of siw-abi.h are the same file (when
    both are staged);
  - no file of ours outside include/siwx/ carries a copy of the facts
    that identify a wire definition (the MPA keys, the CRC32c polynomial,
    a #define of an MPA/DDP/RDMAP/Terminate name in C).

Prints TAP: suite wire of make check (host). By hand (needs cc):
  python3 selftests/wire/test_siwx_wire.py
Environment: CC (default cc), SIWX_BUILD (default <top>/build).
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "selftests", "lib"))
import siwx_wire  # noqa: E402

BUILD = os.environ.get("SIWX_BUILD", os.path.join(TOP, "build"))


def c_values(header, values):
    """{name: value} as the C compiler evaluates header's macros. The
    format follows the Python type; a string where C has a number (or
    the other way round) fails the compile (-Wformat -Werror)."""
    src = ['#include <stdio.h>', '#include "%s"' % header,
           "int main(void)", "{"]
    for n, v in values.items():
        src.append("#ifdef %s" % n)
        if isinstance(v, str):
            src.append('\tprintf("%s=%%s\\n", %s);' % (n, n))
        else:
            src.append('\tprintf("%s=%%lld\\n", (long long)(%s));' % (n, n))
        src.append("#endif")
    src += ["\treturn 0;", "}"]
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, "dump.c"), os.path.join(d, "dump")
        with open(c, "w") as f:
            f.write("\n".join(src) + "\n")
        cc = os.environ.get("CC", "cc")
        r = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-o", exe, c],
                           capture_output=True, text=True)
        if r.returncode:
            raise AssertionError("the header does not compile as C the way "
                                 "siwx_wire.py reads it:\n" + r.stderr[-2000:])
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    vals = {}
    for line in out.splitlines():
        n, v = line.split("=", 1)
        vals[n] = v if isinstance(values[n], str) else int(v)
    return vals


class WireHeader(unittest.TestCase):
    def test_python_equals_c(self):
        vals = c_values(siwx_wire.PATH, siwx_wire.VALUES)
        self.assertGreater(len(vals), 100)
        for n, v in siwx_wire.VALUES.items():
            with self.subTest(name=n):
                self.assertIn(n, vals)
                self.assertEqual(vals[n], v, "%s: C %r, Python %r" %
                                 (n, vals[n], v))

    def test_every_define_parsed(self):
        with open(siwx_wire.PATH) as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        names = re.findall(r"^\s*#\s*define\s+(\w+)", text, flags=re.M)
        names = [n for n in names if n != "_SIWX_WIRE_H"]
        self.assertEqual(sorted(names), sorted(siwx_wire.VALUES))

    def test_rules_enforced(self):
        bad = {
            "function-like": "#define SIWX_F(x) (x)\n",
            "twice": "#define SIWX_A 1\n#define SIWX_A 2\n",
            "prefix": "#define OTHER 1\n",
            "unknown name": "#define SIWX_A (SIWX_B + 1)\n",
            "call": "#define SIWX_A sizeof(int)\n",
            "no value": "#define SIWX_A\n",
        }
        for what, text in bad.items():
            with self.subTest(rule=what), \
                    tempfile.NamedTemporaryFile("w", suffix=".h") as f:
                f.write(text)
                f.flush()
                with self.assertRaises(siwx_wire.WireHeaderError):
                    siwx_wire.parse(f.name)

    def test_known_values(self):
        # a few facts straight from the RFCs, so that a header edited
        # consistently in C and Python but wrongly still fails
        W = siwx_wire
        self.assertEqual(W.KEY_REQ, b"MPA ID Req Frame")
        self.assertEqual(W.MPA_FLAG_C, 0x40)
        self.assertEqual(W.DDP_UNTAGGED_HDR_SIZE, 18)
        self.assertEqual(W.RDMAP_ATOMIC_REQ_SIZE, 52)
        self.assertEqual(W.RDMAP_OP_ATOMIC_RESP, 0xb)
        self.assertEqual(W.DDP_QN_ATOMIC_RESP, 3)
        self.assertEqual(W.fpdu_len(W.DDP_TAGGED_HDR_SIZE), 20)
        self.assertEqual(len(W.OPCODE_NAMES), W.RDMAP_OP_COUNT)


def _ours():
    """Our source files (git ls-files when available), outside include/."""
    try:
        out = subprocess.run(["git", "-C", TOP, "ls-files"], check=True,
                             capture_output=True, text=True).stdout
        files = out.split()
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, _, fs in os.walk(TOP):
            if "/build" in d or "/." in d:
                continue
            files += [os.path.relpath(os.path.join(d, f), TOP) for f in fs]
    return [f for f in files if not f.startswith(("include/siwx/",
                                                  "patches/", "build/"))
            and f.endswith((".c", ".h", ".py", ".sh"))
            and not f.endswith("test_siwx_wire.py")]


# (file suffixes, what a copy looks like, what to use instead)
COPIES = (
    ((".c", ".h", ".py", ".sh"), r"MPA ID Re[qp] Frame",
     "SIWX_MPA_KEY_REQ/REP, siwx_wire.KEY_REQ/REP"),
    ((".c", ".h", ".py"), r"(?i)0x82f63b78", "SIWX_MPA_CRC32C_POLY"),
    ((".c", ".h"), r"(?m)^\s*#\s*define\s+(MPA|DDP|RDMAP|TERM|V2|LLP)_\w*(?<!_H)\b",
     "<siwx/wire.h>"),
)


class NoCopies(unittest.TestCase):
    def test_no_copies(self):
        files = _ours()
        self.assertTrue(files)
        found = []
        for f in files:
            with open(os.path.join(TOP, f), errors="replace") as fh:
                text = fh.read()
            for what, pat, use in COPIES:
                if f.endswith(what) and re.search(pat, text):
                    found.append("%s: %s (use %s)" %
                                 (f, re.search(pat, text).group(0).strip(),
                                  use))
        self.assertEqual(found, [], "copies of wire definitions:\n" +
                         "\n".join(found))


class SiwAbi(unittest.TestCase):
    def test_one_siw_abi(self):
        linux = os.path.join(BUILD, "siwx/src/include/uapi/rdma/siw-abi.h")
        rc = os.path.join(BUILD, "rdma-core/src/kernel-headers/rdma/"
                          "siw-abi.h")
        if not (os.path.exists(linux) and os.path.exists(rc)):
            self.skipTest("siw-abi.h not staged (make modules rdma-core)")
        with open(linux) as a, open(rc) as b:
            self.assertEqual(a.read(), b.read(),
                             "patches/linux and patches/rdma-core give "
                             "different siw-abi.h")


def main():
    loader = unittest.TestLoader()
    tests = [t for case in (WireHeader, NoCopies, SiwAbi)
             for t in loader.loadTestsFromTestCase(case)]
    print("TAP version 13")
    print("1..%d" % len(tests))
    failed = 0
    for i, t in enumerate(tests, 1):
        r = unittest.TestResult()
        t.run(r)
        name = t.id().split(".", 1)[1]
        for _, tb in r.failures + r.errors:
            for line in tb.rstrip().splitlines()[-12:]:
                print("# " + line)
        if r.failures or r.errors:
            failed += 1
            print("not ok %d %s" % (i, name))
        elif r.skipped:
            print("ok %d %s # SKIP %s" % (i, name, r.skipped[0][1]))
        else:
            print("ok %d %s" % (i, name))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
