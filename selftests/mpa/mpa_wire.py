#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
mpa_wire.py - decode the MPA connection setup of RFC 5044 / RFC 6581 from a
pcap file, without tshark (tshark 4.0 shows the RFC 6581 IRD/ORD word only
as raw private data bytes, and its startup costs seconds under TCG).

    mpa_wire.py CAPTURE.pcap PORT

prints one line per TCP connection to PORT (the rdma_cm listener):

    conn sport=S req=<frame> rep=<frame> rtr=<fpdu> term_i=<term> term_r=<term>

with <frame> = "rev=R flags=0xFF s=S c=C r=R pd_len=N ird=I ord=O a=A b=B
c_rtr=C d_rtr=D" (ird.. only when S is set and the private data holds the
4-byte word; "-" when the frame is absent), <fpdu> the first FPDU the
initiator sent after the Reply, as "op=OPCODE len=ULPDU_LEN qn=.. msn=..
size=.." (size only for a Read Request), and <term> the first Terminate
each side sent ("layer=L etype=E code=C" or "-"). Used as a module by
mpa_suite.py (decode()).

Pure logic: reads the pcap format (Ethernet or Linux cooked/loopback
link types, IPv4/IPv6, TCP), reassembles each direction by sequence
number, then parses MPA Request/Reply frames and FPDUs (markers off).
"""
import struct
import sys

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"


def _packets(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        e = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        e = ">"
    else:
        raise ValueError("not a pcap file")
    linktype = struct.unpack(e + "I", data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        off += 16
        pkt = data[off:off + incl]
        off += incl
        if linktype == 1:          # Ethernet
            if len(pkt) < 14:
                continue
            etype = struct.unpack(">H", pkt[12:14])[0]
            l3 = pkt[14:]
        elif linktype == 113:      # Linux cooked v1
            etype = struct.unpack(">H", pkt[14:16])[0]
            l3 = pkt[16:]
        elif linktype == 276:      # Linux cooked v2
            etype = struct.unpack(">H", pkt[0:2])[0]
            l3 = pkt[20:]
        elif linktype in (0, 101):  # null / raw IP
            l3 = pkt[4:] if linktype == 0 else pkt
            etype = 0x0800 if l3 and (l3[0] >> 4) == 4 else 0x86DD
        else:
            continue
        if etype == 0x0800 and len(l3) >= 20:
            ihl = (l3[0] & 0xF) * 4
            if l3[9] != 6:
                continue
            src, dst = l3[12:16], l3[16:20]
            tot = struct.unpack(">H", l3[2:4])[0]
            tcp = l3[ihl:tot]
        elif etype == 0x86DD and len(l3) >= 40:
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
        flags = tcp[13]
        yield (src, sport, dst, dport, seq, flags, tcp[doff:])


def _streams(path):
    """{(src,sport,dst,dport): bytes} reassembled by sequence number."""
    segs, isn = {}, {}
    for src, sport, dst, dport, seq, flags, payload in _packets(path):
        k = (src, sport, dst, dport)
        if flags & 0x02:           # SYN: data starts at seq + 1
            isn[k] = (seq + 1) & 0xFFFFFFFF
        if payload:
            segs.setdefault(k, {})
            segs[k].setdefault(seq, payload)
    out = {}
    for k, d in segs.items():
        base = isn.get(k, min(d))
        buf = bytearray()
        for seq in sorted(d, key=lambda s: (s - base) & 0xFFFFFFFF):
            rel = (seq - base) & 0xFFFFFFFF
            p = d[seq]
            if rel > len(buf):
                break              # hole: stop at what is contiguous
            buf += p[len(buf) - rel:]
        out[k] = bytes(buf)
    return out


def parse_frame(b, key):
    """MPA Request/Reply at the start of b: (dict, length) or (None, 0)."""
    if len(b) < 20 or b[:16] != key:
        return None, 0
    flags, rev, pd_len = b[16], b[17], struct.unpack(">H", b[18:20])[0]
    f = {"rev": rev, "flags": flags, "m": flags >> 7 & 1, "c": flags >> 6 & 1,
         "r": flags >> 5 & 1, "s": flags >> 4 & 1, "pd_len": pd_len}
    pd = b[20:20 + pd_len]
    if f["s"] and len(pd) >= 4:
        wi, wo = struct.unpack(">HH", pd[:4])
        f.update(ird=wi & 0x3FFF, ord=wo & 0x3FFF, a=wi >> 15 & 1,
                 b=wi >> 14 & 1, c_rtr=wo >> 15 & 1, d_rtr=wo >> 14 & 1)
    return f, 20 + pd_len


def parse_fpdus(b, crc):
    """FPDUs of a stream after the MPA frame: list of dicts."""
    out, off = [], 0
    while off + 2 <= len(b):
        ulen = struct.unpack(">H", b[off:off + 2])[0]
        total = 2 + ulen
        total += (-total) & 3
        total += 4                 # CRC field, present even with CRC off
        u = b[off + 2:off + 2 + ulen]
        if len(u) < 2:
            break
        ddp, rdmap = u[0], u[1]
        d = {"len": ulen, "t": ddp >> 7 & 1, "l": ddp >> 6 & 1,
             "op": rdmap & 0xF}
        if d["t"]:
            if len(u) >= 14:
                d["stag"], d["to"] = struct.unpack(">IQ", u[2:14])
        elif len(u) >= 18:
            d["qn"], d["msn"], d["mo"] = struct.unpack(">III", u[6:18])
            if d["op"] == 0x1 and len(u) >= 46:
                d["size"] = struct.unpack(">I", u[30:34])[0]
            if d["op"] == 0x7 and len(u) >= 22:
                d["layer"] = u[18] >> 4
                d["etype"] = u[18] & 0xF
                d["code"] = u[19]
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
    st = _streams(path)
    conns = []
    for (src, sport, dst, dport), ib in st.items():
        if dport != port:
            continue
        rb = st.get((dst, dport, src, sport), b"")
        req, rl = parse_frame(ib, KEY_REQ)
        rep, pl = parse_frame(rb, KEY_REP)
        c = {"sport": sport, "req": req, "rep": rep, "rtr": None,
             "term_i": None, "term_r": None, "fpdus_i": [], "fpdus_r": []}
        if req and rep and not rep["r"]:
            fi = parse_fpdus(ib[rl:], rep["c"] or req["c"])
            fr = parse_fpdus(rb[pl:], rep["c"] or req["c"])
            c["fpdus_i"], c["fpdus_r"] = fi, fr
            c["rtr"] = fi[0] if fi else None
            c["term_i"] = next((d for d in fi if d["op"] == 7), None)
            c["term_r"] = next((d for d in fr if d["op"] == 7), None)
        conns.append(c)
    conns.sort(key=lambda c: c["sport"])
    return conns


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: mpa_wire.py CAPTURE.pcap PORT")
    for c in decode(sys.argv[1], int(sys.argv[2])):
        print("conn sport=%d req=[%s] rep=[%s] rtr=[%s] term_i=[%s] "
              "term_r=[%s]" % (c["sport"], _fmt_frame(c["req"]),
                               _fmt_frame(c["rep"]), _fmt_fpdu(c["rtr"]),
                               _fmt_term(c["term_i"]),
                               _fmt_term(c["term_r"])))


if __name__ == "__main__":
    main()
