# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
iwarp_wire.py - shared layer code of the iWARP wire checkers: read the
tshark field dump (FRAMES.tsv), reassemble each TCP direction by sequence
number, parse MPA (RFC 5044, markers off) and DDP/RDMAP headers (RFC 5041,
RFC 5040) FPDU by FPDU, check the MPA CRC32c, and print TAP.

Used by selftests/atomic/atomic_wire.py and selftests/imm/imm_wire.py,
which import it with selftests/lib on sys.path. Standard library only.
"""
import struct


# ---- CRC32c (Castagnoli), reflected, as MPA/iSCSI use it
def _crc_table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


CRC_T = _crc_table()


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = CRC_T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def be16(b, o):
    return struct.unpack_from(">H", b, o)[0]


def be32(b, o):
    return struct.unpack_from(">I", b, o)[0]


def be64(b, o):
    return struct.unpack_from(">Q", b, o)[0]


class TAP:
    """TAP results named SUITE.NAME; at most MAX_PROBLEMS problem lines
    are printed per result."""

    def __init__(self, suite, max_problems):
        self.suite = suite
        self.max_problems = max_problems
        self.n = 0
        self.fails = 0
        self.lines = []

    def result(self, name, problems, notes=()):
        self.n += 1
        for n in notes:
            self.lines.append("# %s: %s" % (name, n))
        for p in problems[:self.max_problems]:
            self.lines.append("# %s: %s" % (name, p))
        if len(problems) > self.max_problems:
            self.lines.append("# %s: ... %d more" %
                              (name, len(problems) - self.max_problems))
        if problems:
            self.fails += 1
            self.lines.append("not ok %d %s.%s" % (self.n, self.suite, name))
        else:
            self.lines.append("ok %d %s.%s" % (self.n, self.suite, name))


# ---- input
def read_frames(path):
    """FRAMES.tsv -> ({(sport, dport): [(seq, bytes)]},
    [tshark Terminate rows], {dport: set of tshark RDMAP opcodes})

    Columns: frame number, tcp.srcport, tcp.dstport, tcp.seq, tcp.len,
    tcp.payload, then tshark's Terminate fields (layer, etype, code, M, D,
    R) and, optionally, its RDMAP opcode (column 12)."""
    segs, terms, tops = {}, [], {}
    with open(path) as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            if len(c) < 6 or not c[1]:
                continue
            try:
                sp, dp, seq = int(c[1]), int(c[2]), int(c[3])
            except ValueError:
                continue
            pl = c[5].replace(":", "").strip()
            if pl:
                segs.setdefault((sp, dp), []).append((seq, bytes.fromhex(pl)))

            def col(i):
                return c[i] if len(c) > i else ""
            if col(6):
                terms.append({"sport": sp, "dport": dp, "frame": c[0],
                              "layer": col(6), "etype": col(7), "code": col(8),
                              "m": col(9), "d": col(10), "r": col(11)})
            if col(12):     # keyed by the receiving port
                tops.setdefault(dp, set()).add(col(12))
    return segs, terms, tops


def reassemble(seglist):
    seglist = sorted(seglist, key=lambda s: s[0])
    out = bytearray()
    base = seglist[0][0]
    gaps = []
    for seq, b in seglist:
        off = seq - base
        if off > len(out):
            gaps.append("gap of %d bytes at stream offset %d" %
                        (off - len(out), len(out)))
            out += b"\0" * (off - len(out))
        if off + len(b) > len(out):
            out += b[len(out) - off:]
    return bytes(out), gaps


# ---- MPA / DDP / RDMAP
class Fpdu:
    pass


def parse_direction(data, want_key):
    """MPA frame, then FPDUs, each decoded by ddp().
    Returns (mpa dict, [Fpdu], problems)."""
    if len(data) < 20 or data[:16] != want_key:
        return None, [], ["stream does not start with %r" % want_key]
    probs = []
    flags, rev, pdlen = data[16], data[17], be16(data, 18)
    pos = 20 + pdlen
    fpdus = []
    while pos < len(data):
        if pos + 2 > len(data):
            probs.append("truncated FPDU at offset %d" % pos)
            break
        ln = be16(data, pos)
        pad = (4 - (2 + ln) % 4) % 4
        end = pos + 2 + ln + pad + 4
        if end > len(data):
            probs.append("FPDU at offset %d (ULPDU %d bytes) runs past the "
                         "capture (%d bytes)" % (pos, ln, len(data)))
            break
        f = Fpdu()
        f.off = pos
        f.mpalen = ln
        f.ulpdu = data[pos + 2:pos + 2 + ln]
        f.covered = data[pos:pos + 2 + ln + pad]
        f.crc = data[pos + 2 + ln + pad:end]
        ddp(f)
        fpdus.append(f)
        pos = end
    return {"flags": flags, "rev": rev, "pdlen": pdlen}, fpdus, probs


def ddp(f):
    """DDP and RDMAP header of f.ulpdu into f; f.kind is the RDMAP opcode,
    None when the headers are truncated (see f.problems). Returns f."""
    u = f.ulpdu
    f.problems = []
    f.kind = None
    if len(u) < 2:
        f.problems.append("ULPDU of %d bytes" % len(u))
        return f
    b0, b1 = u[0], u[1]
    f.tagged = bool(b0 & 0x80)
    f.last = bool(b0 & 0x40)
    f.ddp_rsvd = (b0 >> 2) & 0xF
    f.dv = b0 & 0x3
    f.rv = b1 >> 6
    f.rsvd_ulp = (b1 >> 4) & 0x3
    f.opcode = b1 & 0xF
    if f.tagged:
        if len(u) < 14:
            f.problems.append("tagged header truncated")
            return f
        f.stag, f.to = be32(u, 2), be64(u, 6)
        f.hdr, f.payload = u[:14], u[14:]
    else:
        if len(u) < 18:
            f.problems.append("untagged header truncated")
            return f
        f.inval, f.qn = be32(u, 2), be32(u, 6)
        f.msn, f.mo = be32(u, 10), be32(u, 14)
        f.hdr, f.payload = u[:18], u[18:]
    f.kind = f.opcode
    return f


def check_crc(fpdus, crc_on):
    probs, notes, order = [], [], set()
    for f in fpdus:
        got, want = f.crc, crc32c(f.covered)
        if crc_on:
            if got == struct.pack("<I", want):
                order.add("little-endian")
            elif got == struct.pack(">I", want):
                order.add("big-endian")
            else:
                probs.append("FPDU at %d: CRC %s, computed 0x%08x" %
                             (f.off, got.hex(), want))
        elif got != b"\0\0\0\0" and got not in (struct.pack("<I", want),
                                                  struct.pack(">I", want)):
            probs.append("FPDU at %d: CRC not negotiated but field is %s" %
                         (f.off, got.hex()))
    if crc_on and order:
        notes.append("CRC32c valid on every FPDU (%s)" %
                     "/".join(sorted(order)))
    return probs, notes
