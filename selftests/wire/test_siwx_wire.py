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
  - the opcode table has a name for every opcode below
    SIWX_RDMAP_OP_COUNT, the RDMAP control byte and the Flush
    Disposition Flags are partitioned by their masks, and
    iwarp_capture.py decodes the Flush and Atomic Write Requests and
    Responses (fields, the 5-bit opcode, the one reserved bit left);
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
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "selftests", "lib"))
import siwx_wire  # noqa: E402
import iwarp_capture  # noqa: E402

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

    def test_shell_equals_python(self):
        # selftests/lib/siwx_wire.sh: what the shell suites take
        sh = os.path.join(TOP, "selftests", "lib", "siwx_wire.sh")
        ints = {n: v for n, v in siwx_wire.VALUES.items()
                if not isinstance(v, str)}
        script = '. "$1" || exit 1\nfor n in %s; do echo "$n=${!n-unset}"; done' \
            % " ".join(ints)
        r = subprocess.run(["bash", "-c", script, "sh", sh],
                           capture_output=True, text=True,
                           env=dict(os.environ, SIWX_WIRE_H=siwx_wire.PATH))
        self.assertEqual(r.returncode, 0, r.stderr)
        got = dict(line.split("=", 1) for line in r.stdout.split())
        for n, v in ints.items():
            with self.subTest(name=n):
                self.assertEqual(got.get(n), str(v))

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


class Opcodes(unittest.TestCase):
    """The opcode table and the 5-bit opcode field of wire.h, and the
    capture decoder's reading of the draft-talpey-rdma-commit headers."""

    def test_every_opcode_named(self):
        W = siwx_wire
        for op in range(W.RDMAP_OP_COUNT):
            with self.subTest(opcode=op):
                self.assertIn(op, W.OPCODE_NAMES)
        self.assertEqual(sorted(W.OPCODE_NAMES),
                         list(range(W.RDMAP_OP_COUNT)))
        # the field holds every opcode siwx knows, and 0x12.. are unknown
        self.assertLessEqual(W.RDMAP_OP_COUNT - 1, W.RDMAP_MASK_OPCODE)
        self.assertEqual(iwarp_capture.opcode_name(W.RDMAP_OP_COUNT),
                         "OP_0x%02x" % W.RDMAP_OP_COUNT)
        self.assertEqual(iwarp_capture.opcode_name(W.RDMAP_OP_FLUSH_REQ),
                         "FLUSH_REQ")

    def test_control_byte_partition(self):
        # RV, the reserved bit and the opcode partition the RDMAP byte
        W = siwx_wire
        parts = (W.RDMAP_MASK_RV, W.RDMAP_MASK_RSVD, W.RDMAP_MASK_OPCODE)
        for a in parts:
            for b in parts:
                if a is not b:
                    self.assertEqual(a & b, 0)
        self.assertEqual(parts[0] | parts[1] | parts[2], 0xff)
        self.assertEqual(W.RDMAP_OP_ATOMIC_WRITE_RESP & ~W.RDMAP_MASK_OPCODE,
                         0)
        self.assertEqual(W.RDMAP_OP_ATOMIC_WRITE_RESP & W.RDMAP_MASK_RSVD, 0)
        # the disposition word: P, G, selectivity and reserved partition it
        disp = (W.FLUSH_DISP_P, W.FLUSH_DISP_G, W.FLUSH_DISP_SEL_MASK,
                W.FLUSH_DISP_RSVD)
        total = 0
        for m in disp:
            self.assertEqual(total & m, 0)
            total |= m
        self.assertEqual(total, 0xffffffff)

    def _fpdu(self, ctrl1, qn, msn, hdr):
        W = siwx_wire
        u = bytes([W.DDP_FLAG_L | W.DDP_VERSION, ctrl1]) + \
            struct.pack(">IIII", 0, qn, msn, 0) + hdr
        b = struct.pack(">H", len(u)) + u
        b += bytes(W.pad_len(len(u)))
        b += struct.pack("<I", iwarp_capture.crc32c(b))
        f = iwarp_capture.Fpdu(b, 0)
        return iwarp_capture.ddp(f), b

    def _ctrl1(self, op, rsvd=0):
        W = siwx_wire
        return (W.RDMAP_VERSION << W.RDMAP_RV_SHIFT) | \
            (rsvd << W.RDMAP_RSVD_SHIFT) | op

    def test_flush_request_decoded(self):
        W = siwx_wire
        disp = W.FLUSH_DISP_P | (W.FLUSH_SEL_MR << W.FLUSH_DISP_SEL_SHIFT)
        hdr = bytearray(W.RDMAP_FLUSH_REQ_SIZE)
        struct.pack_into(">I", hdr, W.FREQ_OFF_STAG, 0x1234)
        struct.pack_into(">I", hdr, W.FREQ_OFF_LEN, 4096)
        struct.pack_into(">Q", hdr, W.FREQ_OFF_TO, 0xfffffffffffff000)
        struct.pack_into(">I", hdr, W.FREQ_OFF_DISP, disp | 0x80000000)
        f, b = self._fpdu(self._ctrl1(W.RDMAP_OP_FLUSH_REQ),
                          W.DDP_QN_READ_REQ, 3, bytes(hdr))
        self.assertEqual(f.kind, W.RDMAP_OP_FLUSH_REQ)
        self.assertEqual((f.qn, f.msn), (W.DDP_QN_READ_REQ, 3))
        self.assertEqual(f.flush, {"stag": 0x1234, "len": 4096,
                                   "to": 0xfffffffffffff000,
                                   "disp": disp | 0x80000000, "p": 1,
                                   "g": 0, "sel": W.FLUSH_SEL_MR,
                                   "rsvd": 0x80000000})
        self.assertEqual(f.rsvd_ulp, 0)
        d = iwarp_capture.parse_fpdus(b)[0]
        self.assertEqual(d["op"], W.RDMAP_OP_FLUSH_REQ)
        self.assertEqual(d["flush"]["g"], 0)
        # one byte short: no header decoded
        f, _ = self._fpdu(self._ctrl1(W.RDMAP_OP_FLUSH_REQ),
                          W.DDP_QN_READ_REQ, 3, bytes(hdr[:-1]))
        self.assertFalse(hasattr(f, "flush"))

    def test_atomic_write_request_decoded(self):
        W = siwx_wire
        hdr = bytearray(W.RDMAP_ATOMIC_WRITE_REQ_SIZE)
        struct.pack_into(">I", hdr, W.AWREQ_OFF_STAG, 0xabcdef01)
        struct.pack_into(">I", hdr, W.AWREQ_OFF_LEN, W.ATOMIC_WRITE_SIZE)
        struct.pack_into(">Q", hdr, W.AWREQ_OFF_TO, 0x10008)
        hdr[W.AWREQ_OFF_DATA:] = bytes(range(1, 9))
        f, _ = self._fpdu(self._ctrl1(W.RDMAP_OP_ATOMIC_WRITE_REQ),
                          W.DDP_QN_READ_REQ, 1, bytes(hdr))
        self.assertEqual(f.opcode, W.RDMAP_OP_ATOMIC_WRITE_REQ)
        self.assertEqual(iwarp_capture.opcode_name(f.opcode),
                         "ATOMIC_WRITE_REQ")
        self.assertEqual(f.awrite, {"stag": 0xabcdef01,
                                    "len": W.ATOMIC_WRITE_SIZE,
                                    "to": 0x10008,
                                    "data": bytes(range(1, 9))})

    def test_responses_and_reserved_bit(self):
        W = siwx_wire
        for op in (W.RDMAP_OP_FLUSH_RESP, W.RDMAP_OP_ATOMIC_WRITE_RESP):
            f, _ = self._fpdu(self._ctrl1(op), W.DDP_QN_ATOMIC_RESP, 2, b"")
            self.assertEqual((f.opcode, f.qn, f.msn, f.payload),
                             (op, W.DDP_QN_ATOMIC_RESP, 2, b""))
            self.assertEqual(f.rsvd_ulp, 0)
        # 0x10 is an opcode now, not a reserved bit; 0x20 still is
        f, _ = self._fpdu(self._ctrl1(W.RDMAP_OP_SEND, rsvd=1), 0, 1, b"")
        self.assertEqual((f.opcode, f.rsvd_ulp), (W.RDMAP_OP_SEND, 1))


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
    tests = [t for case in (WireHeader, Opcodes, NoCopies, SiwAbi)
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
