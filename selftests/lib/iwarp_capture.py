#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
iwarp_capture.py - decode the MPA connection setup of RFC 5044 / RFC 6581
from a pcap file, without tshark (tshark 4.0 shows the RFC 6581 IRD/ORD word
only as raw private data bytes, and its startup costs seconds under TCG).

    iwarp_capture.py CAPTURE.pcap PORT

prints one line per TCP connection to PORT (the rdma_cm listener):

    conn sport=S req=<frame> rep=<frame> rtr=<fpdu> term_i=<term> term_r=<term>

with <frame> = "rev=R flags=0xFF s=S c=C r=R pd_len=N ird=I ord=O a=A b=B
c_rtr=C d_rtr=D" (ird.. only when S is set and the private data holds the
4-byte word; "-" when the frame is absent), <fpdu> the first FPDU the
initiator sent after the Reply, as "op=OPCODE len=ULPDU_LEN qn=.. msn=..
size=.." (size only for a Read Request), and <term> the first Terminate
each side sent ("layer=L etype=E code=C" or "-"). Used as a module by
selftests/mpa/mpa_suite.py (decode()), selftests/mpa/mpa_pair_wire.py and
selftests/rsockets/rsockets_wire.py (the parsers below).

Pure logic: reads the libpcap format (Ethernet with or without VLAN tags,
Linux cooked v1/v2, BSD loopback or raw IP link types; IPv4/IPv6, TCP),
reassembles each direction by sequence number, then parses MPA
Request/Reply frames and FPDUs (markers off). Every iWARP number comes
from include/siwx/wire.h through siwx_wire.py; the numbers of pcap,
Ethernet, IP and TCP are this file's own.

Library:
  packets(path)           every TCP segment of the capture
  flows(path)             {(src, sport, dst, dport): Flow}, each direction
                          reassembled (Flow.stream(): (bytes, gap?);
                          Flow.filled(): on past holes, (bytes, holes))
  connections(fl, port)   the TCP connections to PORT, in capture order;
                          mpa_connections() those opened by an MPA Request
                          (the last one is the newest attempt)
  parse_frame(b, key)     an MPA Request/Reply at the start of b
  parse_fpdus(b)          the FPDUs of a stream after its MPA frame
  decode(path, port)      all of it per connection, as mpa_suite.py uses it
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import siwx_wire as W  # noqa: E402

KEY_REQ, KEY_REP = W.KEY_REQ, W.KEY_REP
# pcap link types read: BSD loopback (null), Ethernet, raw IP, Linux
# cooked v1, raw IPv4, raw IPv6, Linux cooked v2
LINKTYPES = (0, 1, 101, 113, 228, 229, 276)


def _records(path, partial=False, whole=False):
    """(timestamp, link type, packet bytes) of every pcap record; a record
    cut short at the end (the file is still being written) ends it, with
    what there is of it when partial. whole: a packet cut by the snap
    length is a ValueError."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise ValueError("not a libpcap file (pcapng?)")
    frac = 1e9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e6
    # the upper 4 bits tell about an FCS at the end of each packet, which
    # the IP length cuts off
    linktype = struct.unpack(e + "I", data[20:24])[0] & 0x0FFFFFFF
    if linktype not in LINKTYPES:
        raise ValueError("link type %d not supported" % linktype)
    off = 24
    while off + 16 <= len(data):
        sec, sub, incl, orig = struct.unpack(e + "IIII", data[off:off + 16])
        off += 16
        if whole and incl < orig:
            raise ValueError("packet truncated by the snap length")
        if off + incl > len(data):
            if partial:
                yield sec + sub / frac, linktype, data[off:]
            break
        yield sec + sub / frac, linktype, data[off:off + incl]
        off += incl


def _network(linktype, pkt):
    """(EtherType, network layer bytes) of a captured packet."""
    if linktype == 1:                   # Ethernet, maybe VLAN tagged
        if len(pkt) < 14:
            return 0, b""
        p, et = 14, struct.unpack(">H", pkt[12:14])[0]
        while et in (0x8100, 0x88A8) and len(pkt) >= p + 4:
            et = struct.unpack(">H", pkt[p + 2:p + 4])[0]
            p += 4
        return et, pkt[p:]
    if linktype == 113:                 # Linux cooked v1
        if len(pkt) < 16:
            return 0, b""
        return struct.unpack(">H", pkt[14:16])[0], pkt[16:]
    if linktype == 276:                 # Linux cooked v2
        if len(pkt) < 20:
            return 0, b""
        return struct.unpack(">H", pkt[0:2])[0], pkt[20:]
    if linktype == 228:                 # raw IPv4
        return 0x0800, pkt
    if linktype == 229:                 # raw IPv6
        return 0x86DD, pkt
    l3 = pkt[4:] if linktype == 0 else pkt  # null / raw IP
    return (0x0800 if l3 and l3[0] >> 4 == 4 else 0x86DD), l3


def packets(path, partial=False, whole=False):
    """Yield (ts, src, sport, dst, dport, seq, flags, payload) of every
    IPv4/IPv6 TCP segment; src and dst are the raw address bytes. Raises
    ValueError for pcapng or an unsupported link type. partial, whole:
    see _records."""
    for ts, linktype, pkt in _records(path, partial, whole):
        et, l3 = _network(linktype, pkt)
        if et == 0x0800 and len(l3) >= 20 and l3[0] >> 4 == 4:
            if l3[9] != 6:
                continue
            ihl = (l3[0] & 0xF) * 4
            src, dst = l3[12:16], l3[16:20]
            tot = struct.unpack(">H", l3[2:4])[0]
            tcp = l3[ihl:tot]           # without Ethernet padding
        elif et == 0x86DD and len(l3) >= 40:
            if l3[6] != 6:
                continue
            src, dst = l3[8:24], l3[24:40]
            plen = struct.unpack(">H", l3[4:6])[0]
            tcp = l3[40:40 + plen]
        else:
            continue
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        doff = (tcp[12] >> 4) * 4
        yield ts, src, sport, dst, dport, seq, tcp[13], bytes(tcp[doff:])


def endpoint(addr, port):
    """'ADDR:PORT' of raw address bytes."""
    fam = socket.AF_INET if len(addr) == 4 else socket.AF_INET6
    return "%s:%d" % (socket.inet_ntop(fam, addr), port)


class Flow:
    """One direction of a TCP connection: t0 (its first packet), isn (of
    its SYN), segs [(seq, payload)], fin, rst."""

    def __init__(self, ts):
        self.t0 = ts
        self.isn = None
        self.segs = []
        self.fin = self.rst = False
        self._stream = None

    def stream(self):
        """Contiguous bytes from the start, by sequence number (the SYN's
        + 1, else the lowest seen); (bytes, gap?), gap: data after a hole
        is left out."""
        if self._stream is None:
            self._stream = self._reassemble()
        return self._stream

    def filled(self):
        """The bytes from the start like stream(), but on past holes:
        (bytes, [(offset, length)] of the holes, each filled with zeros)."""
        return self._assemble(True)

    def _assemble(self, fill):
        """(bytes, holes) by sequence number from the start; segments
        starting at the same offset: the first captured first. Without
        fill, the bytes end at the first hole."""
        out, holes = bytearray(), []
        if not self.segs:
            return b"", holes
        base = (self.isn + 1) & 0xFFFFFFFF if self.isn is not None else \
            min(s for s, _ in self.segs)
        rel_segs = [((s - base) & 0xFFFFFFFF, d) for s, d in self.segs]
        for rel, d in sorted(rel_segs, key=lambda x: x[0]):
            if rel > 0x7FFFFFFF:        # before the base
                continue
            if rel > len(out):
                holes.append((len(out), rel - len(out)))
                if not fill:
                    break
                out += bytes(rel - len(out))
            if rel + len(d) > len(out):
                out += d[len(out) - rel:]
        return bytes(out), holes

    def _reassemble(self):
        out, holes = self._assemble(False)
        return out, bool(holes)


def flows(path, partial=False, whole=False):
    """{(src, sport, dst, dport): Flow} of every TCP direction in the
    capture, in the order of their first packets (partial, whole: see
    _records)."""
    out = {}
    for ts, src, sport, dst, dport, seq, flags, payload in \
            packets(path, partial, whole):
        key = (src, sport, dst, dport)
        fl = out.get(key)
        if fl is None:
            fl = out[key] = Flow(ts)
        if flags & 0x02:                # SYN: data starts at seq + 1
            fl.isn = seq
        if flags & 0x01:
            fl.fin = True
        if flags & 0x04:
            fl.rst = True
        if payload:
            fl.segs.append((seq, payload))
    return out


def connections(fl, port):
    """[(key, initiator Flow, responder Flow)] of the TCP connections to
    PORT (key: the initiator's (src, sport, dst, dport)), ordered by their
    first packet; refused attempts included (no payload)."""
    conns = []
    for key, f in fl.items():
        if key[3] != port:
            continue
        src, sport, dst, dport = key
        back = fl.get((dst, dport, src, sport)) or Flow(f.t0)
        conns.append((key, f, back))
    conns.sort(key=lambda c: c[1].t0)
    return conns


def mpa_connections(conns):
    """The connections of connections() whose initiator stream starts with
    an MPA Request key; the last one is the newest."""
    return [c for c in conns
            if c[1].stream()[0][:W.MPA_KEY_SIZE] == KEY_REQ]


def be16(b, o):
    return struct.unpack_from(">H", b, o)[0]


def be32(b, o):
    return struct.unpack_from(">I", b, o)[0]


def be64(b, o):
    return struct.unpack_from(">Q", b, o)[0]


def _bit(v, mask):
    return int(bool(v & mask))


def parse_frame(b, key, strict=True):
    """MPA Request/Reply at the start of b: (dict, length) or (None, 0).
    strict: b must start with key; else any 16 bytes do and the dict's
    key_ok tells. complete: all of its private data is in b; pdata: the
    private data after the RFC 6581 word (if any)."""
    if len(b) < W.MPA_RR_HDR_SIZE or (strict and b[:W.MPA_KEY_SIZE] != key):
        return None, 0
    flags, rev = b[W.MPA_OFF_FLAGS], b[W.MPA_OFF_REV]
    pd_len = be16(b, W.MPA_OFF_PD_LEN)
    f = {"rev": rev, "flags": flags, "m": _bit(flags, W.MPA_FLAG_M),
         "c": _bit(flags, W.MPA_FLAG_C), "r": _bit(flags, W.MPA_FLAG_R),
         "s": _bit(flags, W.MPA_FLAG_S), "pd_len": pd_len,
         "key_ok": int(b[:W.MPA_KEY_SIZE] == key),
         "resbits": flags & W.MPA_FLAGS_RSVD,
         "complete": len(b) >= W.MPA_RR_HDR_SIZE + pd_len}
    pd = b[W.MPA_RR_HDR_SIZE:W.MPA_RR_HDR_SIZE + pd_len]
    if f["s"] and len(pd) >= W.MPA_V2_HDR_SIZE:
        wi, wo = be16(pd, W.MPA_V2_OFF_IRD), be16(pd, W.MPA_V2_OFF_ORD)
        f.update(ird=wi & W.MPA_V2_IRD_ORD_MASK,
                 ord=wo & W.MPA_V2_IRD_ORD_MASK,
                 a=_bit(wi, W.MPA_V2_IRD_A), b=_bit(wi, W.MPA_V2_IRD_B),
                 c_rtr=_bit(wo, W.MPA_V2_ORD_C),
                 d_rtr=_bit(wo, W.MPA_V2_ORD_D))
        pd = pd[W.MPA_V2_HDR_SIZE:]
    f["pdata"] = pd
    return f, W.MPA_RR_HDR_SIZE + pd_len


def parse_fpdus(b, crc=None):
    """FPDUs of a stream after the MPA frame: list of dicts, the last one
    possibly incomplete (complete=0). len: ULPDU length; plen: ULP payload
    after the DDP/RDMAP header; wlen: bytes on the wire (pad, CRC field
    included, present even with CRC off); t, l, dv: DDP tagged/last flags
    and version; rv, op: RDMAP version and opcode; stag, to (tagged) or
    qn, msn, mo (untagged); size: a Read Request's message size; layer,
    etype, code, hdrct: a Terminate's control field; crcfield (complete
    FPDUs only). crc is not used (the CRC field is always there)."""
    out, off = [], 0
    while off + W.MPA_HDR_SIZE <= len(b):
        ulen = be16(b, off)
        total = W.fpdu_len(ulen)
        u = b[off + W.MPA_HDR_SIZE:off + W.MPA_HDR_SIZE + ulen]
        if len(u) < W.DDP_CTRL_SIZE:
            break
        ddp, rdmap = u[0], u[1]
        d = {"len": ulen, "t": _bit(ddp, W.DDP_FLAG_T),
             "l": _bit(ddp, W.DDP_FLAG_L), "dv": ddp & W.DDP_MASK_DV,
             "rv": (rdmap & W.RDMAP_MASK_RV) >> W.RDMAP_RV_SHIFT,
             "op": rdmap & W.RDMAP_MASK_OPCODE,
             "wlen": total, "complete": int(off + total <= len(b))}
        if d["t"]:
            hl = W.DDP_TAGGED_HDR_SIZE
            if len(u) >= hl:
                d["stag"], d["to"] = be32(u, W.DDP_OFF_STAG), \
                    be64(u, W.DDP_OFF_TO)
        else:
            hl = W.DDP_UNTAGGED_HDR_SIZE
            if len(u) >= hl:
                d["qn"], d["msn"], d["mo"] = be32(u, W.DDP_OFF_QN), \
                    be32(u, W.DDP_OFF_MSN), be32(u, W.DDP_OFF_MO)
        d["plen"] = max(ulen - hl, 0)
        p = u[hl:]
        if not d["t"] and d["op"] == W.RDMAP_OP_READ_REQ and \
                len(p) >= W.RREQ_OFF_SIZE + 4:
            d["size"] = be32(p, W.RREQ_OFF_SIZE)
        if d["op"] == W.RDMAP_OP_TERMINATE and \
                len(p) >= W.RDMAP_TERM_CTRL_SIZE:
            le = p[W.TERM_OFF_LAYER_ETYPE]
            d["layer"], d["etype"] = le >> W.TERM_LAYER_SHIFT, \
                le & W.TERM_ETYPE_MASK
            d["code"] = p[W.TERM_OFF_ECODE]
            # the M, D and R bits as one number
            d["hdrct"] = p[W.TERM_OFF_FLAGS] >> \
                (W.TERM_FLAG_R.bit_length() - 1)
        if d["complete"]:
            d["crcfield"] = be32(b, off + total - W.MPA_CRC_SIZE)
        out.append(d)
        off += total
    return out


def _fmt_frame(f):
    if not f:
        return "-"
    s = "rev=%d flags=0x%02x s=%d c=%d r=%d pd_len=%d" % (
        f["rev"], f["flags"], f["s"], f["c"], f["r"], f["pd_len"])
    if "ird" in f:
        s += " ird=%d ord=%d a=%d b=%d c_rtr=%d d_rtr=%d" % (
            f["ird"], f["ord"], f["a"], f["b"], f["c_rtr"], f["d_rtr"])
    return s


def _fmt_fpdu(d):
    if not d:
        return "-"
    s = "op=%d len=%d" % (d["op"], d["len"])
    for k in ("qn", "msn", "size"):
        if k in d:
            s += " %s=%d" % (k, d[k])
    return s


def _fmt_term(d):
    if not d:
        return "-"
    return "layer=%d etype=%d code=%d" % (d.get("layer", -1),
                                          d.get("etype", -1),
                                          d.get("code", -1))


def decode(path, port):
    """List of per-connection dicts for connections to TCP port PORT."""
    conns = []
    for (_, sport, _, _), ifl, rfl in connections(flows(path), port):
        if not ifl.segs:                # refused: no payload
            continue
        ib, rb = ifl.stream()[0], rfl.stream()[0]
        req, rl = parse_frame(ib, KEY_REQ)
        rep, pl = parse_frame(rb, KEY_REP)
        c = {"sport": sport, "req": req, "rep": rep, "rtr": None,
             "term_i": None, "term_r": None, "fpdus_i": [], "fpdus_r": []}
        if req and rep and not rep["r"]:
            fi = parse_fpdus(ib[rl:], rep["c"] or req["c"])
            fr = parse_fpdus(rb[pl:], rep["c"] or req["c"])
            c["fpdus_i"], c["fpdus_r"] = fi, fr
            c["rtr"] = fi[0] if fi else None
            c["term_i"] = next((d for d in fi
                                if d["op"] == W.RDMAP_OP_TERMINATE), None)
            c["term_r"] = next((d for d in fr
                                if d["op"] == W.RDMAP_OP_TERMINATE), None)
        conns.append(c)
    conns.sort(key=lambda c: c["sport"])
    return conns


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: iwarp_capture.py CAPTURE.pcap PORT")
    for c in decode(sys.argv[1], int(sys.argv[2])):
        print("conn sport=%d req=[%s] rep=[%s] rtr=[%s] term_i=[%s] "
              "term_r=[%s]" % (c["sport"], _fmt_frame(c["req"]),
                               _fmt_frame(c["rep"]), _fmt_fpdu(c["rtr"]),
                               _fmt_term(c["term_i"]),
                               _fmt_term(c["term_r"])))


if __name__ == "__main__":
    main()
