#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
atomic_wire.py - decode RFC 7306 atomics from raw TCP payload bytes and
check them against what atomic_peer posted. Called by atomic_wire.sh;
prints TAP.

    atomic_wire.py FRAMES.tsv CASE:PORT:PEEROUT ...

FRAMES.tsv (tshark -T fields, tab separated): frame number, tcp.srcport,
tcp.dstport, tcp.seq (relative), tcp.len, tcp.payload (hex), then tshark's
own Terminate fields (layer, etype_rdma, errcode_rdma, M, D, R) used only
as a cross-check. Each TCP direction is reassembled by sequence number,
then parsed from the MPA Request/Reply on (RFC 5044, markers off; CRC
checked when negotiated), FPDU by FPDU: DDP (RFC 5041), RDMAP (RFC 5040),
Atomic Request/Response (RFC 7306), Terminate. Nothing here depends on
tshark's RDMAP dissector.

The TCP reassembly, MPA/DDP/RDMAP parsing, CRC check and TAP output
are those of selftests/lib/iwarp_capture.py, the wire numbers those of
include/siwx/wire.h (selftests/lib/siwx_wire.py).

The expected values come from the operands atomic_peer printed and an
independent model of the operations (RFC 7306 5.2):
  CmpSwap:  if (mem & cmask) == (cmp & cmask):
                mem = (mem & ~smask) | (swap & smask)
  FetchAdd: add with the carry out of bit i dropped where bit i of the
            boundary mask is set; unmasked = mask 0
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import siwx_wire as W  # noqa: E402
from iwarp_capture import (TAP, atomic_request,  # noqa: E402
                           atomic_response, be16, decode_connection,
                           read_frames)

M64 = (1 << 64) - 1


def model_fa(mem, add, m):
    # field by field: a field ends at each set bit of m (and at bit 63)
    res, lo = 0, 0
    for i in range(64):
        if (m >> i) & 1 or i == 63:
            width = i - lo + 1
            fm = ((1 << width) - 1) << lo
            res |= (((mem & fm) + (add & fm)) & fm)
            lo = i + 1
    return res


def model_cs(mem, cmp, cmask, swap, smask):
    if (mem & cmask) == (cmp & cmask):
        return (mem & ~smask & M64) | (swap & smask)
    return mem


def read_peer(path):
    """atomic_peer's lines -> (init dict, [op dicts], final dict, errors)"""
    init, final, ops, errs = {}, {}, [], []
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        return init, ops, final, ["cannot read %s: %s" % (path, e)]
    for ln in lines:
        w = ln.split()
        if not w:
            continue
        kv = dict(x.split("=", 1) for x in w[1:] if "=" in x)
        if w[0] == "INIT":
            init = kv
        elif w[0] == "FINAL":
            final = kv
        elif w[0] == "OP":
            ops.append(kv)
        elif w[0] == "ERROR":
            errs.append(ln)
    return init, ops, final, errs


def atomic_req(f):
    return atomic_request(f.payload)


def hexs(v):
    return "0x%016x" % v


def main():
    tap = TAP("atomic_wire", 12)
    frames, conns = sys.argv[1], sys.argv[2:]
    flows, tterms, _ = read_frames(frames)
    C = {}
    decode_probs, decode_notes = [], []
    for spec in conns:
        name, port, out = spec.split(":", 2)
        port = int(port)
        init, ops, final, errs = read_peer(out)
        c = {"name": name, "port": port, "init": init, "ops": ops,
             "final": final, "errs": errs, "req": [], "rsp": []}
        C[name] = c
        for e in errs:
            decode_notes.append("%s: peer: %s" % (name, e))
        pr, nt = decode_connection(flows, name, port, c)
        decode_probs += pr
        decode_notes += nt
    tap.result("capture_decoded", decode_probs, decode_notes)

    def qn1(c):
        return [f for f in c["req"] if f.kind is not None and not f.tagged
                and f.qn == W.DDP_QN_READ_REQ]

    def areqs(c):
        return [f for f in c["req"] if f.kind == W.RDMAP_OP_ATOMIC_REQ]

    def arsps(c):
        return [f for f in c["rsp"] if f.kind == W.RDMAP_OP_ATOMIC_RESP]

    # ---- request headers (all connections)
    probs, cnt = [], 0
    for c in C.values():
        for f in areqs(c):
            cnt += 1
            w = "%s request MSN %s" % (c["name"], getattr(f, "msn", "?"))
            if f.tagged:
                probs.append(w + ": tagged")
                continue
            if f.rv != W.RDMAP_VERSION:
                probs.append(w + ": RDMAP version %d" % f.rv)
            if f.dv != W.DDP_VERSION:
                probs.append(w + ": DDP version %d" % f.dv)
            if not f.last:
                probs.append(w + ": L flag clear")
            if f.qn != W.DDP_QN_READ_REQ:
                probs.append(w + ": QN %d, want %d" %
                             (f.qn, W.DDP_QN_READ_REQ))
            if f.mo != 0:
                probs.append(w + ": MO %d" % f.mo)
            if f.inval != 0:
                probs.append(w + ": Invalidate STag 0x%08x, want 0" % f.inval)
            if len(f.payload) != W.RDMAP_ATOMIC_REQ_SIZE:
                probs.append(w + ": %d bytes after the DDP header, want %d" %
                             (len(f.payload), W.RDMAP_ATOMIC_REQ_SIZE))
            elif atomic_req(f)["rsvd"]:
                probs.append(w + ": reserved bits 0x%07x" % atomic_req(f)["rsvd"])
    if cnt == 0:
        probs.append("no Atomic Request (RDMAP opcode 0x%X) on the wire" %
                     W.RDMAP_OP_ATOMIC_REQ)
    tap.result("request_headers", probs, ["%d Atomic Requests" % cnt])

    # ---- request operands == posted, per connection in order
    probs, notes = [], []
    for c in C.values():
        posted = [o for o in c["ops"] if o.get("kind") in ("fa", "cs")]
        wire = [f for f in areqs(c)
                if len(f.payload) == W.RDMAP_ATOMIC_REQ_SIZE]
        if len(posted) != len(wire):
            probs.append("%s: %d atomics posted, %d Atomic Requests on the wire"
                         % (c["name"], len(posted), len(wire)))
        for o, f in zip(posted, wire):
            r = atomic_req(f)
            masked = o["masked"] == "1"
            want = {"stag": int(o["rkey"], 16), "to": int(o["raddr"], 16)}
            if o["kind"] == "fa":
                want.update(aop=W.AOP_FETCH_ADD, asdata=int(o["add"], 16),
                            asmask=int(o["fmask"], 16) if masked else 0)
            else:
                want.update(aop=W.AOP_CMP_SWAP, asdata=int(o["swap"], 16),
                            asmask=int(o["smask"], 16) if masked else M64,
                            cdata=int(o["cmp"], 16),
                            cmask=int(o["cmask"], 16) if masked else M64)
            for k, v in want.items():
                if r[k] != v:
                    probs.append("%s op %s (%s%s): %s on the wire 0x%x, posted 0x%x"
                                 % (c["name"], o["n"], "masked " if masked else "",
                                    o["kind"], k, r[k], v))
            notes.append("%s op %s: AOpCode %d id 0x%08x STag 0x%08x TO 0x%x "
                         "add/swap %s/%s compare %s/%s" %
                         (c["name"], o["n"], r["aop"], r["id"], r["stag"], r["to"],
                          hexs(r["asdata"]), hexs(r["asmask"]),
                          hexs(r["cdata"]), hexs(r["cmask"])))
    tap.result("request_operands", probs, notes)

    # ---- MSN of queue 1 shared by Read Requests and Atomic Requests
    probs, notes = [], []
    for c in C.values():
        q = qn1(c)
        kinds = "".join("A" if f.kind == W.RDMAP_OP_ATOMIC_REQ else
                        "R" if f.kind == W.RDMAP_OP_READ_REQ else "?"
                        for f in q)
        posted = "".join("A" if o.get("kind") in ("fa", "cs") else "R"
                         for o in c["ops"])
        msns = [f.msn for f in q]
        notes.append("%s: queue 1 messages %s, MSNs %s" % (c["name"], kinds, msns))
        if kinds != posted:
            probs.append("%s: queue 1 carries %s, posted %s" %
                         (c["name"], kinds, posted))
        if msns != list(range(W.DDP_MSN_FIRST, W.DDP_MSN_FIRST + len(msns))):
            probs.append("%s: queue 1 MSNs %s, want 1..%d" %
                         (c["name"], msns, len(msns)))
    if not any(f.kind == W.RDMAP_OP_READ_REQ for c in C.values()
               for f in qn1(c)):
        probs.append("no RDMA Read Request seen")
    tap.result("msn_shared_with_read", probs, notes)

    # ---- response headers
    probs, notes, cnt = [], [], 0
    for c in C.values():
        rs = arsps(c)
        cnt += len(rs)
        for f in rs:
            w = "%s response MSN %s" % (c["name"], getattr(f, "msn", "?"))
            if f.tagged:
                probs.append(w + ": tagged")
                continue
            if f.rv != W.RDMAP_VERSION:
                probs.append(w + ": RDMAP version %d" % f.rv)
            if f.qn != W.DDP_QN_ATOMIC_RESP:
                probs.append(w + ": QN %d, want %d" %
                             (f.qn, W.DDP_QN_ATOMIC_RESP))
            if not f.last:
                probs.append(w + ": L flag clear")
            if f.mo != 0:
                probs.append(w + ": MO %d" % f.mo)
            if f.inval != 0:
                probs.append(w + ": Invalidate STag 0x%08x" % f.inval)
            if len(f.payload) != W.RDMAP_ATOMIC_RESP_SIZE:
                probs.append(w + ": %d bytes after the DDP header, want %d" %
                             (len(f.payload), W.RDMAP_ATOMIC_RESP_SIZE))
        msns = [f.msn for f in rs if not f.tagged]
        if msns != list(range(W.DDP_MSN_FIRST, W.DDP_MSN_FIRST + len(msns))):
            probs.append("%s: response MSNs %s, want 1..%d" %
                         (c["name"], msns, len(msns)))
        notes.append("%s: %d Atomic Responses, MSNs %s" % (c["name"], len(rs), msns))
    if cnt == 0:
        probs.append("no Atomic Response (RDMAP opcode 0x%X) on the wire" %
                     W.RDMAP_OP_ATOMIC_RESP)
    tap.result("response_headers", probs, notes)

    # ---- request ids echoed, original values as the model says
    pid, pval, notes = [], [], []
    for c in C.values():
        init = c["init"]
        if not init:
            pval.append("%s: no INIT line from the peer" % c["name"])
            continue
        base = int(init["base"], 16)
        mem = {i: int(init["w%d" % i], 16) for i in range(4)}
        reqs = [atomic_req(f) for f in areqs(c)
                if len(f.payload) == W.RDMAP_ATOMIC_REQ_SIZE]
        rsps = [f for f in arsps(c)
                if len(f.payload) == W.RDMAP_ATOMIC_RESP_SIZE]
        posted = [o for o in c["ops"] if o.get("kind") in ("fa", "cs")]
        # only requests that were valid get a response
        valid = [o for o in posted if o.get("status") == "success"]
        if len(rsps) != len(valid):
            pid.append("%s: %d Atomic Responses for %d successful atomics" %
                       (c["name"], len(rsps), len(valid)))
        for k, f in enumerate(rsps):
            oid, oval = atomic_response(f.payload)
            if k < len(reqs) and oid != reqs[k]["id"]:
                pid.append("%s response %d: Original Request Id 0x%08x, request "
                           "had 0x%08x" % (c["name"], k + 1, oid, reqs[k]["id"]))
            if k >= len(valid):
                continue
            o = valid[k]
            wi = (int(o["raddr"], 16) - base) // W.ATOMIC_SIZE
            cur = mem.get(wi)
            if cur is None:
                pval.append("%s op %s: target outside the words" % (c["name"], o["n"]))
                continue
            masked = o["masked"] == "1"
            if o["kind"] == "fa":
                nv = model_fa(cur, int(o["add"], 16),
                              int(o["fmask"], 16) if masked else 0)
            else:
                nv = model_cs(cur, int(o["cmp"], 16),
                              int(o["cmask"], 16) if masked else M64,
                              int(o["swap"], 16),
                              int(o["smask"], 16) if masked else M64)
            if oval != cur:
                pval.append("%s op %s: Original Remote Data Value %s, model %s" %
                            (c["name"], o["n"], hexs(oval), hexs(cur)))
            if int(o["orig"], 16) != cur:
                pval.append("%s op %s: requester's result buffer %s, model %s" %
                            (c["name"], o["n"], o["orig"], hexs(cur)))
            notes.append("%s op %s: original %s -> %s" %
                         (c["name"], o["n"], hexs(oval), hexs(nv)))
            mem[wi] = nv
        if c["final"] and c["name"] == "ops":
            for i in range(4):
                if int(c["final"]["w%d" % i], 16) != mem[i]:
                    pval.append("%s: word %d ends as %s, model %s" %
                                (c["name"], i, c["final"]["w%d" % i], hexs(mem[i])))
    tap.result("response_request_ids", pid)
    tap.result("original_values", pval, notes)

    # ---- the Read Responses carry the memory as the model has it then
    probs = []
    c = C.get("ops")
    if c and c["init"]:
        base = int(c["init"]["base"], 16)
        mem = {i: int(c["init"]["w%d" % i], 16) for i in range(4)}
        rresp = [f for f in c["rsp"] if f.kind == W.RDMAP_OP_READ_RESP]
        k = 0
        for o in c["ops"]:
            if o.get("kind") == "read":
                ln = int(o["len"])
                w0 = (int(o["raddr"], 16) - base) // W.ATOMIC_SIZE
                want = b"".join(struct.pack("<Q", mem[w0 + i])
                                for i in range(ln // W.ATOMIC_SIZE))
                got = b""
                while k < len(rresp) and len(got) < ln:
                    got += rresp[k].payload
                    k += 1
                if got != want:
                    probs.append("read op %s: Read Response data %s, model %s" %
                                 (o["n"], got.hex(), want.hex()))
                continue
            if o.get("status") != "success":
                continue
            wi = (int(o["raddr"], 16) - base) // W.ATOMIC_SIZE
            masked = o["masked"] == "1"
            if o["kind"] == "fa":
                mem[wi] = model_fa(mem[wi], int(o["add"], 16),
                                   int(o["fmask"], 16) if masked else 0)
            else:
                mem[wi] = model_cs(mem[wi], int(o["cmp"], 16),
                                   int(o["cmask"], 16) if masked else M64,
                                   int(o["swap"], 16),
                                   int(o["smask"], 16) if masked else M64)
    else:
        probs.append("no ops case")
    tap.result("read_responses_see_atomics", probs)

    # ---- Terminates of the invalid requests
    def term_case(name, want_l, want_t, want_c, what):
        probs, notes = [], []
        c = C.get(name)
        if not c or "req" not in c:
            tap.result("term_" + name, ["no decoded connection"])
            return
        bad = [f for f in areqs(c)
               if len(f.payload) == W.RDMAP_ATOMIC_REQ_SIZE]
        bad = bad[-1] if bad else None
        terms = [f for f in c["rsp"] if f.kind == W.RDMAP_OP_TERMINATE]
        if not terms:
            probs.append("the responder sent no Terminate")
        if any(f.kind == W.RDMAP_OP_TERMINATE for f in c["req"]):
            notes.append("the requester sent a Terminate too")
        if bad is None:
            probs.append("the invalid Atomic Request is not on the wire")
        if terms:
            t = terms[0]
            p = t.payload
            if t.tagged or t.qn != W.DDP_QN_TERMINATE or \
                    t.rv != W.RDMAP_VERSION:
                probs.append("Terminate header: tagged %s QN %s RV %s" %
                             (t.tagged, getattr(t, "qn", "?"), t.rv))
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
                if (layer, etype, code) != (want_l, want_t, want_c):
                    probs.append("layer/etype/code %d/%d/0x%02x, want %d/%d/0x%02x (%s)"
                                 % (layer, etype, code, want_l, want_t, want_c, what))
                if not fd:
                    probs.append("D clear: the offending DDP header is not attached")
                att = p[ctl:]
                if (fm or fd or fr) and bad is not None:
                    seglen = be16(att, 0) if len(att) >= W.TERM_SEGLEN_SIZE \
                        else None
                    # checked on its own in term_ddp_segment_length
                    seglens.append((name, fm, seglen, bad.mpalen))
                    hoff = W.TERM_SEGLEN_SIZE
                    hdr = att[hoff:hoff + W.DDP_UNTAGGED_HDR_SIZE]
                    if fd and hdr != bad.hdr:
                        probs.append("attached DDP header %s, the request's %s" %
                                     (hdr.hex(), bad.hdr.hex()))
                    if fr:
                        roff = hoff + W.DDP_UNTAGGED_HDR_SIZE
                        rh = att[roff:roff + W.RDMAP_ATOMIC_REQ_SIZE]
                        if rh != bad.payload:
                            probs.append("attached RDMAP header %s, the request's %s"
                                         % (rh.hex(), bad.payload.hex()))
                    if fd and hdr == bad.hdr:
                        notes.append("attached DDP header matches the request "
                                     "(MSN %d)" % bad.msn)
        # tshark's reading of the same Terminate
        rows = [r for r in tterms if r["sport"] == c["port"]]
        if not rows:
            probs.append("tshark decoded no Terminate from the responder")
        else:
            r = rows[0]

            def num(x):
                try:
                    return int(x, 0)
                except ValueError:
                    return None
            notes.append("tshark: layer %s etype_rdma %s errcode_rdma %s M %s D %s R %s"
                         % (r["layer"], r["etype"], r["code"], r["m"], r["d"], r["r"]))
            if (num(r["layer"]), num(r["etype"]), num(r["code"])) != \
               (want_l, want_t, want_c):
                probs.append("tshark reads layer/etype/code %s/%s/%s" %
                             (r["layer"], r["etype"], r["code"]))
        # no Atomic Response for the invalid request
        valid = [o for o in c["ops"] if o.get("status") == "success"]
        if len(arsps(c)) > len(valid):
            probs.append("an Atomic Response was sent for the invalid request")
        tap.result("term_" + name, probs, notes)

    seglens = []
    term_case("bad_stag", W.TERM_LAYER_RDMAP, W.RDMAP_ETYPE_REMOTE_PROTECTION,
              W.RDMAP_ECODE_INVALID_STAG,
              "RDMAP / Remote Protection / Invalid STag")
    term_case("misaligned", W.TERM_LAYER_RDMAP, W.RDMAP_ETYPE_REMOTE_OPERATION,
              W.RDMAP_ECODE_CATASTROPHIC_STREAM,
              "RDMAP / Remote Operation / Catastrophic, localized to the stream")

    # M set: the DDP Segment Length is that of the terminated segment,
    # DDP header included (RFC 5041: a DDP Segment is the DDP Header and
    # its ULP Payload), i.e. the ULPDU Length MPA framed it with
    probs, notes = [], []
    for name, fm, seglen, want in seglens:
        notes.append("%s: M %d, DDP Segment Length %s, the request's segment "
                     "was %d bytes" % (name, fm, seglen, want))
        if fm and seglen != want:
            probs.append("%s: DDP Segment Length %s with M set, the "
                         "terminated segment was %d bytes" % (name, seglen, want))
    if not seglens:
        probs.append("no Terminate with the request attached to check")
    tap.result("term_ddp_segment_length", probs, notes)

    print("TAP version 13")
    print("1..%d" % tap.n)
    print("\n".join(tap.lines))
    return 1 if tap.fails else 0


if __name__ == "__main__":
    sys.exit(main())
