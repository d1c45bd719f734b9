#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
rsockets_wire.py - which path did rsockets take? Counts the iWARP messages
of each captured connection from the raw bytes. Called by rsockets.sh.

    rsockets_wire.py PCAP PORT=PATH[=BYTES] ...

PCAP is a libpcap file (dumpcap -P) of lo, from before the connections
were set up until after they were closed; PATH is what the connection to
server port PORT must show:

  imm   the InfiniBand path: every rsockets message is an RDMA Write with
        Immediate, so both directions carry Immediate Data messages (RDMAP
        opcode 0x8/0x9, 8 bytes) and no Send at all;
  send  the iWARP fallback (RS_OPT_MSG_SEND): every rsockets message is a
        4-byte inline Send (opcode 0x3; after the RDMA Write of its data,
        if any), so both directions carry Sends, all of 4 bytes, and no
        Immediate Data message;
  any   one of the two, the same in both directions.

BYTES: each direction must carry at least that many bytes of RDMA Write
payload (rsockets moves all its data with RDMA Writes): the capture holds
the whole transfer.

Each TCP direction is reassembled by sequence number and parsed from the
MPA Request/Reply on (RFC 5044: 2-byte ULPDU length, ULPDU, pad to 4
bytes, 4-byte CRC; markers are refused), FPDU by FPDU: DDP control (RFC
5041: T, L, version), RDMAP control (RFC 5040: version, opcode). A hole
in the capture or an FPDU that does not parse fails the connection. (siw
does not always close the TCP connection before the capture ends, so a
missing FIN proves nothing; BYTES is what shows the transfer is all there.)

Prints "# ..." diagnostics and one line per PORT:
    RESULT PORT ok|fail SUMMARY
"""
import struct
import sys

OPS = {0x0: "write", 0x1: "read_req", 0x2: "read_resp", 0x3: "send",
       0x4: "send_inv", 0x5: "send_se", 0x6: "send_se_inv", 0x7: "term",
       0x8: "imm", 0x9: "imm_se", 0xA: "atomic_req", 0xB: "atomic_resp"}


def read_pcap(path):
    """[(src, sport, dst, dport, seq, flags, payload)] of every TCP segment"""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError("%s: no pcap header" % path)
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        end = ">"
    else:
        raise ValueError("%s: not a libpcap file (magic %#x)" % (path, magic))
    linktype = struct.unpack_from(end + "I", data, 20)[0]
    segs = []
    pos = 24
    while pos + 16 <= len(data):
        _, _, incl, orig = struct.unpack_from(end + "IIII", data, pos)
        pkt = data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
        if incl < orig:
            raise ValueError("packet truncated by the snap length")
        if linktype == 1:		# Ethernet (lo included)
            off, etype = 14, struct.unpack_from(">H", pkt, 12)[0]
        elif linktype == 113:		# Linux cooked
            off, etype = 16, struct.unpack_from(">H", pkt, 14)[0]
        elif linktype == 276:		# Linux cooked v2
            off, etype = 20, struct.unpack_from(">H", pkt, 0)[0]
        else:
            raise ValueError("link type %d not handled" % linktype)
        if etype != 0x0800 or len(pkt) < off + 20:
            continue
        ip = pkt[off:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 6:
            continue
        tot = struct.unpack_from(">H", ip, 2)[0]
        src, dst = ip[12:16], ip[16:20]
        tcp = ip[ihl:tot]
        sport, dport, seq = struct.unpack_from(">HHI", tcp, 0)
        doff = (tcp[12] >> 4) * 4
        segs.append((src, sport, dst, dport, seq, tcp[13], bytes(tcp[doff:])))
    return segs


def reassemble(seglist):
    """stream bytes from the SYN (or first byte) on, list of holes"""
    syn = [s for s in seglist if s[0] & 0x02]
    base = ((syn[0][1] + 1) & 0xFFFFFFFF) if syn else \
        min(s[1] for s in seglist if s[2])
    out = bytearray()
    holes = []
    for _, seq, b in sorted(((f, (s - base) & 0xFFFFFFFF, b)
                             for f, s, b in seglist if b),
                            key=lambda x: x[1]):
        if seq > len(out):
            holes.append("%d bytes missing at stream offset %d" %
                         (seq - len(out), len(out)))
            out += b"\0" * (seq - len(out))
        if seq + len(b) > len(out):
            out += b[len(out) - seq:]
    return bytes(out), holes


def parse(stream, key):
    """MPA frame, then FPDUs: (counts, problems)"""
    c = {"fpdus": 0, "send_len": {}, "tagged_bytes": 0, "imm_bad": 0}
    for n in OPS.values():
        c[n] = 0
    c["other"] = 0
    probs = []
    if len(stream) < 20 or stream[:16] != key:
        return c, ["stream does not start with %r" % key]
    flags, rev, pdl = stream[16], stream[17], struct.unpack_from(">H", stream, 18)[0]
    if flags & 0x80:
        return c, ["MPA markers negotiated (not handled)"]
    if flags & 0x20:
        return c, ["MPA reject"]
    c["mpa"] = "rev %d, %sCRC" % (rev, "" if flags & 0x40 else "no ")
    pos = 20 + pdl
    while pos < len(stream):
        if pos + 2 > len(stream):
            probs.append("%d stray bytes at the end" % (len(stream) - pos))
            break
        ulen = struct.unpack_from(">H", stream, pos)[0]
        end = pos + ((2 + ulen + 3) & ~3) + 4
        if ulen < 14 or end > len(stream):
            probs.append("FPDU at offset %d: ULPDU length %d, %d bytes left"
                         % (pos, ulen, len(stream) - pos))
            break
        b0, b1 = stream[pos + 2], stream[pos + 3]
        if (b0 & 0x03) != 1 or (b1 >> 6) != 1:
            probs.append("FPDU at offset %d: DDP/RDMAP version %d/%d"
                         % (pos, b0 & 3, b1 >> 6))
            break
        op = b1 & 0x0F
        tagged = bool(b0 & 0x80)
        c["fpdus"] += 1
        name = OPS.get(op, "other")
        c[name] += 1
        if tagged:
            c["tagged_bytes"] += ulen - 14
        elif name.startswith("send"):
            ln = ulen - 18
            c["send_len"][ln] = c["send_len"].get(ln, 0) + 1
        elif name.startswith("imm"):
            qn = struct.unpack_from(">I", stream, pos + 8)[0]
            if ulen - 18 != 8 or qn != 0 or not b0 & 0x40:
                c["imm_bad"] += 1
        pos = end
    return c, probs


def summary(c):
    keep = ["fpdus", "write", "imm", "imm_se", "send", "send_se",
            "read_req", "read_resp", "term", "other"]
    s = " ".join("%s=%d" % (k, c[k]) for k in keep if c.get(k) or k in
                 ("fpdus", "write", "imm", "send"))
    if c["send_len"]:
        s += " send_lengths=" + ",".join(
            "%dB*%d" % kv for kv in sorted(c["send_len"].items()))
    return s + " tagged_bytes=%d" % c["tagged_bytes"]


def check(port, want, nbytes, conns):
    """problems of the connection on PORT, [] when it took the path WANT"""
    if want == "any":
        pi = check_path(port, "imm", nbytes, conns)
        ps = check_path(port, "send", nbytes, conns, quiet=True)
        if not pi or not ps:
            print("# port %d: took the %s path" % (port, "send" if pi else "IB"))
            return []
        return ["neither path consistently:"] + pi + ps
    return check_path(port, want, nbytes, conns)


def check_path(port, want, nbytes, conns, quiet=False):
    mine = {k: v for k, v in conns.items() if port in (k[1], k[3])}
    if not mine:
        return ["no TCP segment with port %d in the capture" % port]
    dirs = {}
    probs = []
    for k, segs in mine.items():
        # the client may be bound to the server's port number too (rstream
        # -b): tell the directions apart by the MPA frame they start with
        stream, holes = reassemble(segs)
        if stream.startswith(b"MPA ID Req Frame"):
            role, key = "client->server", b"MPA ID Req Frame"
        else:
            role, key = "server->client", b"MPA ID Rep Frame"
        if role in dirs:
            probs.append("more than one connection on port %d" % port)
            continue
        probs += ["%s: %s (capture incomplete)" % (role, h) for h in holes[:3]]
        c, p = parse(stream, key)
        probs += ["%s: %s" % (role, x) for x in p]
        if not quiet:
            print("# port %d %s: %d bytes, MPA %s: %s" %
                  (port, role, len(stream), c.get("mpa", "?"), summary(c)))
        dirs[role] = c
    for role in ("client->server", "server->client"):
        c = dirs.get(role)
        if c is None:
            probs.append("%s: direction not captured" % role)
            continue
        imm = c["imm"] + c["imm_se"]
        sends = c["send"] + c["send_se"] + c["send_inv"] + c["send_se_inv"]
        if c["tagged_bytes"] < nbytes:
            probs.append("%s: %d bytes of RDMA Write payload, less than the "
                         "%d the tools moved" % (role, c["tagged_bytes"],
                                                 nbytes))
        if c["term"]:
            probs.append("%s: %d Terminate message(s)" % (role, c["term"]))
        if want == "imm":
            if not imm:
                probs.append("%s: no Immediate Data message (IB path "
                             "expected)" % role)
            if sends:
                probs.append("%s: %d Send message(s) on the IB path" %
                             (role, sends))
            if c["imm_bad"]:
                probs.append("%s: %d malformed Immediate Data message(s)" %
                             (role, c["imm_bad"]))
        else:
            if imm:
                probs.append("%s: %d Immediate Data message(s) on the send "
                             "path" % (role, imm))
            if not sends:
                probs.append("%s: no Send message (send path expected)" % role)
            odd = sum(n for ln, n in c["send_len"].items() if ln != 4)
            if odd:
                probs.append("%s: %d Send(s) not of the 4 bytes of an "
                             "rsockets message" % (role, odd))
    return probs


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        segs = read_pcap(sys.argv[1])
    except (OSError, ValueError, struct.error) as e:
        segs = None
        err = str(e)
    conns = {}
    for src, sp, dst, dp, seq, fl, pl in segs or []:
        conns.setdefault((src, sp, dst, dp), []).append((fl, seq, pl))
    rc = 0
    for arg in sys.argv[2:]:
        port, want, nbytes = (arg + "=0").split("=")[:3]
        port, nbytes = int(port), int(nbytes)
        if segs is None:
            probs = ["cannot read the capture: %s" % err]
        else:
            probs = check(port, want, nbytes, conns)
        for p in probs[:12]:
            print("# port %d: %s" % (port, p))
        print("RESULT %d %s %s path" % (port, "fail" if probs else "ok",
                                        want))
        rc |= bool(probs)
    return rc


if __name__ == "__main__":
    sys.exit(main())
