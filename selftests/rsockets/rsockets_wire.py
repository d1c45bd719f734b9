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
5041: T, L, version), RDMAP control (RFC 5040: version, opcode), with the
pcap, TCP, MPA and FPDU layers of ../lib/iwarp_capture.py. A hole in the
capture or an FPDU that does not parse fails the connection. (siw does not
always close the TCP connection before the capture ends, so a missing FIN
proves nothing; BYTES is what shows the transfer is all there.)

Prints "# ..." diagnostics and one line per PORT:
    RESULT PORT ok|fail SUMMARY
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import iwarp_capture as cap  # noqa: E402  (pcap, TCP, MPA and FPDU parsing)
import siwx_wire as W  # noqa: E402

# the header's opcode names in lower case, TERMINATE as "term"
OPS = {op: {"TERMINATE": "term"}.get(n, n.lower())
       for op, n in W.OPCODE_NAMES.items()}


def read_pcap(path):
    """{(src, sport, dst, dport): cap.Flow} of every IPv4 TCP
    direction of the capture; a last record cut short counts with what
    there is of it, a packet cut by the snap length is an error"""
    fl = cap.flows(path, partial=True, whole=True)
    return {k: f for k, f in fl.items() if len(k[0]) == 4}


def parse(stream, key):
    """MPA frame, then FPDUs: (counts, problems)"""
    c = {"fpdus": 0, "send_len": {}, "tagged_bytes": 0, "imm_bad": 0}
    for n in OPS.values():
        c[n] = 0
    c["other"] = 0
    f, pos = cap.parse_frame(stream, key)
    if f is None:
        return c, ["stream does not start with %r" % key]
    if f["m"]:
        return c, ["MPA markers negotiated (not handled)"]
    if f["r"]:
        return c, ["MPA reject"]
    c["mpa"] = "rev %d, %sCRC" % (f["rev"], "" if f["c"] else "no ")
    for d in cap.parse_fpdus(stream[pos:]):
        ulen = d["len"]
        if ulen < W.DDP_TAGGED_HDR_SIZE or not d["complete"]:
            break
        if d["dv"] != W.DDP_VERSION or d["rv"] != W.RDMAP_VERSION:
            return c, ["FPDU at offset %d: DDP/RDMAP version %d/%d"
                       % (pos, d["dv"], d["rv"])]
        c["fpdus"] += 1
        name = OPS.get(d["op"], "other")
        c[name] += 1
        if d["t"]:
            c["tagged_bytes"] += ulen - W.DDP_TAGGED_HDR_SIZE
        elif name.startswith("send"):
            ln = ulen - W.DDP_UNTAGGED_HDR_SIZE
            c["send_len"][ln] = c["send_len"].get(ln, 0) + 1
        elif name.startswith("imm"):
            if ulen - W.DDP_UNTAGGED_HDR_SIZE != W.RDMAP_IMM_SIZE or \
                    d.get("qn") != W.DDP_QN_SEND or not d["l"]:
                c["imm_bad"] += 1
        pos += d["wlen"]
    # stopped at an FPDU cut short or too short for its DDP/RDMAP header
    # (parse_fpdus() leaves out one without 2 bytes of ULPDU), or at a
    # stray byte
    if pos >= len(stream):
        return c, []
    if pos + W.MPA_HDR_SIZE > len(stream):
        return c, ["%d stray bytes at the end" % (len(stream) - pos)]
    return c, ["FPDU at offset %d: ULPDU length %d, %d bytes left"
               % (pos, cap.be16(stream, pos), len(stream) - pos)]


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
    for fl in mine.values():
        # the client may be bound to the server's port number too (rstream
        # -b): tell the directions apart by the MPA frame they start with
        stream, holes = fl.filled()
        if stream.startswith(W.KEY_REQ):
            role, key = "client->server", W.KEY_REQ
        else:
            role, key = "server->client", W.KEY_REP
        if role in dirs:
            probs.append("more than one connection on port %d" % port)
            continue
        probs += ["%s: %d bytes missing at stream offset %d (capture "
                  "incomplete)" % (role, n, off) for off, n in holes[:3]]
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
        conns = read_pcap(sys.argv[1])
    except (OSError, ValueError, struct.error) as e:
        conns = None
        err = str(e)
    rc = 0
    for arg in sys.argv[2:]:
        port, want, nbytes = (arg + "=0").split("=")[:3]
        port, nbytes = int(port), int(nbytes)
        if conns is None:
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
