#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
segments.py - how siw hands its FPDUs to TCP, from a capture of the
traffic (libpcap, full packets) of the iWARP connections to PORT:

    segments.py CAPTURE PORT

Every TCP segment (as captured: on veth, a packet TCP built up to its GSO
size and not yet cut into segments counts as one) that carries FPDU bytes
after the MPA Request/Reply is classified by where it starts in its
direction's byte stream:
  aligned   at the first byte of an FPDU (RFC 5044, section 8: FPDUs
            aligned with TCP segments);
  trailer   not aligned, and it holds nothing but the end of one FPDU,
            at most the pad and the CRC field (8 bytes): a packet sent
            for the trailer alone, which siw's zero-copy transmit did
            after the payload of every FPDU before patch 0065;
  window    not aligned, and it continues a packet TCP cut at the right
            edge of the peer's receive window: with TCP_NODELAY, TCP
            sends what the window takes of a packet of several FPDUs,
            inside an FPDU if the window ends there, and the segments cut
            from the rest start inside FPDUs up to the packet's end (a
            receiver too slow to keep its window open; the cut is seen
            by the segment ending at the edge the last ACK advertised);
  other     not aligned otherwise (TCP split an FPDU: it ran out of send
            space in the middle of one, or retransmitted part of it).
Prints one "segments" line per direction with FPDUs and a total:

    segments dir=DIR fpdus=N segs=N aligned=N trailer=N other=N
             window=N gso=N max=N
    total fpdus=N segs=N aligned=N trailer=N other=N window=N gso=N
          max=N

gso: packets longer than the MSS the peer's SYN announced (1460 when not
seen); max: the longest. Exit status 0 when the capture has at least
one MPA connection to PORT with complete FPDUs, 1 otherwise (2 on usage
errors). Judging the counts is the caller's (perftest_smoke.sh).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import iwarp_capture as C  # noqa: E402

TRAILER_MAX = 3 + C.W.MPA_CRC_SIZE  # pad (0-3) and the CRC field
DEFAULT_MSS = 1460


def classify(flow, key, mss, cuts):
    """(fpdus, counts dict) of one direction, None when it has no MPA
    frame or FPDUs; mss: what the peer announced; cuts: the sequence
    numbers of its segments that ended at the peer's window edge."""
    data, _ = flow.stream()
    mpa, pos = C.parse_frame(data, key)
    if mpa is None:
        return None
    starts, ends = set(), set()
    for f in C.frames(data, pos):
        if not f.complete:
            break
        starts.add(f.off)
        ends.add(f.off + f.wlen)
    if not starts:
        return None
    c = {"segs": 0, "aligned": 0, "trailer": 0, "other": 0, "window": 0,
         "gso": 0, "max": 0}
    run_end = None      # where the last cut, or what followed it, ended
    last = max(ends)
    for seq, payload in flow.segs:
        rel = flow.offset(seq)
        if rel > 0x7FFFFFFF or rel < pos:
            continue        # before the stream, or the MPA frame
        end = rel + len(payload)
        if end > last:
            continue        # after the last complete FPDU
        c["segs"] += 1
        c["max"] = max(c["max"], len(payload))
        if len(payload) > mss:
            c["gso"] += 1
        cont = rel == run_end
        run_end = None
        if rel in starts:
            c["aligned"] += 1
        elif end in ends and len(payload) <= TRAILER_MAX:
            c["trailer"] += 1
        elif cont:
            c["window"] += 1
            run_end = end
        else:
            c["other"] += 1
        if seq in cuts:
            run_end = end
    return len(starts), c


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    path, port = argv[1], int(argv[2])
    fl = C.flows(path, whole=True)
    mss = C.syn_mss(path)
    cuts = C.window_cuts(path)
    tot = {"fpdus": 0, "segs": 0, "aligned": 0, "trailer": 0, "other": 0,
           "window": 0, "gso": 0, "max": 0}
    for key, ini, rsp in C.mpa_connections(C.connections(fl, port)):
        src, sport, dst, dport = key
        for name, flow, k, dkey in (
                (C.endpoint(src, sport), ini, C.KEY_REQ, key),
                (C.endpoint(dst, dport), rsp, C.KEY_REP,
                 (dst, dport, src, sport))):
            r = classify(flow, k, mss.get(dkey, DEFAULT_MSS),
                         cuts.get(dkey, set()))
            if r is None:
                continue
            n, c = r
            print("segments dir=%s fpdus=%d segs=%d aligned=%d trailer=%d "
                  "other=%d window=%d gso=%d max=%d"
                  % (name, n, c["segs"], c["aligned"], c["trailer"],
                     c["other"], c["window"], c["gso"], c["max"]))
            tot["fpdus"] += n
            for x in ("segs", "aligned", "trailer", "other", "window", "gso"):
                tot[x] += c[x]
            tot["max"] = max(tot["max"], c["max"])
    print("total fpdus=%(fpdus)d segs=%(segs)d aligned=%(aligned)d "
          "trailer=%(trailer)d other=%(other)d window=%(window)d gso=%(gso)d "
          "max=%(max)d" % tot)
    return 0 if tot["fpdus"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
