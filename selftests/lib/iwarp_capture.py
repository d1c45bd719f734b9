#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
iwarp_capture.py - iWARP captures for the wire checkers: pcap reading, TCP
reassembly, MPA Request/Reply frames and FPDUs (RFC 5044, RFC 6581;
markers off), DDP and RDMAP headers (RFC 5041, RFC 5040, RFC 7306),
Terminate, CRC32c. Standard library only, no tshark (tshark 4.0 shows the
RFC 6581 IRD/ORD word only as raw private data bytes, has no dissector for
RDMAP opcodes 0x8/0x9, and its startup costs seconds under TCG).

Every iWARP number comes from include/siwx/wire.h through siwx_wire.py;
the numbers of pcap, Ethernet, IP and TCP are this file's own.

    iwarp_capture.py CAPTURE.pcap PORT

prints one line per TCP connection to PORT (the rdma_cm listener):

    conn sport=S req=[<frame>] rep=[<frame>] rtr=[<fpdu>] term_i=[<term>]
    term_r=[<term>]

with <frame> = "rev=R flags=0xFF s=S c=C r=R pd_len=N ird=I ord=O a=A b=B
c_rtr=C d_rtr=D" (ird.. only when S is set and the private data holds the
4-byte word; "-" when the frame is absent), <fpdu> the first FPDU the
initiator sent after the Reply, as "op=OPCODE len=ULPDU_LEN qn=.. msn=..
size=.." (size only for a Read Request), and <term> the first Terminate
each side sent ("layer=L etype=E code=C" or "-").

Users: mpa_suite.py and test_mpa_wire.py (decode()), mpa_pair_wire.py and
rsockets_wire.py (pcap input, parse_frame(), parse_fpdus()),
atomic_wire.py and imm_wire.py (tshark field dump input,
decode_connection(), TAP), perftest's segments.py (flows(), frames()).

Input: one direction of a TCP connection is a Flow, reassembled by
sequence number, from either source:
  flows(path)             a libpcap file (Ethernet with or without VLAN
                          tags, Linux cooked v1/v2, BSD loopback, raw IP;
                          IPv4/IPv6): {(src, sport, dst, dport): Flow}
  read_frames(path)       a tshark field dump (FRAMES.tsv):
                          ({(sport, dport): Flow}, Terminate rows, opcodes)
  packets(path)           every TCP segment of a libpcap file
  syn_mss(path)           the MSS each direction's peer announced in its SYN
  window_cuts(path)       the data segments that ended at the right edge of
                          the window the other direction last advertised
  Flow.stream()           (bytes up to the first hole, hole?)
  Flow.offset(seq)        where a sequence number is in that stream
  Flow.filled()           (bytes on past holes, [(offset, length)] of them)
  connections(fl, port)   the TCP connections to PORT, in capture order;
                          mpa_connections() those opened by an MPA Request
  endpoint(addr, port)    'ADDR:PORT'

Decoding the bytes of a direction:
  parse_frame(b, key)     an MPA Request/Reply at the start of b (dict)
  frames(b, off)          the FPDU framing walk: one Fpdu per length field
  ddp(f)                  the DDP/RDMAP header of an Fpdu, with the Read
                          Request size and the Terminate control
  parse_fpdus(b)          the FPDUs of a stream after its MPA frame, dicts
  parse_direction(b, key) the MPA frame, then the complete FPDUs, Fpdus,
                          and problems
  atomic_request(p), atomic_response(p)   RFC 7306 headers
  flush_request(p), atomic_write_request(p)
                          draft-talpey-rdma-commit headers (flush.md)
  opcode_name(op)         the RDMAP opcode's name from wire.h
  crc32c(b), check_crc(fpdus, crc_on)
  decode(path, port)      all of it per connection to PORT (main())
  decode_connection(...)  the same for one connection of read_frames()
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import siwx_wire as W  # noqa: E402

KEY_REQ, KEY_REP = W.KEY_REQ, W.KEY_REP


def be16(b, o):
    return struct.unpack_from(">H", b, o)[0]


def be32(b, o):
    return struct.unpack_from(">I", b, o)[0]


def be64(b, o):
    return struct.unpack_from(">Q", b, o)[0]


# ---------------------------------------------------------------- pcap

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


def _tcp(path, partial=False, whole=False):
    """(ts, src, dst, TCP header and payload) of every IPv4/IPv6 TCP
    segment, without Ethernet padding."""
    for ts, linktype, pkt in _records(path, partial, whole):
        et, l3 = _network(linktype, pkt)
        if et == 0x0800 and len(l3) >= 20 and l3[0] >> 4 == 4:
            if l3[9] != 6:
                continue
            ihl = (l3[0] & 0xF) * 4
            tot = struct.unpack(">H", l3[2:4])[0]
            yield ts, l3[12:16], l3[16:20], l3[ihl:tot]
        elif et == 0x86DD and len(l3) >= 40:
            if l3[6] != 6:
                continue
            plen = struct.unpack(">H", l3[4:6])[0]
            yield ts, l3[8:24], l3[24:40], l3[40:40 + plen]


def packets(path, partial=False, whole=False):
    """Yield (ts, src, sport, dst, dport, seq, flags, payload) of every
    IPv4/IPv6 TCP segment; src and dst are the raw address bytes. Raises
    ValueError for pcapng or an unsupported link type. partial, whole:
    see _records."""
    for ts, src, dst, tcp in _tcp(path, partial, whole):
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        doff = (tcp[12] >> 4) * 4
        yield ts, src, sport, dst, dport, seq, tcp[13], bytes(tcp[doff:])


def _tcp_options(tcp):
    """{kind: value bytes} of the options of a TCP header (those with a
    length field; NOP skipped, parsing ends at EOL or a bad length)."""
    out, opts, i = {}, tcp[20:(tcp[12] >> 4) * 4], 0
    while i < len(opts) and opts[i] != 0:
        if opts[i] == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        out[opts[i]] = bytes(opts[i + 2:i + opts[i + 1]])
        i += opts[i + 1]
    return out


def syn_mss(path):
    """{(src, sport, dst, dport): the MSS the other side's SYN announced},
    the bound of what that direction sends in one segment (src, dst: raw
    address bytes, as flows() keys them)."""
    out = {}
    for _, src, dst, tcp in _tcp(path):
        if len(tcp) < 20 or not tcp[13] & 0x02:
            continue
        sport, dport = struct.unpack(">HH", tcp[:4])
        mss = _tcp_options(tcp).get(2)
        if mss is not None and len(mss) == 2:
            out[(dst, dport, src, sport)] = struct.unpack(">H", mss)[0]
    return out


def window_cuts(path):
    """{(src, sport, dst, dport): set of sequence numbers} of the data
    segments of each direction that ended exactly at the right edge of
    the receive window the other direction last advertised (its ACK plus
    its window, scaled when both SYNs carried the option): where TCP cut
    a packet because the window, not the sender, set its end."""
    wscale, edge, cuts = {}, {}, {}
    for _, src, dst, tcp in _tcp(path):
        if len(tcp) < 20:
            continue
        sport, dport, seq, ack = struct.unpack(">HHII", tcp[:12])
        flags, win = tcp[13], struct.unpack(">H", tcp[14:16])[0]
        key, doff = (src, sport, dst, dport), (tcp[12] >> 4) * 4
        back = (dst, dport, src, sport)
        if flags & 0x02:
            ws = _tcp_options(tcp).get(3)
            wscale[key] = ws[0] if ws is not None and len(ws) == 1 else None
            continue
        n = len(tcp) - doff
        if n and back in edge and \
                (seq + n) & 0xFFFFFFFF == edge[back]:
            cuts.setdefault(key, set()).add(seq)
        if flags & 0x10:
            ws_me, ws_peer = wscale.get(key), wscale.get(back)
            shift = ws_me if ws_me is not None and ws_peer is not None \
                else 0
            edge[key] = (ack + (win << shift)) & 0xFFFFFFFF
    return cuts


def endpoint(addr, port):
    """'ADDR:PORT' of raw address bytes."""
    fam = socket.AF_INET if len(addr) == 4 else socket.AF_INET6
    return "%s:%d" % (socket.inet_ntop(fam, addr), port)


# ---------------------------------------------------------------- TCP

class Flow:
    """One direction of a TCP connection: t0 (its first packet: the
    timestamp, or read_frames()' frame number), isn (of its SYN, None
    when not seen), synack (its SYN carried an ACK: the direction of the
    side that accepted), segs [(seq, payload)], fin, rst."""

    def __init__(self, ts):
        self.t0 = ts
        self.isn = None
        self.synack = False
        self.segs = []
        self.fin = self.rst = False
        self._stream = None

    def stream(self):
        """Contiguous bytes from the start, by sequence number (the SYN's
        + 1, else the lowest seen); (bytes, gap?), gap: data after a hole
        is left out."""
        if self._stream is None:
            out, holes = self._assemble(False)
            self._stream = out, bool(holes)
        return self._stream

    def filled(self):
        """The bytes from the start like stream(), but on past holes:
        (bytes, [(offset, length)] of the holes, each filled with zeros)."""
        return self._assemble(True)

    def offset(self, seq):
        """Where sequence number seq is in stream(): from the SYN's + 1,
        else from the lowest seen (above 0x7FFFFFFF: before the start)."""
        base = (self.isn + 1) & 0xFFFFFFFF if self.isn is not None else \
            min(s for s, _ in self.segs)
        return (seq - base) & 0xFFFFFFFF

    def _assemble(self, fill):
        """(bytes, holes) by sequence number from the start; segments
        starting at the same offset: the first captured first. Without
        fill, the bytes end at the first hole."""
        out, holes = bytearray(), []
        if not self.segs:
            return b"", holes
        rel_segs = [(self.offset(s), d) for s, d in self.segs]
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
            fl.synack = bool(flags & 0x10)
        if flags & 0x01:
            fl.fin = True
        if flags & 0x04:
            fl.rst = True
        if payload:
            fl.segs.append((seq, payload))
    return out


def read_frames(path):
    """A tshark field dump (FRAMES.tsv) -> ({(sport, dport): Flow} of the
    directions that carry payload, [tshark Terminate rows], {dport: set of
    tshark RDMAP opcodes})

    Columns: frame number, tcp.srcport, tcp.dstport, tcp.seq, tcp.len,
    tcp.payload, then tshark's Terminate fields (layer, etype, code, M, D,
    R) and, optionally, its RDMAP opcode (column 12). The dump has no SYN:
    each direction starts at its lowest sequence number."""
    fl, terms, tops = {}, [], {}
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
                payload = bytes.fromhex(pl)
                if (sp, dp) not in fl:
                    fl[(sp, dp)] = Flow(c[0])
                fl[(sp, dp)].segs.append((seq, payload))

            def col(i):
                return c[i] if len(c) > i else ""
            if col(6):
                terms.append({"sport": sp, "dport": dp, "frame": c[0],
                              "layer": col(6), "etype": col(7), "code": col(8),
                              "m": col(9), "d": col(10), "r": col(11)})
            if col(12):     # keyed by the receiving port
                tops.setdefault(dp, set()).add(col(12))
    return fl, terms, tops


def connections(fl, port):
    """[(key, initiator Flow, responder Flow)] of the TCP connections to
    PORT (key: the initiator's (src, sport, dst, dport)), ordered by their
    first packet; refused attempts included (no payload). A direction
    that sent the SYN+ACK is the accepting side's: a connection from
    ephemeral port PORT to another listener is not one to PORT."""
    conns = []
    for key, f in fl.items():
        if key[3] != port or f.synack:
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


# ---------------------------------------------------------------- MPA

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


class Fpdu:
    """One FPDU of a stream: off (where its length field is), mpalen (its
    ULPDU_Length), ulpdu (the ULPDU's bytes, cut short when the stream
    ends first), wlen (bytes on the wire: length field, ULPDU, pad, CRC
    field, which is there even with CRC off), complete; covered (the bytes
    the CRC covers) and crc (the CRC field) of a complete one. ddp() adds
    the DDP/RDMAP header."""

    def __init__(self, b, off):
        self._b = b
        self.off = off
        self.mpalen = be16(b, off)
        self.wlen = W.fpdu_len(self.mpalen)
        start = off + W.MPA_HDR_SIZE
        self.ulpdu = b[start:start + self.mpalen]
        self.complete = off + self.wlen <= len(b)

    @property
    def covered(self):
        return self._b[self.off:self.off + self.wlen - W.MPA_CRC_SIZE]

    @property
    def crc(self):
        return self._b[self.off + self.wlen - W.MPA_CRC_SIZE:
                       self.off + self.wlen]


def frames(b, off=0):
    """The FPDU framing walk (markers off): an Fpdu for every length field
    from offset off on, the last one possibly incomplete; ends when fewer
    bytes than a length field are left."""
    while off + W.MPA_HDR_SIZE <= len(b):
        f = Fpdu(b, off)
        yield f
        off += f.wlen


def _shift(mask):
    """the bit number of the lowest bit of mask"""
    return (mask & -mask).bit_length() - 1


# the M, D and R bits of the Terminate control as one number (MDR)
_HDRCT_SHIFT = _shift(W.TERM_FLAG_R)


def ddp(f):
    """The DDP and RDMAP header of f.ulpdu into f: tagged, last, ddp_rsvd,
    dv; rv, rsvd_ulp, opcode; stag, to (tagged) or inval, qn, msn, mo
    (untagged), hdr and payload (the bytes after the DDP header) when the
    header is all there; rreq_size of a Read Request; flush (the
    flush_request() dict) of a Flush Request, awrite (the
    atomic_write_request() dict) of an Atomic Write Request, when the
    header is all there; layer, etype, code, hdrct (M, D, R as one
    number), term_m, term_d, term_r of a Terminate.
    f.kind is the RDMAP opcode, None when the headers are truncated (see
    f.problems). Returns f."""
    u = f.ulpdu
    f.problems = []
    f.kind = None
    if len(u) < W.DDP_CTRL_SIZE:
        f.problems.append("ULPDU of %d bytes" % len(u))
        return f
    b0, b1 = u[0], u[1]
    f.tagged = bool(b0 & W.DDP_FLAG_T)
    f.last = bool(b0 & W.DDP_FLAG_L)
    f.ddp_rsvd = (b0 & W.DDP_MASK_RSVD) >> W.DDP_RSVD_SHIFT
    f.dv = b0 & W.DDP_MASK_DV
    f.rv = (b1 & W.RDMAP_MASK_RV) >> W.RDMAP_RV_SHIFT
    f.rsvd_ulp = (b1 & W.RDMAP_MASK_RSVD) >> W.RDMAP_RSVD_SHIFT
    f.opcode = b1 & W.RDMAP_MASK_OPCODE
    f.hdr_size = W.DDP_TAGGED_HDR_SIZE if f.tagged else \
        W.DDP_UNTAGGED_HDR_SIZE
    if len(u) < f.hdr_size:
        f.problems.append("%s header truncated" %
                          ("tagged" if f.tagged else "untagged"))
        return f
    if f.tagged:
        f.stag, f.to = be32(u, W.DDP_OFF_STAG), be64(u, W.DDP_OFF_TO)
    else:
        f.inval, f.qn = be32(u, W.DDP_OFF_INVAL_STAG), be32(u, W.DDP_OFF_QN)
        f.msn, f.mo = be32(u, W.DDP_OFF_MSN), be32(u, W.DDP_OFF_MO)
    f.hdr, p = u[:f.hdr_size], u[f.hdr_size:]
    f.payload = p
    if not f.tagged and f.opcode == W.RDMAP_OP_READ_REQ and \
            len(p) >= W.RREQ_OFF_SIZE + 4:
        f.rreq_size = be32(p, W.RREQ_OFF_SIZE)
    if not f.tagged and f.opcode == W.RDMAP_OP_FLUSH_REQ and \
            len(p) >= W.RDMAP_FLUSH_REQ_SIZE:
        f.flush = flush_request(p)
    if not f.tagged and f.opcode == W.RDMAP_OP_ATOMIC_WRITE_REQ and \
            len(p) >= W.RDMAP_ATOMIC_WRITE_REQ_SIZE:
        f.awrite = atomic_write_request(p)
    if f.opcode == W.RDMAP_OP_TERMINATE and \
            len(p) >= W.RDMAP_TERM_CTRL_SIZE:
        le, fl = p[W.TERM_OFF_LAYER_ETYPE], p[W.TERM_OFF_FLAGS]
        f.layer, f.etype = le >> W.TERM_LAYER_SHIFT, le & W.TERM_ETYPE_MASK
        f.code = p[W.TERM_OFF_ECODE]
        f.hdrct = fl >> _HDRCT_SHIFT
        f.term_m = bool(fl & W.TERM_FLAG_M)
        f.term_d = bool(fl & W.TERM_FLAG_D)
        f.term_r = bool(fl & W.TERM_FLAG_R)
    f.kind = f.opcode
    return f


def parse_fpdus(b):
    """FPDUs of a stream after the MPA frame: list of dicts, the last one
    possibly incomplete (complete=0); ends at an FPDU with less than the
    2-byte DDP/RDMAP control of ULPDU. len: ULPDU length; plen: ULP
    payload after the DDP/RDMAP header; wlen: bytes on the wire (pad, CRC
    field included, present even with CRC off); t, l, dv: DDP
    tagged/last flags and version; rv, op: RDMAP version and opcode; stag,
    to (tagged) or qn, msn, mo (untagged); size: a Read Request's message
    size; layer, etype, code, hdrct: a Terminate's control field; crcfield
    (complete FPDUs only)."""
    out = []
    for f in frames(b):
        if len(f.ulpdu) < W.DDP_CTRL_SIZE:
            break
        ddp(f)
        d = {"len": f.mpalen, "t": int(f.tagged), "l": int(f.last),
             "dv": f.dv, "rv": f.rv, "op": f.opcode, "wlen": f.wlen,
             "complete": int(f.complete)}
        if f.kind is not None and f.tagged:
            d["stag"], d["to"] = f.stag, f.to
        elif f.kind is not None:
            d["qn"], d["msn"], d["mo"] = f.qn, f.msn, f.mo
        d["plen"] = max(f.mpalen - f.hdr_size, 0)
        if hasattr(f, "rreq_size"):
            d["size"] = f.rreq_size
        if hasattr(f, "flush"):
            d["flush"] = f.flush
        if hasattr(f, "awrite"):
            d["awrite"] = f.awrite
        if hasattr(f, "layer"):
            d["layer"], d["etype"], d["code"] = f.layer, f.etype, f.code
            d["hdrct"] = f.hdrct
        if f.complete:
            d["crcfield"] = be32(f.crc, 0)
        out.append(d)
    return out


def parse_direction(data, want_key):
    """The MPA frame at the start of data, then its complete FPDUs, each
    decoded by ddp(). Returns (parse_frame() dict, [Fpdu], problems)."""
    mpa, pos = parse_frame(data, want_key)
    if mpa is None:
        return None, [], ["stream does not start with %r" % want_key]
    probs, fpdus = [], []
    for f in frames(data, pos):
        if not f.complete:
            probs.append("FPDU at offset %d (ULPDU %d bytes) runs past the "
                         "capture (%d bytes)" % (f.off, f.mpalen, len(data)))
            break
        fpdus.append(ddp(f))
        pos = f.off + f.wlen
    else:
        if pos < len(data):     # a byte, but no length field
            probs.append("truncated FPDU at offset %d" % pos)
    return mpa, fpdus, probs


# ---------------------------------------------------------------- RDMAP

def atomic_request(p):
    """The RFC 7306 Atomic Request header at the start of p (52 bytes)."""
    w = be32(p, W.AREQ_OFF_AOPCODE)
    return {"rsvd": (w & W.AREQ_RSVD_MASK) >> _shift(W.AREQ_RSVD_MASK),
            "aop": w & W.AREQ_AOPCODE_MASK, "id": be32(p, W.AREQ_OFF_REQ_ID),
            "stag": be32(p, W.AREQ_OFF_STAG), "to": be64(p, W.AREQ_OFF_TO),
            "asdata": be64(p, W.AREQ_OFF_ADD_SWAP),
            "asmask": be64(p, W.AREQ_OFF_ADD_SWAP_MASK),
            "cdata": be64(p, W.AREQ_OFF_COMPARE),
            "cmask": be64(p, W.AREQ_OFF_COMPARE_MASK)}


def atomic_response(p):
    """The RFC 7306 Atomic Response header at the start of p (12 bytes):
    (Original Request Identifier, Original Remote Data Value)."""
    return be32(p, W.ARESP_OFF_REQ_ID), be64(p, W.ARESP_OFF_VALUE)


def opcode_name(op):
    """The name of RDMAP opcode op (masked with the opcode field's mask)
    as wire.h spells it (SIWX_RDMAP_OP_<NAME>), "OP_0xNN" for an opcode
    siwx does not know."""
    op &= W.RDMAP_MASK_OPCODE
    return W.OPCODE_NAMES.get(op, "OP_0x%02x" % op)


def flush_request(p):
    """The Flush Request header at the start of p (20 bytes after the
    untagged DDP header; Documentation/flush.md): stag, len, to, disp (the
    Disposition Flags word), p and g (its persistence and global
    visibility bits), sel (the selectivity field), rsvd (the reserved bits
    set, in place)."""
    disp = be32(p, W.FREQ_OFF_DISP)
    return {"stag": be32(p, W.FREQ_OFF_STAG), "len": be32(p, W.FREQ_OFF_LEN),
            "to": be64(p, W.FREQ_OFF_TO), "disp": disp,
            "p": _bit(disp, W.FLUSH_DISP_P), "g": _bit(disp, W.FLUSH_DISP_G),
            "sel": (disp & W.FLUSH_DISP_SEL_MASK) >> W.FLUSH_DISP_SEL_SHIFT,
            "rsvd": disp & W.FLUSH_DISP_RSVD}


def atomic_write_request(p):
    """The Atomic Write Request header at the start of p (24 bytes after
    the untagged DDP header): stag, len, to, data (the 8 data bytes as
    they are on the wire, which is how the responder stores them)."""
    return {"stag": be32(p, W.AWREQ_OFF_STAG), "len": be32(p, W.AWREQ_OFF_LEN),
            "to": be64(p, W.AWREQ_OFF_TO),
            "data": bytes(p[W.AWREQ_OFF_DATA:W.AWREQ_OFF_DATA +
                            W.ATOMIC_WRITE_SIZE])}


# ---------------------------------------------------------------- CRC32c

def _crc_table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ W.MPA_CRC32C_POLY if c & 1 else c >> 1
        t.append(c)
    return t


CRC_T = _crc_table()


def crc32c(b):
    """CRC32c (Castagnoli, reflected) as MPA and iSCSI use it."""
    c = W.MPA_CRC32C_INIT
    for x in b:
        c = CRC_T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ W.MPA_CRC32C_XOROUT


def check_crc(fpdus, crc_on):
    """(problems, notes) of the CRC fields of complete Fpdus: each must
    be the CRC32c of the FPDU (either byte order) when CRC is on; zero or
    valid when it is off."""
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
        elif got != bytes(W.MPA_CRC_SIZE) and \
                got not in (struct.pack("<I", want), struct.pack(">I", want)):
            probs.append("FPDU at %d: CRC not negotiated but field is %s" %
                         (f.off, got.hex()))
    if crc_on and order:
        notes.append("CRC32c valid on every FPDU (%s)" %
                     "/".join(sorted(order)))
    return probs, notes


# ---------------------------------------------------------------- decoders

def decode(path, port):
    """List of per-connection dicts for connections to TCP port PORT of a
    libpcap file: sport, req and rep (parse_frame() dicts or None),
    fpdus_i and fpdus_r (parse_fpdus() of each direction after the MPA
    frames, unless the Reply rejects), rtr (the initiator's first FPDU),
    term_i and term_r (the first Terminate each side sent); by sport."""
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
            fi, fr = parse_fpdus(ib[rl:]), parse_fpdus(rb[pl:])
            c["fpdus_i"], c["fpdus_r"] = fi, fr
            c["rtr"] = fi[0] if fi else None
            c["term_i"] = next((d for d in fi
                                if d["op"] == W.RDMAP_OP_TERMINATE), None)
            c["term_r"] = next((d for d in fr
                                if d["op"] == W.RDMAP_OP_TERMINATE), None)
        conns.append(c)
    conns.sort(key=lambda c: c["sport"])
    return conns


def decode_connection(fl, name, port, c):
    """The connection to server port PORT of read_frames()' flows, for
    the checkers: (problems, notes), each prefixed with NAME. Unless the
    dump holds other than one flow each way, c gets mpa_req and mpa_rsp
    (parse_frame() dicts or None), req and rsp ([Fpdu] requester ->
    responder and back); the CRC fields are checked."""
    probs, notes = [], []
    up = [f for k, f in fl.items() if k[1] == port]
    down = [f for k, f in fl.items() if k[0] == port]
    if len(up) != 1 or len(down) != 1:
        probs.append("%s (port %d): %d client->server and %d "
                     "server->client TCP flows captured" %
                     (name, port, len(up), len(down)))
        return probs, notes
    for dirn, f, key in (("req", up[0], KEY_REQ), ("rsp", down[0], KEY_REP)):
        data, holes = f.filled()
        probs += ["%s %s: gap of %d bytes at stream offset %d" %
                  (name, dirn, n, off) for off, n in holes]
        mpa, fp, pr = parse_direction(data, key)
        probs += ["%s %s: %s" % (name, dirn, p) for p in pr]
        c["mpa_" + dirn] = mpa
        c[dirn] = fp
        for g in fp:
            probs += ["%s %s FPDU at %d: %s" % (name, dirn, g.off, p)
                      for p in g.problems]
    if c["mpa_req"] and c["mpa_rsp"]:
        flags = c["mpa_req"]["flags"] | c["mpa_rsp"]["flags"]
        if flags & W.MPA_FLAG_M:
            probs.append("%s: MPA markers negotiated (not handled)" % name)
        crc_on = bool(flags & W.MPA_FLAG_C)
        pr, nt = check_crc(c["req"] + c["rsp"], crc_on)
        probs += ["%s: %s" % (name, p) for p in pr]
        notes.append("%s: MPA rev %d/%d, CRC %s, %d FPDUs requester->"
                     "responder, %d back" %
                     (name, c["mpa_req"]["rev"], c["mpa_rsp"]["rev"],
                      "on" if crc_on else "off", len(c["req"]),
                      len(c["rsp"])))
        notes += ["%s: %s" % (name, n) for n in nt]
    return probs, notes


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


# ---------------------------------------------------------------- CLI

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
