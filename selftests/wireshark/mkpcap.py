#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
mkpcap.py - a synthetic iWARP capture for the wireshark suite.

    mkpcap.py OUT.pcap

Writes a libpcap file (Ethernet, IPv4, TCP) with what real siwx traffic
rarely or never shows, so that the dissector's test covers it too: MPA
Requests and Replies of revision 1 and 2, the RFC 6581 IRD/ORD word with
every RTR bit and 0x3FFF, private data after the word, a reject; FPDUs of
every RDMAP opcode wire.h names (Verify and an unknown one included),
Flush Requests of both selectivities with and without P/G and reserved
bits, Atomic Write Requests, several FPDUs in one TCP segment and one FPDU
split over two segments, CRC on and off. Deterministic: the same bytes on
every run (committed as pcaps/synthetic.pcap.gz; the suite regenerates it
and compares).

Every iWARP number comes from include/siwx/wire.h through siwx_wire.py.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import siwx_wire as W  # noqa: E402
from iwarp_capture import crc32c  # noqa: E402

CLIENT, SERVER = bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1])


def ip_csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


class Capture:
    def __init__(self):
        self.recs = []
        self.t = 1700000000.0

    def packet(self, src, sport, dst, dport, seq, ack, flags, payload=b""):
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF,
                          ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
        pseudo = src + dst + struct.pack("!BBH", 0, 6, len(tcp) + len(payload))
        c = ip_csum(pseudo + tcp + payload)
        tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
        tot = 20 + len(tcp) + len(payload)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, tot, 0, 0x4000, 64, 6, 0,
                         src, dst)
        ip = ip[:10] + struct.pack("!H", ip_csum(ip)) + ip[12:]
        eth = bytes(12) + b"\x08\x00"
        self.t += 0.001
        self.recs.append((self.t, eth + ip + tcp + payload))

    def write(self, path):
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
            for t, p in self.recs:
                f.write(struct.pack("<IIII", int(t), int(round(t % 1 * 1e6)),
                                    len(p), len(p)))
                f.write(p)


class Conn:
    """One TCP connection: client port -> SERVER:port."""

    def __init__(self, cap, sport, dport):
        self.cap, self.sport, self.dport = cap, sport, dport
        self.seq = {0: 1000 + sport, 1: 5000 + dport}
        c = cap
        c.packet(CLIENT, sport, SERVER, dport, self.seq[0], 0, 0x02)
        c.packet(SERVER, dport, CLIENT, sport, self.seq[1], self.seq[0] + 1,
                 0x12)
        self.seq[0] += 1
        self.seq[1] += 1
        c.packet(CLIENT, sport, SERVER, dport, self.seq[0], self.seq[1], 0x10)

    def send(self, side, data):
        """side 0: client -> server, 1: back"""
        src, sp, dst, dp = (CLIENT, self.sport, SERVER, self.dport) if \
            side == 0 else (SERVER, self.dport, CLIENT, self.sport)
        self.cap.packet(src, sp, dst, dp, self.seq[side], self.seq[1 - side],
                        0x18, data)
        self.seq[side] += len(data)

    def close(self):
        self.cap.packet(CLIENT, self.sport, SERVER, self.dport, self.seq[0],
                        self.seq[1], 0x11)
        self.cap.packet(SERVER, self.dport, CLIENT, self.sport, self.seq[1],
                        self.seq[0] + 1, 0x11)


def mpa_frame(key, flags, rev, word=None, pd=b""):
    body = b""
    if word is not None:
        ird, ord_ = word
        body = struct.pack("!HH", ird, ord_)
    body += pd
    return key + struct.pack("!BBH", flags, rev, len(body)) + body


def fpdu(ulpdu, crc):
    b = struct.pack("!H", len(ulpdu)) + ulpdu
    b += bytes(W.pad_len(len(ulpdu)))
    return b + (struct.pack("<I", crc32c(b)) if crc else bytes(4))


def ctrl(op, tagged=False, last=True):
    w = (W.DDP_VERSION << 8) | (W.RDMAP_VERSION << W.RDMAP_RV_SHIFT) | op
    if tagged:
        w |= W.CTRL_DDP_TAGGED
    if last:
        w |= W.CTRL_DDP_LAST
    return struct.pack("!H", w)


def tagged(op, stag, to, payload=b""):
    return ctrl(op, True) + struct.pack("!IQ", stag, to) + payload


def untagged(op, qn, msn, mo=0, inval=0, payload=b"", last=True):
    return ctrl(op, False, last) + struct.pack("!IIII", inval, qn, msn, mo) + \
        payload


def imm(msn, value, se=False):
    op = W.RDMAP_OP_IMM_SE if se else W.RDMAP_OP_IMM
    return untagged(op, W.DDP_QN_SEND, msn, payload=struct.pack("!Q", value))


def atomic_req(msn, aop, rid, stag, to, a, am, c, cm):
    p = struct.pack("!IIIQQQQQ", aop, rid, stag, to, a, am, c, cm)
    return untagged(W.RDMAP_OP_ATOMIC_REQ, W.DDP_QN_READ_REQ, msn, payload=p)


def atomic_resp(msn, rid, value):
    return untagged(W.RDMAP_OP_ATOMIC_RESP, W.DDP_QN_ATOMIC_RESP, msn,
                    payload=struct.pack("!IQ", rid, value))


def flush_req(msn, stag, length, to, disp):
    p = struct.pack("!IIQI", stag, length, to, disp)
    assert len(p) == W.RDMAP_FLUSH_REQ_SIZE
    return untagged(W.RDMAP_OP_FLUSH_REQ, W.DDP_QN_READ_REQ, msn, payload=p)


def aw_req(msn, stag, to, data):
    p = struct.pack("!IIQ", stag, W.ATOMIC_WRITE_SIZE, to) + data
    assert len(p) == W.RDMAP_ATOMIC_WRITE_REQ_SIZE
    return untagged(W.RDMAP_OP_ATOMIC_WRITE_REQ, W.DDP_QN_READ_REQ, msn,
                    payload=p)


def empty_resp(op, msn):
    return untagged(op, W.DDP_QN_ATOMIC_RESP, msn)


def read_req(msn, sink_stag, sink_to, size, src_stag, src_to):
    return untagged(W.RDMAP_OP_READ_REQ, W.DDP_QN_READ_REQ, msn,
                    payload=struct.pack("!IQIIQ", sink_stag, sink_to, size,
                                        src_stag, src_to))


def terminate(layer, etype, code, flags, hdrs=b""):
    p = bytes([(layer << W.TERM_LAYER_SHIFT) | etype, code, flags, 0]) + hdrs
    return untagged(W.RDMAP_OP_TERMINATE, W.DDP_QN_TERMINATE, 1, payload=p)


def build():
    cap = Capture()
    S, C, R = W.MPA_FLAG_S, W.MPA_FLAG_C, W.MPA_FLAG_R
    A, B = W.MPA_V2_IRD_A, W.MPA_V2_IRD_B
    Cw, D = W.MPA_V2_ORD_C, W.MPA_V2_ORD_D
    FL = W.SIWX_MPA_KEY_REQ.encode(), W.SIWX_MPA_KEY_REP.encode()

    # 1: enhanced, peer-to-peer, Write RTR, CRC on; one of everything
    k = Conn(cap, 40001, 4791)
    k.send(0, mpa_frame(FL[0], S | C, W.MPA_REV_2, (A | 16, Cw | D | 8)))
    k.send(1, mpa_frame(FL[1], S | C, W.MPA_REV_2, (A | 8, Cw | 16)))
    crc = True
    i = [fpdu(tagged(W.RDMAP_OP_WRITE, 0, 0), crc)]             # the RTR
    i.append(fpdu(untagged(W.RDMAP_OP_SEND, 0, 1, payload=b"hello"), crc))
    i.append(fpdu(imm(2, 0x00000000c0ffee01), crc))
    i.append(fpdu(imm(3, 0x0123456789abcdef, se=True), crc))
    k.send(0, b"".join(i))                  # several FPDUs, one segment
    k.send(0, fpdu(tagged(W.RDMAP_OP_WRITE, 0x1234, 0x1000,
                          bytes(range(256)) * 4), crc))
    w = fpdu(imm(4, 0xfeedface), crc)
    k.send(0, w[:10])                       # one FPDU, two segments
    k.send(0, w[10:])
    k.send(0, fpdu(atomic_req(1, W.AOP_FETCH_ADD, 7, 0x2233, 0x8000, 5, 0,
                              0, 0), crc))
    k.send(1, fpdu(atomic_resp(1, 7, 0x1111), crc))
    k.send(0, fpdu(atomic_req(2, W.AOP_CMP_SWAP, 8, 0x2233, 0x8008, 9,
                              2**64 - 1, 3, 2**64 - 1), crc))
    k.send(1, fpdu(atomic_resp(2, 8, 3), crc))
    k.send(0, fpdu(read_req(3, 0x55, 0x100, 64, 0x2233, 0x8000), crc))
    k.send(1, fpdu(tagged(W.RDMAP_OP_READ_RESP, 0x55, 0x100, bytes(64)), crc))
    flushes = [
        (0x2233, 4096, 0x8000, W.FLUSH_DISP_G),
        (0x2233, 1, 0x8010, W.FLUSH_DISP_P | W.FLUSH_DISP_G),
        (0x2233, 0, 0, W.FLUSH_DISP_G |
         (W.FLUSH_SEL_MR << W.FLUSH_DISP_SEL_SHIFT)),
        (0x2233, 0xffffffff, 0, W.FLUSH_DISP_P |
         (W.FLUSH_SEL_MR << W.FLUSH_DISP_SEL_SHIFT)),
        (0x2234, 8, 0x10, W.FLUSH_DISP_G | 0x100),  # a reserved bit
    ]
    msn = 4
    for n, f in enumerate(flushes):
        k.send(0, fpdu(flush_req(msn, *f), crc))
        k.send(1, fpdu(empty_resp(W.RDMAP_OP_FLUSH_RESP, 3 + n), crc))
        msn += 1
    aws = [(0x2233, 0x8000, bytes.fromhex("0102030405060708")),
           (0x2233, 0x8008, bytes.fromhex("a5a5a5a5deadbeef"))]
    for n, a in enumerate(aws):
        k.send(0, fpdu(aw_req(msn, *a), crc))
        k.send(1, fpdu(empty_resp(W.RDMAP_OP_ATOMIC_WRITE_RESP,
                                  3 + len(flushes) + n), crc))
        msn += 1
    k.send(0, fpdu(untagged(W.RDMAP_OP_VERIFY_REQ, W.DDP_QN_READ_REQ, msn,
                            payload=bytes(24)), crc))
    k.send(1, fpdu(terminate(W.TERM_LAYER_RDMAP,
                             W.RDMAP_ETYPE_REMOTE_OPERATION,
                             W.RDMAP_ECODE_OPCODE,
                             W.TERM_FLAG_M | W.TERM_FLAG_D | W.TERM_FLAG_R,
                             struct.pack("!H", 42) +
                             untagged(W.RDMAP_OP_VERIFY_REQ, 1, msn) +
                             bytes(W.RDMAP_READ_REQ_SIZE)), crc))
    k.close()

    # 2: revision 1, no private data, CRC off; Sends and immediates
    k = Conn(cap, 40002, 4791)
    k.send(0, mpa_frame(FL[0], 0, W.MPA_REV_1))
    k.send(1, mpa_frame(FL[1], 0, W.MPA_REV_1))
    k.send(0, fpdu(untagged(W.RDMAP_OP_SEND_SE, 0, 1, payload=b"x" * 7), 0))
    k.send(0, fpdu(imm(2, 0), 0))
    k.send(1, fpdu(imm(1, 0xffffffff, se=True), 0))
    k.send(0, fpdu(untagged(0x13, 0, 3), 0))            # no such opcode
    k.close()

    # 3: enhanced, 0x3FFF (no negotiation), Send RTR and Read RTR offered,
    # Send RTR chosen, ULP private data after the word
    k = Conn(cap, 40003, 4792)
    nn = W.MPA_V2_NO_NEGOTIATION
    k.send(0, mpa_frame(FL[0], S, W.MPA_REV_2, (A | B | nn, D | nn),
                        b"ulp-data"))
    k.send(1, mpa_frame(FL[1], S, W.MPA_REV_2, (A | B | nn, nn), b"ok"))
    k.send(0, fpdu(untagged(W.RDMAP_OP_SEND, 0, 1), 0))   # the Send RTR
    k.send(1, fpdu(untagged(W.RDMAP_OP_SEND, 0, 1), 0))
    k.close()

    # 4: enhanced Request, rejected (R in the Reply, IRD/ORD 0)
    k = Conn(cap, 40004, 4792)
    k.send(0, mpa_frame(FL[0], S, W.MPA_REV_2, (4, 4)))
    k.send(1, mpa_frame(FL[1], S | R, W.MPA_REV_2, (0, 0)))
    k.close()
    return cap


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: mkpcap.py OUT.pcap")
    build().write(sys.argv[1])


if __name__ == "__main__":
    main()
