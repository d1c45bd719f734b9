#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
imm_wire.py - decode RFC 7306 Immediate Data from raw TCP payload bytes and
check it against what imm_peer posted. Called by imm_wire.sh; prints TAP.

    imm_wire.py FRAMES.tsv CASE:PORT:PEEROUT ...

FRAMES.tsv (tshark -T fields, tab separated): frame number, tcp.srcport,
tcp.dstport, tcp.seq (relative), tcp.len, tcp.payload (hex), then tshark's
own Terminate fields (layer, etype_ddp, errcode_ddp_untagged, M, D, R) and
its RDMAP opcode, used only as a cross-check. tshark 4.0 has no dissector
for RDMAP opcodes 0x8/0x9 (it shows "Unknown (0x8)"), so each TCP
direction is reassembled by sequence number and parsed here from the MPA
Request/Reply on (RFC 5044, markers off, CRC checked when negotiated),
FPDU by FPDU: DDP (RFC 5041), RDMAP (RFC 5040), Immediate Data (RFC 7306),
Terminate.

The TCP reassembly, MPA/DDP/RDMAP parsing, CRC check and TAP output
are those of selftests/lib/iwarp_capture.py, the wire numbers those of
include/siwx/wire.h (selftests/lib/siwx_wire.py).

Expected values (Documentation/rfc7306.md): Immediate Data is RDMAP opcode
0x8, 0x9 with Solicited Event; untagged, L set, QN 0, the next Send MSN,
MO 0, RDMAP and DDP version 1, Invalidate STag 0, exactly 8 bytes of data:
32 zero bits, then the verbs immediate in network order. A write with
immediate of length > 0 is its tagged RDMA Write message (opcode 0x0)
immediately followed by the Immediate Data message; a zero-length one is
the Immediate Data message alone. An Immediate Data message without a
receive is answered with a Terminate: DDP layer (1), untagged buffer error
(2), code 0x02 no buffer, with the M and D headers of the message.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import siwx_wire as W  # noqa: E402
from iwarp_capture import (TAP, be16, decode_connection,  # noqa: E402
                           read_frames)


def pattern(n, ln):
    return bytes(((n * 37 + i * 11) & 0xFF) for i in range(ln))


def read_peer(path):
    """imm_peer's lines -> dict of lists"""
    r = {"OP": [], "SCQ": [], "RECV": [], "QP": [], "ERROR": [], "CONN": [],
         "DONE": []}
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        r["ERROR"].append("cannot read %s: %s" % (path, e))
        return r
    for ln in lines:
        w = ln.split()
        if not w or w[0] not in r:
            continue
        if w[0] == "ERROR":
            r["ERROR"].append(ln)
            continue
        r[w[0]].append(dict(x.split("=", 1) for x in w[1:] if "=" in x))
    return r


def messages(fpdus):
    """Group FPDUs into messages: [(kind, [fpdus])] in order of their last
    segment (tagged: consecutive segments up to L; untagged: by QN/MSN)."""
    msgs, open_t, open_u = [], None, {}
    for f in fpdus:
        if f.kind is None:
            continue
        if f.tagged:
            if open_t is None:
                open_t = []
            open_t.append(f)
            if f.last:
                msgs.append((f.kind, open_t))
                open_t = None
        else:
            k = (f.qn, f.msn)
            open_u.setdefault(k, []).append(f)
            if f.last:
                msgs.append((f.kind, open_u.pop(k)))
    return msgs


def _kind_name(name):
    """The header's name as imm_wire prints it: SEND_SE_INV -> SendInv+SE"""
    w = name.split("_")
    return "".join(x.capitalize() for x in w if x != "SE") + \
        ("+SE" if "SE" in w else "")


KIND_NAMES = {op: _kind_name(n) for op, n in W.OPCODE_NAMES.items()}
IMM_OPS = (W.RDMAP_OP_IMM, W.RDMAP_OP_IMM_SE)
SEND_OPS = (W.RDMAP_OP_SEND, W.RDMAP_OP_SEND_SE)
# the ULPDU of an Immediate Data message: untagged header, 8 bytes
IMM_ULPDU = W.DDP_UNTAGGED_HDR_SIZE + W.RDMAP_IMM_SIZE
# the Terminate of an Immediate Data message without a receive
NO_BUFFER = (W.TERM_LAYER_DDP, W.DDP_ETYPE_UNTAGGED_BUF,
             W.DDP_ECODE_UT_INVALID_MSN_NOBUF)


def kname(k):
    return KIND_NAMES.get(k, "0x%x" % k)


def main():
    tap = TAP("imm_wire", 15)
    frames, conns = sys.argv[1], sys.argv[2:]
    flows, tterms, tops = read_frames(frames)
    C = {}
    dprobs, dnotes = [], []
    for spec in conns:
        name, port, out = spec.split(":", 2)
        port = int(port)
        peer = read_peer(out)
        c = {"name": name, "port": port, "peer": peer, "req": [], "rsp": []}
        C[name] = c
        for e in peer["ERROR"]:
            dnotes.append("%s: peer: %s" % (name, e))
        if not peer["CONN"]:
            dprobs.append("%s: imm_peer did not connect (see its output)" % name)
        pr, nt = decode_connection(flows, name, port, c)
        dprobs += pr
        dnotes += nt
        if "mpa_req" not in c:          # not one flow each way
            continue
        if c["mpa_req"] and c["mpa_rsp"]:
            c["msgs"] = messages(c["req"])
            dnotes.append("%s: requester messages: %s" %
                          (name, " ".join(kname(k) for k, _ in c["msgs"])))
        if port in tops:
            dnotes.append("%s: tshark's RDMAP opcodes (first per frame) from "
                          "the requester: %s (it has no name for 0x8/0x9)" %
                          (name, ",".join(sorted(tops[port]))))
    tap.result("capture_decoded", dprobs, dnotes)

    ops = C.get("ops")
    have_ops = ops is not None and "msgs" in ops
    posted = ops["peer"]["OP"] if ops else []
    wimms = [o for o in posted if o.get("kind") == "wimm"]

    def imm_fpdus(c):
        return [f for f in c["req"] if f.kind in IMM_OPS]

    # ---- headers of every Immediate Data message (both connections)
    probs, cnt = [], 0
    for c in C.values():
        for f in imm_fpdus(c):
            cnt += 1
            w = "%s Immediate Data at %d" % (c["name"], f.off)
            if f.tagged:
                probs.append(w + ": tagged")
                continue
            if f.rv != W.RDMAP_VERSION:
                probs.append(w + ": RDMAP version %d" % f.rv)
            if f.dv != W.DDP_VERSION:
                probs.append(w + ": DDP version %d" % f.dv)
            if not f.last:
                probs.append(w + ": L flag clear")
            if f.ddp_rsvd or f.rsvd_ulp:
                probs.append(w + ": reserved bits set (DDP 0x%x, RDMAP 0x%x)" %
                             (f.ddp_rsvd, f.rsvd_ulp))
            if f.qn != W.DDP_QN_SEND:
                probs.append(w + ": QN %d, want %d" % (f.qn, W.DDP_QN_SEND))
            if f.mo != 0:
                probs.append(w + ": MO %d, want 0" % f.mo)
            if f.inval != 0:
                probs.append(w + ": Invalidate STag 0x%08x, want 0" % f.inval)
            if len(f.payload) != W.RDMAP_IMM_SIZE:
                probs.append(w + ": %d bytes of data, want exactly %d" %
                             (len(f.payload), W.RDMAP_IMM_SIZE))
            if f.mpalen != IMM_ULPDU:
                probs.append(w + ": ULPDU length %d, want %d" %
                             (f.mpalen, IMM_ULPDU))
    if cnt == 0:
        probs.append("no Immediate Data message (RDMAP opcode 0x%x/0x%x) on "
                     "the wire" % IMM_OPS)
    tap.result("imm_headers", probs, ["%d Immediate Data messages" % cnt])

    # ---- payload: 32 zero bits + the verbs immediate, in posted order
    probs, notes = [], []
    if not have_ops:
        probs.append("no decoded 'ops' connection")
    else:
        wire = [f for f in imm_fpdus(ops)
                if len(f.payload) == W.RDMAP_IMM_SIZE]
        if len(wire) != len(wimms):
            probs.append("%d writes with immediate posted, %d Immediate Data "
                         "messages" % (len(wimms), len(wire)))
        for o, f in zip(wimms, wire):
            want = struct.pack(">II", 0, int(o["imm"], 16))
            notes.append("op %s: Immediate Data %s (verbs imm 0x%s)" %
                         (o["n"], f.payload.hex(), o["imm"]))
            if f.payload != want:
                probs.append("op %s: Immediate Data %s, want %s" %
                             (o["n"], f.payload.hex(), want.hex()))
    tap.result("imm_payload", probs, notes)

    # ---- opcode 0x9 exactly for the solicited ones
    probs = []
    if have_ops:
        wire = imm_fpdus(ops)
        for o, f in zip(wimms, wire):
            want = W.RDMAP_OP_IMM_SE if o.get("se") == "1" else W.RDMAP_OP_IMM
            if f.kind != want:
                probs.append("op %s (%ssolicited): RDMAP opcode 0x%x, want 0x%x" %
                             (o["n"], "" if o.get("se") == "1" else "not ",
                              f.kind, want))
        if not any(o.get("se") == "1" for o in wimms):
            probs.append("no solicited write with immediate was posted")
    else:
        probs.append("no decoded 'ops' connection")
    tap.result("imm_opcode_se", probs)

    # ---- QN 0: Sends and Immediate Data share the MSN sequence
    probs, notes = [], []
    if have_ops:
        q0 = [(k, fl) for k, fl in ops["msgs"]
              if not fl[0].tagged and fl[0].qn == W.DDP_QN_SEND]
        kinds = "".join("I" if k in IMM_OPS else "S" if k in SEND_OPS else "?"
                        for k, _ in q0)
        want = "".join("I" if o["kind"] == "wimm" else "S"
                       for o in posted if o["kind"] in ("send", "wimm"))
        msns = [fl[0].msn for _, fl in q0]
        notes.append("queue 0 carries %s, MSNs %s" % (kinds, msns))
        if kinds != want:
            probs.append("queue 0 carries %s, posted %s" % (kinds, want))
        if msns != list(range(W.DDP_MSN_FIRST, W.DDP_MSN_FIRST + len(msns))):
            probs.append("queue 0 MSNs %s, want 1..%d" % (msns, len(msns)))
        for k, fl in q0:
            if any(f.msn != fl[0].msn for f in fl):
                probs.append("a message with several MSNs")
        # Send opcodes: 0x5 exactly for the solicited ones
        sends = [o for o in posted if o["kind"] == "send"]
        wsends = [k for k, _ in q0 if k in SEND_OPS]
        for o, k in zip(sends, wsends):
            if k != (W.RDMAP_OP_SEND_SE if o.get("se") == "1" else
                     W.RDMAP_OP_SEND):
                probs.append("op %s: Send opcode 0x%x" % (o["n"], k))
    else:
        probs.append("no decoded 'ops' connection")
    tap.result("qn0_msn_shared_with_send", probs, notes)

    # ---- the message sequence: Write right before its Immediate Data
    probs, notes = [], []
    if have_ops:
        want = []
        for o in posted:
            n, ln = int(o["n"]), int(o["len"])
            if o["kind"] == "send":
                want.append(("Send", n, o))
            elif o["kind"] == "write":
                want.append(("Write", n, o))
            elif o["kind"] == "wimm":
                if ln > 0:
                    want.append(("Write", n, o))
                want.append(("Imm", n, o))
        got = ops["msgs"]
        gk = ["Write" if k == W.RDMAP_OP_WRITE else "Imm" if k in IMM_OPS else
              "Send" if k in SEND_OPS else kname(k) for k, _ in got]
        wk = [w[0] for w in want]
        notes.append("wire: %s" % " ".join(gk))
        if gk != wk:
            probs.append("message sequence %s, want %s" % (" ".join(gk), " ".join(wk)))
        for (wkind, n, o), (k, fl) in zip(want, got):
            if wkind != "Write" or k != W.RDMAP_OP_WRITE:
                continue
            ln = int(o["len"])
            stag, to = int(o["rkey"], 16), int(o["raddr"], 16)
            data = b"".join(f.payload for f in fl)
            if len(data) != ln:
                probs.append("op %s: Write of %d bytes, posted %d" % (n, len(data), ln))
            off = 0
            for f in fl:
                if f.stag != stag or f.to != to + off:
                    probs.append("op %s: segment STag 0x%08x TO 0x%x, want 0x%08x 0x%x"
                                 % (n, f.stag, f.to, stag, to + off))
                if f.rv != W.RDMAP_VERSION or f.dv != W.DDP_VERSION:
                    probs.append("op %s: versions RDMAP %d DDP %d" % (n, f.rv, f.dv))
                off += len(f.payload)
            if not fl[-1].last or any(f.last for f in fl[:-1]):
                probs.append("op %s: L flag not on the last segment only" % n)
            if data != pattern(n, ln):
                probs.append("op %s: Write data differs from the posted pattern" % n)
            notes.append("op %s (%s, %d bytes): tagged Write in %d FPDU(s), STag "
                         "0x%08x TO 0x%x" % (n, o["kind"], ln, len(fl), stag, to))
        zl = [o for o in wimms if int(o["len"]) == 0]
        if not zl:
            probs.append("no zero-length write with immediate was posted")
    else:
        probs.append("no decoded 'ops' connection")
    tap.result("write_before_imm", probs, notes)

    # ---- what the receiver reported (byte_len rule of rfc7306.md)
    probs, notes = [], []
    if ops:
        recvs = ops["peer"]["RECV"]
        scq = ops["peer"]["SCQ"]
        bad = [s for s in scq if s.get("status") != "success"]
        if len(scq) != len(posted) or bad:
            probs.append("sender: %d completions for %d posts, %d not successful"
                         % (len(scq), len(posted), len(bad)))
        cons = [o for o in posted if o["kind"] in ("send", "wimm")]
        if len(recvs) != len(cons):
            probs.append("%d receive completions for %d Sends/writes with "
                         "immediate" % (len(recvs), len(cons)))
        prev = None
        blen = {}
        for o in posted:
            ln = int(o["len"])
            if o["kind"] == "wimm":
                blen[o["n"]] = ln if ln else (int(prev["len"]) if prev and
                                             prev["kind"] == "write" else 0)
            prev = o
        for o, r in zip(cons, recvs):
            w = "op %s (%s %s)" % (o["n"], o["kind"], o["len"])
            if r.get("status") != "success":
                probs.append("%s: status %s" % (w, r.get("status")))
            flags = int(r.get("flags", "0"), 16)
            if o["kind"] == "send":
                if r.get("opcode") != "RECV" or flags & 2 or int(r["len"]) != int(o["len"]):
                    probs.append("%s: %s" % (w, r))
            else:
                if r.get("opcode") != "RECV_RDMA_WITH_IMM" or not flags & 2:
                    probs.append("%s: opcode %s flags 0x%x" % (w, r.get("opcode"), flags))
                if r.get("imm") != o["imm"]:
                    probs.append("%s: imm %s, posted %s" % (w, r.get("imm"), o["imm"]))
                if int(r["len"]) != blen[o["n"]]:
                    probs.append("%s: byte_len %s, want %d" % (w, r["len"], blen[o["n"]]))
                notes.append("%s: imm %s byte_len %s" % (w, r.get("imm"), r.get("len")))
    else:
        probs.append("no 'ops' case")
    tap.result("receiver_completions", probs, notes)

    # ---- Terminate for the Immediate Data without a receive
    c = C.get("norecv")
    probs, notes = [], []
    if not c or not c.get("mpa_rsp"):
        probs.append("no decoded 'norecv' connection")
    else:
        imms = [f for f in imm_fpdus(c)]
        imm = imms[0] if imms else None
        if imm is None:
            probs.append("the Immediate Data message is not on the wire")
        elif imm.payload != struct.pack(">II", 0, 0xfeedf00d):
            probs.append("Immediate Data %s" % imm.payload.hex())
        terms = [f for f in c["rsp"] if f.kind == W.RDMAP_OP_TERMINATE]
        if any(f.kind == W.RDMAP_OP_TERMINATE for f in c["req"]):
            notes.append("the requester sent a Terminate too")
        if any(f.kind == W.RDMAP_OP_READ_RESP for f in c["rsp"]):
            probs.append("the responder served the Read behind the refused message")
        if not terms:
            probs.append("the responder sent no Terminate")
        else:
            t = terms[0]
            p = t.payload
            if t.tagged or t.qn != W.DDP_QN_TERMINATE or \
                    t.rv != W.RDMAP_VERSION or not t.last or t.mo != 0:
                probs.append("Terminate header: tagged %s QN %s RV %s L %s MO %s" %
                             (t.tagged, getattr(t, "qn", "?"), t.rv, t.last,
                              getattr(t, "mo", "?")))
            elif t.msn != W.DDP_MSN_FIRST:
                probs.append("Terminate MSN %d, want %d (first on queue %d)" %
                             (t.msn, W.DDP_MSN_FIRST, W.DDP_QN_TERMINATE))
            if len(p) < W.RDMAP_TERM_CTRL_SIZE:
                probs.append("Terminate of %d bytes" % len(p))
            else:
                layer, etype, code = t.layer, t.etype, t.code
                fm, fd, fr = t.term_m, t.term_d, t.term_r
                ctl = W.RDMAP_TERM_CTRL_SIZE
                notes.append("Terminate control %s: layer %d etype %d code 0x%02x "
                             "M%d D%d R%d, %d bytes attached" %
                             (p[:ctl].hex(), layer, etype, code, fm, fd, fr,
                              len(p) - ctl))
                if (layer, etype, code) != NO_BUFFER:
                    probs.append("layer/etype/code %d/%d/0x%02x, want "
                                 "%d/%d/0x%02x (DDP / untagged buffer / no "
                                 "buffer available)" %
                                 ((layer, etype, code) + NO_BUFFER))
                if (fm, fd, fr) != (True, True, False):
                    probs.append("header flags M%d D%d R%d, want M1 D1 R0" % (fm, fd, fr))
                att = p[ctl:]
                if imm is not None and fm and fd:
                    # RFC 5040 4.8: the length of the terminated DDP
                    # Segment: its ULPDU length (26). Upstream siw reports
                    # the length after the RDMAP header instead, which is
                    # 8 here; anything else is wrong either way.
                    seglen = be16(att, 0) if len(att) >= W.TERM_SEGLEN_SIZE \
                        else None
                    if seglen not in (imm.mpalen, len(imm.payload)):
                        probs.append("attached DDP segment length %s, want %d "
                                     "(the segment's ULPDU length) or %d (its "
                                     "data after the headers)" %
                                     (seglen, imm.mpalen, len(imm.payload)))
                    else:
                        notes.append("attached DDP segment length %d" % seglen)
                    hdr = att[W.TERM_SEGLEN_SIZE:
                              W.TERM_SEGLEN_SIZE + W.DDP_UNTAGGED_HDR_SIZE]
                    if hdr != imm.hdr:
                        probs.append("attached DDP header %s, the message's %s" %
                                     (hdr.hex(), imm.hdr.hex()))
                    else:
                        notes.append("attached DDP header is the Immediate Data's "
                                     "(MSN %d)" % imm.msn)
        for s in c["peer"]["SCQ"]:
            notes.append("sender wr %s: %s" % (s.get("wr"), s.get("status")))
        for q in c["peer"]["QP"]:
            notes.append("QP states: client %s server %s" % (q.get("client"),
                                                             q.get("server")))
            if q.get("server") != "ERR" or q.get("client") != "ERR":
                probs.append("QPs not in error: %s" % q)
        for r in c["peer"]["RECV"]:
            if r.get("status") == "success":
                probs.append("the receiver completed a receive: %s" % r)
        # The Read behind it: the imm suite checks its completion; here
        # only that it did not succeed (it may never have reached the
        # wire when the Terminate overtook the post).
        scq = c["peer"]["SCQ"]
        if len(scq) < 2:
            notes.append("sender: %d of 2 completions (the Read did not "
                         "complete)" % len(scq))
        elif scq[1].get("status") == "success":
            probs.append("the Read behind the refused message succeeded")
        if scq and scq[0].get("status") != "success":
            notes.append("the write with immediate itself completed %s" %
                         scq[0].get("status"))
    tap.result("term_no_receive", probs, notes)

    # ---- tshark's reading of the same Terminate
    probs, notes = [], []
    if not c:
        probs.append("no 'norecv' case")
    else:
        rows = [r for r in tterms if r["sport"] == c["port"]]
        if not rows:
            probs.append("tshark decoded no Terminate from the responder")
        else:
            r = rows[0]

            def num(x):
                try:
                    return int(x, 0)
                except ValueError:
                    return {"True": 1, "False": 0}.get(x)
            notes.append("tshark: layer %s etype_ddp %s errcode_ddp_untagged %s "
                         "M %s D %s R %s" % (r["layer"], r["etype"], r["code"],
                                             r["m"], r["d"], r["r"]))
            if (num(r["layer"]), num(r["etype"]), num(r["code"])) != NO_BUFFER:
                probs.append("tshark reads layer/etype/code %s/%s/%s, want "
                             "%d/%d/%d" %
                             ((r["layer"], r["etype"], r["code"]) + NO_BUFFER))
            if num(r["m"]) != 1 or num(r["d"]) != 1:
                probs.append("tshark reads M %s D %s" % (r["m"], r["d"]))
    tap.result("term_no_receive_tshark", probs, notes)

    print("TAP version 13")
    print("1..%d" % tap.n)
    print("\n".join(tap.lines))
    return 1 if tap.fails else 0


if __name__ == "__main__":
    sys.exit(main())
