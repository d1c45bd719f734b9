#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
test_mpa_wire.py - unit test of the capture decoder
selftests/lib/iwarp_capture.py (used by mpa_suite.py, mpa_pair_wire.py,
rsockets_wire.py, atomic_wire.py and imm_wire.py) and of mpa_pair_wire.py
on synthetic frames and a tiny pcap file built here:
an MPA Request and Reply with the RFC 6581 IRD/ORD word, zero-length
Write, Send and Read Request RTRs, a Terminate (layer 2, etype 0,
code 7), TCP reassembly across out-of-order and repeated segments (and
past holes), the link types and the pcap variants; the tshark field dump
input, the Fpdu view, the CRC32c check and the Atomic headers of the
checkers.

    python3 selftests/mpa/test_mpa_wire.py [-v]

No VM, no capture rights, no tshark; exit status non-zero on a failure.
"""
import os
import struct
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import iwarp_capture as cap  # noqa: E402
import mpa_pair_wire  # noqa: E402

PORT = 52007
CLI = (bytes([192, 168, 78, 2]), 40001)
SRV = (bytes([192, 168, 78, 1]), PORT)


# ---------------------------------------------------------------- frames

def mpa_frame(key, rev=2, m=0, c=0, r=0, s=1, word=None, pdata=b""):
    """An MPA Request/Reply; word: (A, B, IRD, C, D, ORD) or None."""
    pd = b""
    if word is not None:
        a, b, ird, cc, d, ord_ = word
        pd = struct.pack(">HH", a << 15 | b << 14 | ird,
                         cc << 15 | d << 14 | ord_)
    pd += pdata
    flags = m << 7 | c << 6 | r << 5 | s << 4
    return key + bytes([flags, rev]) + struct.pack(">H", len(pd)) + pd


def fpdu(ulpdu, crc=0):
    """MPA FPDU around a DDP segment: length, pad to 4, CRC field."""
    b = struct.pack(">H", len(ulpdu)) + ulpdu
    return b + b"\0" * ((-len(b)) & 3) + struct.pack(">I", crc)


def tagged(op, stag, to, payload=b"", last=1):
    return bytes([0x80 | last << 6 | 1, 0x40 | op]) + \
        struct.pack(">IQ", stag, to) + payload


def untagged(op, qn, msn, mo=0, payload=b"", last=1):
    return bytes([last << 6 | 1, 0x40 | op]) + b"\0" * 4 + \
        struct.pack(">III", qn, msn, mo) + payload


def write_rtr():
    return fpdu(tagged(0, 0, 0))


def send_rtr():
    return fpdu(untagged(3, 0, 1))


def read_rtr(size=0):
    # sink STag, sink TO, message size, source STag, source TO
    return fpdu(untagged(1, 1, 1, payload=struct.pack(">IQIIQ", 0, 0, size,
                                                      0, 0)))


def terminate(layer, etype, code, hdrct=0):
    ctrl = bytes([layer << 4 | etype, code, hdrct << 5, 0])
    return fpdu(untagged(7, 2, 1, payload=ctrl), crc=0x11223344)


REQ = mpa_frame(cap.KEY_REQ, word=(1, 0, 4, 1, 1, 16), pdata=b"hi")
REP = mpa_frame(cap.KEY_REP, word=(1, 1, 0x3FFF, 0, 1, 2))


# ---------------------------------------------------------------- pcap

def tcp_seg(src, dst, seq, flags, payload=b"", ack=0):
    tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq, ack, 5 << 4, flags,
                      65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6,
                     0, src[0], dst[0]) + tcp
    return ip


def ether(ip, vlan=False):
    hdr = b"\x02\0\0\0\0\x01" + b"\x02\0\0\0\0\x02"
    if vlan:
        hdr += struct.pack(">HH", 0x8100, 7)
    return hdr + struct.pack(">H", 0x0800) + ip + b"\0" * 6   # padding


def pcap(path, frames, linktype=1, big=False, nsec=False):
    e = ">" if big else "<"
    magic = 0xA1B23C4D if nsec else 0xA1B2C3D4
    with open(path, "wb") as f:
        f.write(struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, 65535,
                            linktype))
        for i, fr in enumerate(frames):
            f.write(struct.pack(e + "IIII", 1000 + i, 0, len(fr), len(fr)))
            f.write(fr)


def conversation():
    """IP packets: a refused attempt, then a connection with Request,
    Reply, a Read Request RTR, a Send and a Terminate of the responder;
    segments out of order, one repeated."""
    isn_i, isn_r = 1000, 5000
    ib = REQ + read_rtr() + fpdu(untagged(3, 0, 1, payload=b"x" * 64))
    rb = REP + fpdu(tagged(2, 0, 0)) + terminate(2, 0, 7, hdrct=5)
    ref = (CLI[0], 40000)
    pk = [tcp_seg(ref, SRV, 77, 0x02),
          tcp_seg(SRV, ref, 0, 0x14),                   # RST/ACK
          tcp_seg(CLI, SRV, isn_i, 0x02),               # SYN
          tcp_seg(SRV, CLI, isn_r, 0x12),               # SYN/ACK
          # the Request in two segments, the second one first
          tcp_seg(CLI, SRV, isn_i + 1 + 10, 0x18, ib[10:len(REQ)]),
          tcp_seg(CLI, SRV, isn_i + 1, 0x18, ib[:10]),
          tcp_seg(SRV, CLI, isn_r + 1, 0x18, rb[:len(REP)]),
          tcp_seg(CLI, SRV, isn_i + 1 + len(REQ), 0x18, ib[len(REQ):]),
          # a repeat of the first Request bytes
          tcp_seg(CLI, SRV, isn_i + 1, 0x18, ib[:10]),
          tcp_seg(SRV, CLI, isn_r + 1 + len(REP), 0x19, rb[len(REP):])]
    return pk, ib, rb


class Frames(unittest.TestCase):
    def test_request_reply_word(self):
        f, n = cap.parse_frame(REQ + b"tail", cap.KEY_REQ)
        self.assertEqual(n, len(REQ))
        self.assertEqual((f["rev"], f["m"], f["c"], f["r"], f["s"]),
                         (2, 0, 0, 0, 1))
        self.assertEqual((f["flags"], f["pd_len"], f["key_ok"]),
                         (0x10, 6, 1))
        self.assertEqual((f["a"], f["b"], f["ird"], f["c_rtr"], f["d_rtr"],
                          f["ord"]), (1, 0, 4, 1, 1, 16))
        self.assertTrue(f["complete"])
        self.assertEqual(f["pdata"], b"hi")
        f, n = cap.parse_frame(REP, cap.KEY_REP)
        self.assertEqual((f["a"], f["b"], f["ird"], f["c_rtr"], f["d_rtr"],
                          f["ord"]), (1, 1, 0x3FFF, 0, 1, 2))
        self.assertEqual(f["pdata"], b"")

    def test_frame_key_and_variants(self):
        self.assertEqual(cap.parse_frame(REP, cap.KEY_REQ),
                         (None, 0))
        f, _ = cap.parse_frame(REP, cap.KEY_REQ, strict=False)
        self.assertEqual(f["key_ok"], 0)
        self.assertEqual(cap.parse_frame(REQ[:19], cap.KEY_REQ),
                         (None, 0))
        f, n = cap.parse_frame(REQ[:22], cap.KEY_REQ)
        self.assertFalse(f["complete"])
        self.assertNotIn("ird", f)      # the word is cut short
        # Rev 1, S=0: private data without a word; reject, CRC, marker
        r1 = mpa_frame(cap.KEY_REP, rev=1, s=0, r=1, c=1, m=1,
                       pdata=b"\x01\x02\x03\x04")
        f, n = cap.parse_frame(r1, cap.KEY_REP)
        self.assertEqual((f["rev"], f["s"], f["r"], f["c"], f["m"]),
                         (1, 0, 1, 1, 1))
        self.assertNotIn("ird", f)
        self.assertEqual(f["pdata"], b"\x01\x02\x03\x04")


class Fpdus(unittest.TestCase):
    def test_rtrs(self):
        w, s, r = (cap.parse_fpdus(x)[0]
                   for x in (write_rtr(), send_rtr(), read_rtr()))
        self.assertEqual((w["op"], w["t"], w["l"], w["len"], w["plen"]),
                         (0, 1, 1, 14, 0))
        self.assertEqual((w["stag"], w["to"], w["dv"], w["rv"]),
                         (0, 0, 1, 1))
        self.assertNotIn("qn", w)
        self.assertEqual((s["op"], s["t"], s["len"], s["plen"], s["qn"],
                          s["msn"], s["mo"]), (3, 0, 18, 0, 0, 1, 0))
        self.assertEqual((r["op"], r["t"], r["len"], r["plen"], r["qn"],
                          r["msn"], r["size"]), (1, 0, 46, 28, 1, 1, 0))
        self.assertEqual(cap.parse_fpdus(read_rtr(4096))[0]["size"],
                         4096)
        for d, x in ((w, write_rtr()), (s, send_rtr()), (r, read_rtr())):
            self.assertEqual((d["wlen"], d["complete"], d["crcfield"]),
                             (len(x), 1, 0))

    def test_terminate(self):
        t = cap.parse_fpdus(terminate(2, 0, 7, hdrct=5))[0]
        self.assertEqual((t["op"], t["qn"], t["msn"], t["layer"],
                          t["etype"], t["code"], t["hdrct"]),
                         (7, 2, 1, 2, 0, 7, 5))
        self.assertEqual((t["len"], t["plen"], t["crcfield"]),
                         (22, 4, 0x11223344))

    def test_stream_and_incomplete(self):
        b = write_rtr() + send_rtr() + terminate(2, 0, 7)
        fl = cap.parse_fpdus(b + send_rtr()[:10])
        self.assertEqual([d["op"] for d in fl], [0, 3, 7, 3])
        self.assertEqual([d["complete"] for d in fl], [1, 1, 1, 0])
        self.assertNotIn("crcfield", fl[-1])
        self.assertEqual(sum(d["wlen"] for d in fl[:3]), len(b))
        self.assertEqual(cap.parse_fpdus(b"\0"), [])
        # the pair decoder's view: complete ones and what is left over
        pf, rest = mpa_pair_wire.fpdus(b + send_rtr()[:10])
        self.assertEqual((len(pf), rest), (3, 10))
        self.assertEqual((pf[0]["stag"], pf[0]["to"], pf[0]["T"],
                          pf[0]["len"]),
                         ("0x00000000", "0x0000000000000000", 1, 0))
        self.assertEqual(pf[2]["hdrct"], "0x0")


class Capture(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.pk, self.ib, self.rb = conversation()

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def check_decode(self, path):
        conns = cap.decode(path, PORT)
        self.assertEqual(len(conns), 1)     # the refused one: no payload
        c = conns[0]
        self.assertEqual(c["sport"], CLI[1])
        self.assertEqual((c["req"]["ird"], c["req"]["ord"]), (4, 16))
        self.assertEqual((c["rep"]["ird"], c["rep"]["ord"]), (0x3FFF, 2))
        self.assertEqual((c["rtr"]["op"], c["rtr"]["size"]), (1, 0))
        self.assertEqual([d["op"] for d in c["fpdus_i"]], [1, 3])
        self.assertEqual([d["op"] for d in c["fpdus_r"]], [2, 7])
        self.assertIsNone(c["term_i"])
        self.assertEqual((c["term_r"]["layer"], c["term_r"]["etype"],
                          c["term_r"]["code"]), (2, 0, 7))

    def test_ethernet(self):
        p = self.path("eth.pcap")
        pcap(p, [ether(x) for x in self.pk])
        self.check_decode(p)
        fl = cap.flows(p)
        conns = cap.connections(fl, PORT)
        self.assertEqual([k[1] for k, _, _ in conns], [40000, CLI[1]])
        mpa = cap.mpa_connections(conns)
        self.assertEqual(len(mpa), 1)
        key, fi, fr = mpa[-1]
        self.assertEqual(cap.endpoint(key[0], key[1]),
                         "192.168.78.2:40001")
        self.assertEqual(fi.stream(), (self.ib, False))
        self.assertEqual(fr.stream(), (self.rb, False))
        self.assertTrue(fr.fin and not fi.fin)
        self.assertTrue(conns[0][2].rst)
        self.assertEqual(fi.t0, 1002.0)

    def test_ephemeral_port_collision(self):
        # another case's connection whose client got PORT as its
        # ephemeral port: its listener's direction has dport PORT, but it
        # answered with SYN+ACK and is no connection to PORT (CI saw it
        # counted as a second, empty one)
        other = (SRV[0], PORT + 8)
        eph = (CLI[0], PORT)
        pk = self.pk + [tcp_seg(eph, other, 9000, 0x02),
                        tcp_seg(other, eph, 7000, 0x12),
                        tcp_seg(eph, other, 9001, 0x18, REQ),
                        tcp_seg(other, eph, 7001, 0x18, REP)]
        p = self.path("collide.pcap")
        pcap(p, [ether(x) for x in pk])
        self.check_decode(p)
        conns = cap.decode(p, PORT + 8)
        self.assertEqual([c["sport"] for c in conns], [PORT])
        self.assertEqual(conns[0]["req"]["ord"], 16)

    def test_pair_decoder(self):
        p = self.path("eth.pcap")
        pcap(p, [ether(x) for x in self.pk])
        d, diag = mpa_pair_wire.decode(p, PORT)
        want = {"mpa_conns": 1, "req.key": 1, "req.S": 1, "req.A": 1,
                "req.IRD": 4, "req.ORD": 16, "req.pdata": "hi",
                "rep.IRD": 16383, "rep.ORD": 2, "rep.B": 1,
                "i1.op": 1, "i1.rsize": 0, "i1.len": 28, "i2.len": 64,
                "r1.T": 1, "r1.op": 2, "i.nfpdu": 2, "r.nfpdu": 2,
                "rterm.seen": 1, "rterm.code": 7, "rterm.layer": 2,
                "rterm.crcfield": "0x11223344", "iterm.seen": 0}
        self.assertEqual({k: d.get(k) for k in want}, want)
        self.assertIn("2 TCP connection(s) to port %d, 1 with an MPA "
                      "Request" % PORT, diag)

    def test_gap(self):
        p = self.path("gap.pcap")
        pcap(p, [ether(x) for i, x in enumerate(self.pk) if i != 4])
        fi = cap.connections(cap.flows(p), PORT)[1][1]
        self.assertEqual(fi.stream(), (self.ib[:10], True))
        # filled(): on past the hole, zero-filled
        n = len(REQ) - 10
        self.assertEqual(fi.filled(), (self.ib[:10] + b"\0" * n +
                                       self.ib[len(REQ):], [(10, n)]))

    def test_filled(self):
        p = self.path("eth.pcap")
        pcap(p, [ether(x) for x in self.pk])
        conns = cap.connections(cap.flows(p), PORT)
        self.assertEqual(conns[1][1].filled(), (self.ib, []))
        self.assertEqual(conns[0][1].filled(), (b"", []))   # no payload
        f = cap.Flow(0.0)
        f.isn = 99
        # the same start: the first captured first; before the base: left
        # out; no SYN: from the lowest sequence number
        f.segs = [(100, b"abc"), (100, b"Xbcd"), (105, b"z"), (90, b"old")]
        self.assertEqual(f.filled(), (b"abcd\0z", [(4, 1)]))
        f.isn = None
        f.segs = [(7, b"B"), (5, b"A")]
        self.assertEqual(f.filled(), (b"A\0B", [(1, 1)]))

    def test_link_types(self):
        for name, lt, frames, kw in (
                ("vlan", 1, [ether(x, vlan=True) for x in self.pk], {}),
                ("raw", 101, self.pk, {"big": True}),
                ("raw4", 228, self.pk, {"nsec": True}),
                ("null", 0, [b"\2\0\0\0" + x for x in self.pk], {}),
                ("sll", 113, [b"\0" * 14 + b"\x08\0" + x for x in self.pk],
                 {}),
                ("sll2", 276, [b"\x08\0" + b"\0" * 18 + x for x in self.pk],
                 {})):
            with self.subTest(name):
                p = self.path(name + ".pcap")
                pcap(p, frames, linktype=lt, **kw)
                self.check_decode(p)

    def test_ipv6(self):
        def v6(ip):             # the same TCP segment in IPv6
            tcp = ip[20:]
            src = b"\xfd" + b"\0" * 14 + ip[15:16]
            dst = b"\xfd" + b"\0" * 14 + ip[19:20]
            return struct.pack(">IHBB", 6 << 28, len(tcp), 6, 64) + src + \
                dst + tcp
        p = self.path("v6.pcap")
        pcap(p, [v6(x) for x in self.pk], linktype=229)
        self.check_decode(p)
        key = cap.mpa_connections(
            cap.connections(cap.flows(p), PORT))[0][0]
        self.assertEqual(cap.endpoint(key[0], key[1]), "fd00::2:40001")

    def test_bad_files(self):
        p = self.path("x.pcapng")
        with open(p, "wb") as f:
            f.write(b"\x0a\x0d\x0d\x0a" + b"\0" * 40)
        with self.assertRaisesRegex(ValueError, "pcapng"):
            cap.decode(p, PORT)
        p = self.path("lt.pcap")
        pcap(p, [], linktype=147)
        with self.assertRaisesRegex(ValueError, "link type 147"):
            cap.decode(p, PORT)
        # a record cut short (still being written) ends the file
        p = self.path("cut.pcap")
        pcap(p, [ether(x) for x in self.pk])
        with open(p, "r+b") as f:
            f.truncate(os.path.getsize(p) - 5)
        fr = cap.connections(cap.flows(p), PORT)[1][2]
        self.assertEqual(fr.stream()[0], self.rb[:len(REP)])
        # partial: with what there is of it (here: all but the padding)
        fr = cap.connections(cap.flows(p, partial=True), PORT)[1][2]
        self.assertEqual(fr.stream()[0], self.rb)
        # a packet cut by the snap length: whole refuses the capture
        p = self.path("snap.pcap")
        pcap(p, [ether(x) for x in self.pk])
        with open(p, "r+b") as f:
            f.seek(24 + 8)
            incl = struct.unpack("<I", f.read(4))[0]
            f.write(struct.pack("<I", incl + 100))
        self.assertEqual(len(cap.flows(p)), 4)
        with self.assertRaisesRegex(ValueError, "snap length"):
            cap.flows(p, whole=True)


def tsv(rows):
    """A tshark field dump: (frame, sport, dport, seq, payload[, term
    columns...]) per row; tcp.len is not read."""
    out = []
    for r in rows:
        fr, sp, dp, seq, pl = r[:5]
        out.append("\t".join([str(fr), str(sp), str(dp), str(seq),
                              str(len(pl)), ":".join("%02x" % x for x in pl)]
                             + list(r[5:])))
    return "\n".join(out + ["", "garbage line", "1\t\t\t\t\t"]) + "\n"


class Checkers(unittest.TestCase):
    """The tshark field dump input and the Fpdu view atomic_wire.py and
    imm_wire.py use."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def dump(self, rows):
        p = os.path.join(self.tmp.name, "frames.tsv")
        with open(p, "w") as f:
            f.write(tsv(rows))
        return p

    def test_crc32c(self):
        self.assertEqual(cap.crc32c(b"123456789"), 0xE3069283)
        self.assertEqual(cap.crc32c(b""), 0)
        # RFC 3720 B.4, the CRC bytes as they go out (LSB first)
        for data, crc in ((bytes(32), "aa36918a"), (b"\xff" * 32, "43aba862"),
                          (bytes(range(32)), "4e79dd46")):
            self.assertEqual(struct.pack("<I", cap.crc32c(data)).hex(), crc)

    def test_read_frames(self):
        ib = REQ + send_rtr()
        rows = [(4, 40001, PORT, 1 + 10, ib[10:]),
                (5, 40001, PORT, 1, ib[:10]),
                (6, PORT, 40001, 1, REP),
                (7, PORT, 40001, 1 + len(REP) + 4, b"late"),
                (8, PORT, 40001, 9, b"", "2", "0", "7", "1", "1", "0", "0x07")]
        fl, terms, tops = cap.read_frames(self.dump(rows))
        self.assertEqual(sorted(fl), [(40001, PORT), (PORT, 40001)])
        self.assertEqual(fl[(40001, PORT)].filled(), (ib, []))
        self.assertEqual(fl[(PORT, 40001)].filled(),
                         (REP + b"\0" * 4 + b"late", [(len(REP), 4)]))
        self.assertEqual(fl[(PORT, 40001)].t0, "6")
        self.assertEqual(terms, [{"sport": PORT, "dport": 40001, "frame": "8",
                                  "layer": "2", "etype": "0", "code": "7",
                                  "m": "1", "d": "1", "r": "0"}])
        self.assertEqual(tops, {40001: {"0x07"}})

    def test_parse_direction(self):
        b = REQ + read_rtr(64) + terminate(2, 0, 7, hdrct=6) + \
            fpdu(b"\x41")
        mpa, fl, probs = cap.parse_direction(b, cap.KEY_REQ)
        self.assertEqual((mpa["rev"], mpa["flags"]), (2, 0x10))
        self.assertEqual(probs, [])
        r, t, x = fl
        self.assertEqual((r.kind, r.tagged, r.last, r.qn, r.msn, r.mo,
                          r.inval, r.rreq_size, r.off, r.mpalen),
                         (1, False, True, 1, 1, 0, 0, 64, len(REQ), 46))
        self.assertEqual(len(r.payload), 28)
        self.assertEqual(r.hdr, untagged(1, 1, 1))
        self.assertEqual((t.kind, t.layer, t.etype, t.code, t.hdrct,
                          t.term_m, t.term_d, t.term_r), (7, 2, 0, 7, 6,
                                                          True, True, False))
        self.assertEqual((x.kind, x.problems), (None, ["ULPDU of 1 bytes"]))
        self.assertEqual(t.covered + t.crc, terminate(2, 0, 7, hdrct=6))
        # cut short: the FPDU runs past the end; one byte left: truncated
        _, fl, probs = cap.parse_direction(b[:-3], cap.KEY_REQ)
        self.assertEqual(len(fl), 2)
        self.assertEqual(probs, ["FPDU at offset %d (ULPDU 1 bytes) runs past "
                                 "the capture (%d bytes)" % (len(b) - 8,
                                                             len(b) - 3)])
        _, fl, probs = cap.parse_direction(b + b"\0", cap.KEY_REQ)
        self.assertEqual(probs, ["truncated FPDU at offset %d" % len(b)])
        self.assertEqual(cap.parse_direction(REP, cap.KEY_REQ),
                         (None, [], ["stream does not start with %r" %
                                     cap.KEY_REQ]))
        f = cap.ddp(next(cap.frames(fpdu(untagged(3, 0, 1)[:10]))))
        self.assertEqual((f.kind, f.problems),
                         (None, ["untagged header truncated"]))

    def test_atomics(self):
        req = struct.pack(">IIIQQQQQ", 0x120 | 2, 7, 0xabc, 0x1000, 1, 2, 3, 4)
        self.assertEqual(cap.atomic_request(req),
                         {"rsvd": 0x12, "aop": 2, "id": 7, "stag": 0xabc,
                          "to": 0x1000, "asdata": 1, "asmask": 2, "cdata": 3,
                          "cmask": 4})
        self.assertEqual(cap.atomic_response(struct.pack(">IQ", 7, 99)),
                         (7, 99))

    def test_decode_connection(self):
        def crc_fpdu(u, order):
            b = fpdu(u)[:-4]
            return b + struct.pack(order + "I", cap.crc32c(b))
        req = mpa_frame(cap.KEY_REQ, c=1, word=(0, 0, 4, 0, 0, 4))
        rep = mpa_frame(cap.KEY_REP, c=1, word=(0, 0, 4, 0, 0, 4))
        ib = req + crc_fpdu(untagged(3, 0, 1, payload=b"abcd"), "<")
        rb = rep + crc_fpdu(untagged(3, 0, 1), ">") + fpdu(untagged(3, 0, 2))
        fl, _, _ = cap.read_frames(self.dump([(1, 40001, PORT, 1, ib),
                                              (2, PORT, 40001, 1, rb)]))
        c = {}
        probs, notes = cap.decode_connection(fl, "x", PORT, c)
        self.assertEqual(probs, ["x: FPDU at %d: CRC 00000000, computed "
                                 "0x%08x" % (len(rep) + 24,
                                             cap.crc32c(rb[len(rep) + 24:
                                                           -4]))])
        self.assertEqual(notes, ["x: MPA rev 2/2, CRC on, 1 FPDUs "
                                 "requester->responder, 2 back",
                                 "x: CRC32c valid on every FPDU "
                                 "(big-endian/little-endian)"])
        self.assertEqual([f.payload for f in c["req"]], [b"abcd"])
        self.assertEqual([f.msn for f in c["rsp"]], [1, 2])
        c = {}
        probs, notes = cap.decode_connection(fl, "x", PORT + 1, c)
        self.assertEqual((probs, notes, c), (
            ["x (port %d): 0 client->server and 0 server->client TCP flows "
             "captured" % (PORT + 1)], [], {}))


if __name__ == "__main__":
    unittest.main()
