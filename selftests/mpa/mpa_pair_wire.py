#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""mpa_pair_wire.py - decode one MPA connection setup from a capture and
check it (and the rdma resource details of the QP) against expectations.
Helper of selftests/mpa/mpa_pair.sh.

  mpa_pair_wire.py PCAP PORT RES_JSON QPN [EXPECT...]
  mpa_pair_wire.py --netlink [FILE PID]
            JSON dump of every QP's driver attributes, straight from
            netlink; with FILE and PID: as soon as FILE (mpa_conn's
            output) has its 'ROLE qpn=N' line, or nothing once PID is gone

PCAP      libpcap file (tcpdump -w; Ethernet, Linux cooked, loopback or
          raw IP; IPv4 or IPv6: read by selftests/lib/iwarp_capture.py)
PORT      the responder's TCP port: the connection to it whose initiator
          stream starts with an MPA Request is decoded (the last one when
          there are several; refused attempts carry no payload)
RES_JSON  output of 'rdma -dd -j resource show qp' taken while the
          connection was up, or '-'
QPN       the local QP number (lqpn) to pick from it, or '-'
EXPECT    KEY=VALUE or KEY!=VALUE. Keys starting with 'res.' are looked up
          in the QP's rdma resource attributes (res.mpa-rtr=write; the
          driver attributes, which rdma prints as drv_NAME), all others
          in the decoded wire keys below.

Wire keys (everything from the raw TCP payload bytes, reassembled per
direction; MPA markers are not supported and not expected):
  mpa_conns           MPA connections seen on PORT
  req.key, rep.key    1 when the frame starts with the RFC 5044 key
  req.rev, req.marker, req.crc, req.rej, req.S, req.pdlen   MPA header
  req.A, req.B, req.IRD, req.C, req.D, req.ORD   RFC 6581 words (only
                      with S=1 and pdlen >= 4; IRD/ORD: the 14-bit values)
  rep.*               the same for the Reply (rep.len: 0 when none seen)
  i1.*, i2.*, r1.*    first and second FPDU of the initiator, first of the
                      responder, after its MPA frame:
    .op   RDMAP opcode   .T .L  DDP tagged/last flags  .rv .dv versions
    .len  ULP payload bytes after the DDP/RDMAP header
    .qn .msn .mo   untagged fields     .stag .to   tagged fields
    .rsize        RDMA Read Message Size (Read Request, opcode 1)
    .layer .etype .code   Terminate control field (opcode 7)
  i.nfpdu, r.nfpdu    complete FPDUs per direction
  rterm.*, iterm.*    first Terminate of the responder / initiator (same
                      fields as i1.*); rterm.seen 0|1

With RES_JSON.nl present (the --netlink dump taken with it), the res
diagnostics also show the driver attributes as the kernel sent them:
inside the RDMA_NLDEV_ATTR_DRIVER nest (where the rdma tool looks) or
loose in the QP entry (invisible to the rdma tool).

Output: '# wire: ...' and '# res: ...' diagnostic lines, then
'RESULT wire ok|fail' and 'RESULT res ok|fail|none'. Exit 0 when both
are ok (or res has no expectations).
"""

import json
import os
import re
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import iwarp_capture as cap  # noqa: E402  (pcap, TCP, MPA and FPDU parsing)
import siwx_wire as W  # noqa: E402

# the header's opcode names as this script prints them: SEND_SE_INV ->
# SendSEInv, IMM -> ImmData
OPNAMES = {op: "".join({"SE": "SE", "IMM": "ImmData"}.get(w, w.capitalize())
                       for w in n.split("_"))
           for op, n in W.OPCODE_NAMES.items()}
# wire key suffix <- cap.parse_frame() field
FRAME_KEYS = (("marker", "m"), ("crc", "c"), ("rej", "r"), ("S", "s"),
              ("rev", "rev"), ("pdlen", "pd_len"))
WORD_KEYS = (("A", "a"), ("B", "b"), ("IRD", "ird"), ("C", "c_rtr"),
             ("D", "d_rtr"), ("ORD", "ord"))


def mpa_frame(buf, pfx, keyval, d):
    """Decode an MPA Request/Reply at the start of buf into d; returns
    its length (0 when incomplete/absent)."""
    f, n = cap.parse_frame(buf, keyval, strict=False)
    if f is not None:
        d[pfx + ".key"] = f["key_ok"]
        d[pfx + ".resbits"] = "0x%x" % f["resbits"]
        for k, fk in FRAME_KEYS:
            d[pfx + "." + k] = f[fk]
    if f is None or not f["complete"]:
        d[pfx + ".len"] = 0
        return 0
    d[pfx + ".len"] = n
    if "ird" in f:
        for k, fk in WORD_KEYS:
            d[pfx + "." + k] = f[fk]
    d[pfx + ".pdata"] = "".join(chr(c) if 32 <= c < 127 else "\\x%02x" % c
                                for c in f["pdata"])
    return n


def fpdus(buf):
    """Complete FPDUs (dicts with the wire key suffixes) from buf (which
    starts at an FPDU), and the bytes left over."""
    out = []
    rest = len(buf)
    for g in cap.parse_fpdus(buf):
        if not g["complete"]:
            break
        rest -= g["wlen"]
        f = {"ulen": g["len"], "crcfield": "0x%08x" % g["crcfield"],
             "T": g["t"], "L": g["l"], "dv": g["dv"], "rv": g["rv"],
             "op": g["op"], "len": g["plen"]}
        if "stag" in g:
            f["stag"] = "0x%08x" % g["stag"]
            f["to"] = "0x%016x" % g["to"]
        for k in ("qn", "msn", "mo", "layer", "etype", "code"):
            if k in g:
                f[k] = g[k]
        if "size" in g:
            f["rsize"] = g["size"]
        if "hdrct" in g:
            f["hdrct"] = "0x%x" % g["hdrct"]
        out.append(f)
    return out, rest


def fdesc(f):
    s = "%s(op %d)%s ulen %d len %d" % (OPNAMES.get(f["op"], "?"), f["op"],
                                        " tagged" if f["T"] else "",
                                        f["ulen"], f["len"])
    for k in ("qn", "msn", "mo", "stag", "to", "rsize", "layer", "etype",
              "code"):
        if k in f:
            s += " %s %s" % (k, f[k])
    return s


def decode(pcap, port):
    d = {}
    diag = []
    conns = cap.connections(cap.flows(pcap), port)
    mpa = cap.mpa_connections(conns)
    d["mpa_conns"] = len(mpa)
    diag.append("%d TCP connection(s) to port %d, %d with an MPA Request"
                % (len(conns), port, len(mpa)))
    if not mpa:
        return d, diag
    key, ifl, rfl = mpa[-1]
    client = cap.endpoint(key[0], key[1])
    ib, igap = ifl.stream()
    rb, rgap = rfl.stream()
    diag.append("connection from %s: initiator %d bytes%s%s, responder "
                "%d bytes%s%s" % (client, len(ib), " (GAP)" if igap else "",
                                  " FIN" if ifl.fin else "", len(rb),
                                  " (GAP)" if rgap else "",
                                  " FIN" if rfl.fin else "")
                + (" RST" if ifl.rst or rfl.rst else ""))
    for pfx, buf, key, name in (("req", ib, W.KEY_REQ, "Request"),
                                ("rep", rb, W.KEY_REP, "Reply")):
        n = mpa_frame(buf, pfx, key, d)
        if not n:
            diag.append("%s: none (%d bytes)" % (name, len(buf)))
            continue
        s = "%s: key %s rev %d M=%d CRC=%d R=%d S=%d pdlen %d" % (
            name, "ok" if d[pfx + ".key"] else "BAD", d[pfx + ".rev"],
            d[pfx + ".marker"], d[pfx + ".crc"], d[pfx + ".rej"],
            d[pfx + ".S"], d[pfx + ".pdlen"])
        if pfx + ".IRD" in d:
            s += " | A=%d B=%d IRD %d (0x%04x) | C=%d D=%d ORD %d (0x%04x)" % (
                d[pfx + ".A"], d[pfx + ".B"], d[pfx + ".IRD"], d[pfx + ".IRD"],
                d[pfx + ".C"], d[pfx + ".D"], d[pfx + ".ORD"], d[pfx + ".ORD"])
        s += " | pdata '%s'" % d[pfx + ".pdata"]
        diag.append(s)
        fl, rest = fpdus(buf[n:])
        side = "i" if pfx == "req" else "r"
        d[side + ".nfpdu"] = len(fl)
        for idx, f in enumerate(fl[:2]):
            for k, v in f.items():
                d["%s%d.%s" % (side, idx + 1, k)] = v
        term = [f for f in fl
                if f["op"] == W.RDMAP_OP_TERMINATE and not f["T"]]
        tp = "iterm" if side == "i" else "rterm"
        d[tp + ".seen"] = int(bool(term))
        if term:
            for k, v in term[0].items():
                d[tp + "." + k] = v
        who = "initiator" if side == "i" else "responder"
        diag.append("%s FPDUs after its MPA frame: %d%s" % (
            who, len(fl), " (+%d bytes incomplete)" % rest if rest else ""))
        for idx, f in enumerate(fl[:4]):
            diag.append("  %s FPDU %d: %s" % (who, idx + 1, fdesc(f)))
    return d, diag


def res_attrs(path, qpn):
    """rdma resource attributes of lqpn QPN: dict, or None."""
    with open(path) as f:
        txt = f.read()
    try:
        data = json.loads(txt)
    except ValueError:
        # several JSON documents or text: take the first array
        m = re.search(r"\[.*\]", txt, re.S)
        data = json.loads(m.group(0)) if m else []
    objs = []

    def walk(o):
        if isinstance(o, dict):
            if "lqpn" in o:
                objs.append(o)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(data)
    for o in objs:
        if str(o.get("lqpn")) == str(qpn):
            flat = {}

            def flatten(x):
                for k, v in x.items():
                    if isinstance(v, dict):
                        flatten(v)
                    elif isinstance(v, list):
                        for e in v:
                            if isinstance(e, dict):
                                flatten(e)
                    else:
                        flat[k] = v
            flatten(o)
            # rdma (iproute2) names driver attributes "drv_NAME"
            for k in [k for k in flat if k.startswith("drv_")]:
                flat[k[4:]] = flat.pop(k)
            return flat
    return None


# rdma netlink (include/uapi/rdma/rdma_netlink.h)
NETLINK_RDMA = 20
RDMA_NL_NLDEV = 5
NLDEV_CMD_GET, NLDEV_CMD_RES_QP_GET = 1, 10
A_DEV_INDEX, A_DEV_NAME = 1, 2
A_RES_QP, A_RES_QP_ENTRY, A_RES_LQPN = 19, 20, 21
A_DRIVER, A_DRV_STRING, A_DRV_PRINT_TYPE = 52, 54, 55
A_DRV_S32, A_DRV_U32, A_DRV_S64, A_DRV_U64 = 56, 57, 58, 59
NLA_TYPE_MASK = 0x3FFF          # ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER)


def nl_attrs(buf):
    out = []
    off = 0
    while off + 4 <= len(buf):
        ln, typ = struct.unpack("=HH", buf[off:off + 4])
        if ln < 4:
            break
        out.append((typ & NLA_TYPE_MASK, buf[off + 4:off + ln]))
        off += (ln + 3) & ~3
    return out


def nl_dump(sock, cmd, attrs=b""):
    seq = nl_dump.seq = getattr(nl_dump, "seq", 0) + 1
    typ = (RDMA_NL_NLDEV << 10) + cmd
    sock.send(struct.pack("=IHHII", 16 + len(attrs), typ, 0x301, seq, 0)
              + attrs)		# NLM_F_REQUEST | NLM_F_DUMP
    msgs = []
    while True:
        data = sock.recv(1 << 20)
        off = 0
        while off + 16 <= len(data):
            ln, mtyp, _fl, _sq, _pid = struct.unpack("=IHHII",
                                                     data[off:off + 16])
            if mtyp == 3:		# NLMSG_DONE
                return msgs
            if mtyp == 2:		# NLMSG_ERROR
                err = struct.unpack("=i", data[off + 16:off + 20])[0]
                if err:
                    raise OSError(-err, "netlink error")
                return msgs
            msgs.append(data[off + 16:off + ln])
            off += (ln + 3) & ~3


def drv_pairs(attrs):
    """name -> value from a sequence of RDMA_NLDEV_ATTR_DRIVER_* attrs."""
    out = {}
    name = None
    for typ, val in attrs:
        if typ == A_DRV_STRING:
            s = val.split(b"\0", 1)[0].decode(errors="replace")
            if name is None:
                name = s
            else:
                out[name], name = s, None
        elif typ == A_DRV_PRINT_TYPE:
            continue
        elif name is not None and typ in (A_DRV_U32, A_DRV_S32, A_DRV_U64,
                                          A_DRV_S64):
            fmt = {A_DRV_U32: "=I", A_DRV_S32: "=i", A_DRV_U64: "=Q",
                   A_DRV_S64: "=q"}[typ]
            out[name], name = struct.unpack(fmt, val[:struct.calcsize(fmt)])[0], None
    return out


def netlink_qps():
    """{lqpn: {"dev": name, "nested": {...}, "loose": {...}}}"""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_RDMA)
    sock.bind((0, 0))
    devs = {}
    for m in nl_dump(sock, NLDEV_CMD_GET):
        a = dict(nl_attrs(m))
        if A_DEV_INDEX in a:
            devs[struct.unpack("=I", a[A_DEV_INDEX][:4])[0]] = \
                a.get(A_DEV_NAME, b"?").split(b"\0")[0].decode()
    qps = {}
    for idx, name in devs.items():
        req = struct.pack("=HHI", 8, A_DEV_INDEX, idx)
        for m in nl_dump(sock, NLDEV_CMD_RES_QP_GET, req):
            for typ, val in nl_attrs(m):
                if typ != A_RES_QP:
                    continue
                for etyp, ent in nl_attrs(val):
                    if etyp != A_RES_QP_ENTRY:
                        continue
                    ea = nl_attrs(ent)
                    lq = [v for t, v in ea if t == A_RES_LQPN]
                    if not lq:
                        continue
                    nested = {}
                    for t, v in ea:
                        if t == A_DRIVER:
                            nested.update(drv_pairs(nl_attrs(v)))
                    loose = drv_pairs(ea)
                    qps[struct.unpack("=I", lq[0][:4])[0]] = {
                        "dev": name, "nested": nested, "loose": loose}
    return qps


def check(exp, have, tag, diag):
    ok = True
    for e in exp:
        m = re.match(r"^([^=!]+)(!?=)(.*)$", e)
        if not m:
            diag.append("%s: bad expectation %r" % (tag, e))
            ok = False
            continue
        k, op, v = m.groups()
        got = have.get(k)
        gs = "-" if got is None else str(got)
        good = got is not None and ((gs == v) if op == "=" else (gs != v))
        if not good:
            ok = False
        diag.append("%s %s %s -> %s %s" % (k, op, v, gs,
                                           "ok" if good else "MISMATCH"))
    return ok


def main(argv):
    if len(argv) in (2, 4) and argv[1] == "--netlink":
        if len(argv) == 4:
            # started with the connection: no interpreter start-up
            # between the QP's appearance and the dump
            import time
            pat = re.compile(r"^[a-z]+ qpn=\d+$", re.M)
            while True:
                try:
                    with open(argv[2]) as f:
                        if pat.search(f.read()):
                            break
                except OSError:
                    pass
                if not os.path.exists("/proc/" + argv[3]):
                    print(json.dumps({"error": "no QP number before the "
                                      "process ended"}))
                    return 0
                time.sleep(0.02)
        try:
            print(json.dumps(netlink_qps()))
        except OSError as ex:
            print(json.dumps({"error": str(ex)}))
        return 0
    if len(argv) < 5:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    pcap, port, resf, qpn = argv[1], int(argv[2]), argv[3], argv[4]
    wexp = [e for e in argv[5:] if not e.startswith("res.")]
    rexp = [e[4:] for e in argv[5:] if e.startswith("res.")]

    wd = []
    wok = True
    try:
        d, wd = decode(pcap, port)
    except (OSError, ValueError, struct.error) as ex:
        d = {}
        wd.append("cannot decode %s: %s" % (pcap, ex))
        wok = False
    if wexp:
        if d.get("mpa_conns", 0) < 1:
            wok = False
        wok = check(wexp, d, "", wd) and wok
    for line in wd:
        print("# wire: " + line)
    print("RESULT wire %s" % ("ok" if wok else "fail"))

    rd = []
    rok = None
    if rexp:
        attrs = None
        if resf == "-" or qpn == "-":
            rd.append("no rdma resource snapshot (QP number unknown)")
        else:
            try:
                attrs = res_attrs(resf, qpn)
            except (OSError, ValueError) as ex:
                rd.append("cannot read %s: %s" % (resf, ex))
            if attrs is None:
                rd.append("no QP with lqpn %s in %s" % (qpn, resf))
        nl = None
        if resf != "-" and qpn != "-":
            try:
                with open(resf + ".nl") as f:
                    nl = json.load(f)
            except (OSError, ValueError):
                pass
        if nl is not None:
            q = nl.get(str(qpn))
            if "error" in nl:
                rd.append("netlink dump failed: %s" % nl["error"])
            elif q is None:
                rd.append("netlink: no QP %s" % qpn)
            else:
                for k in ("nested", "loose"):
                    rd.append("netlink: driver attributes %s: %s" % (
                        "in the RDMA_NLDEV_ATTR_DRIVER nest (shown by rdma -dd)"
                        if k == "nested" else
                        "outside of it (rdma does not show these)",
                        " ".join("%s %s" % kv for kv in q[k].items())
                        or "none"))
        if attrs is None:
            rok = False
        else:
            rd.append("lqpn %s: %s" % (qpn, " ".join(
                "%s %s" % (k, v) for k, v in attrs.items()
                if k.startswith("mpa-") or k in ("ird", "ord", "state",
                                                 "comm"))))
            rok = check(rexp, attrs, "", rd)
    for line in rd:
        print("# res: " + line)
    print("RESULT res %s" % ("none" if rok is None else
                             "ok" if rok else "fail"))
    return 0 if wok and rok is not False else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
