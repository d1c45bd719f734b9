#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
ipcm_rxe_check.py - suite ipcm_rxe's comparisons of siwx-ipcm's --json
view of a capture with what the other side saw.

  rejects JSON INJECT...
      the REJs in the capture (reason and Additional Rejection
      Information, rebuilt from the decoded fields) are those the
      injector printed, one for one, and every injected REQ is there
  deviations MODULE JSON
      the deviations siwx-ipcm names are exactly those of the malformed
      REQs the suite sends; under Debian's rdma_cm (MODULE stock) also
      one rej-without-annex-ari for each REJ, under ours none
  header JSON "CLIENT SERVER"
      the one connection's annex header carries the client's address
      and port and the server's address, its SID the server's port
      (CLIENT and SERVER as ipcm_conn prints them: IP:PORT)
  tshark JSON PCAP
      Wireshark's own annex decoder (tshark's infiniband dissector)
      reads every REQ and REJ of the capture as siwx-ipcm does: the
      Communication ID, Service ID, protocol, port, versions, IP version,
      source port and addresses of each REQ, the reason, Rejected Info
      Length and ARI bytes of each REJ

Prints what differs; exit 0 when nothing does.
"""
import collections
import json
import os
import re
import subprocess
import sys

# the deviations of the REQs the suite injects (ipcm_rxe.sh's CASES for
# IPv4 and CASES6 for IPv6)
REQ_DEVIATIONS = {"major-version": 2, "minor-version": 2, "ip-version": 3,
                  "src-addr-format": 1, "dst-addr-format": 1}
INJECTED = 9 + 5


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def ari_hex(m):
    """The ARI bytes of a decoded REJ, as cm-inject.py prints them."""
    n = m.get("ari_len") or 0
    if not n:
        return "-"
    b = bytes([m["layer"]])
    if m["layer"] == 0:
        value = bytes.fromhex(m.get("value") or "")
        b += bytes([m["ari"], m["value_len"], 0]) + value
    elif m["layer"] == 1:
        b += bytes.fromhex(m.get("ulp") or "")
    return (b + bytes(max(0, n - len(b))))[:n].hex()


def rejects(js, injects):
    conns = [c for c in load(js) if c.get("conn")]
    got = collections.Counter()
    reqs = 0
    for c in conns:
        reqs += bool(c.get("req"))
        for m in c.get("messages") or []:
            if m.get("type") == "REJ":
                got["reason=%d ari=%s" % (m["reason"], ari_hex(m))] += 1
    want = collections.Counter()
    ninj = 0
    for path in injects:
        with open(path) as f:
            for line in f:
                m = re.match(r"case \S+: REJ reason=(\d+) ari_len=\d+ "
                             r"ari=(\S+)", line)
                if line.startswith("case "):
                    ninj += 1
                if m:
                    want["reason=%s ari=%s" % m.groups()] += 1
    bad = []
    if got != want:
        bad.append("REJs in the capture %s, the injector saw %s" %
                   (dict(got), dict(want)))
    if reqs != ninj:
        bad.append("%d REQs in the capture, %d injected" % (reqs, ninj))
    return bad


def deviations(module, js):
    conns = load(js)
    got = collections.Counter(d["name"] for c in conns
                              for d in c.get("deviations") or [])
    want = collections.Counter(REQ_DEVIATIONS)
    if module == "stock":
        want["rej-without-annex-ari"] = INJECTED
    bad = []
    if got != want:
        bad.append("deviations %s, want %s" % (dict(got), dict(want)))
    if module != "stock":
        # the kernel's ARI code names the very fault siwx-ipcm finds in
        # that REQ (both through include/siwx/ipcm.h: the patch's numbers
        # cannot drift from the header's unseen)
        for c in conns:
            req = [d["name"] for d in c.get("deviations") or []
                   if d["name"] in REQ_DEVIATIONS]
            rej = [m for m in c.get("messages") or [] if m["type"] == "REJ"]
            if req and (not rej or rej[0].get("ari_name") != req[0]):
                bad.append("conn %s: REQ %s, REJ ARI %s" %
                           (c["conn"], req[0],
                            rej[0].get("ari_name") if rej else "none"))
    return bad


def header(js, tuples):
    cli, srv = tuples.split()
    cip, cport = cli.rsplit(":", 1)
    sip, sport = srv.rsplit(":", 1)
    conns = [c for c in load(js) if c.get("conn") and c.get("req")]
    if len(conns) != 1:
        return ["%d connections with a REQ in the capture, want 1" %
                len(conns)]
    c = conns[0]
    got = (c.get("protocol_name"), c.get("src"), c.get("sport"),
           c.get("dst"), c.get("dport"), c.get("ip_version"))
    want = ("tcp", cip.strip("[]"), int(cport), sip.strip("[]"), int(sport),
            6 if ":" in sip else 4)
    bad = []
    if got != want:
        bad.append("annex header (proto, src, sport, dst, dport, ipv) %r, "
                   "the programs saw %r" % (got, want))
    types = [m.get("type") for m in c.get("messages") or []]
    if types[:3] != ["REQ", "REP", "RTU"]:
        bad.append("messages %s, want REQ REP RTU first" % types)
    if c.get("deviations"):
        bad.append("deviations %s" % c["deviations"])
    return bad


TSHARK_FIELDS = [
    "frame.number", "infiniband.cm.req", "infiniband.cm.req.serviceid",
    "infiniband.cm.req.serviceid.protocol",
    "infiniband.cm.req.serviceid.dport", "infiniband.cm.req.ip_cm.majv",
    "infiniband.cm.req.ip_cm.minv", "infiniband.cm.req.ip_cm.ipv",
    "infiniband.cm.req.ip_cm.sport", "infiniband.cm.req.ip_cm.sip4",
    "infiniband.cm.req.ip_cm.dip4", "infiniband.cm.req.ip_cm.sip6",
    "infiniband.cm.req.ip_cm.dip6", "infiniband.cm.rej.reason",
    "infiniband.cm.rej.rejinfolen", "infiniband.cm.rej.ari"]


def tshark(js, pcap):
    args = ["tshark", "-n", "-r", pcap, "-T", "fields", "-E", "separator=|"]
    for f in TSHARK_FIELDS:
        args += ["-e", f]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, HOME=os.environ.get("TMPDIR",
                                                                "/tmp")))
    rows = {}
    for line in r.stdout.splitlines():
        row = dict(zip(TSHARK_FIELDS, line.split("|")))
        rows[int(row["frame.number"])] = row
    if not rows:
        return ["tshark decoded nothing: %s" % r.stderr[-300:]]

    def num(v):
        return int(v, 0) if v else None
    bad, nreq, nrej = [], 0, 0
    for c in load(js):
        if not c.get("conn"):
            continue
        for m in c.get("messages") or []:
            r = rows.get(m["frame"], {})
            if m["type"] == "REQ":
                nreq += 1
                ipv = c["ip_version"]
                sip, dip = (("infiniband.cm.req.ip_cm.sip6",
                             "infiniband.cm.req.ip_cm.dip6") if ipv == 6
                            else ("infiniband.cm.req.ip_cm.sip4",
                                  "infiniband.cm.req.ip_cm.dip4"))
                got = (num(r.get("infiniband.cm.req")),
                       num(r.get("infiniband.cm.req.serviceid")),
                       num(r.get("infiniband.cm.req.serviceid.protocol")),
                       num(r.get("infiniband.cm.req.serviceid.dport")),
                       num(r.get("infiniband.cm.req.ip_cm.majv")),
                       num(r.get("infiniband.cm.req.ip_cm.minv")),
                       num(r.get("infiniband.cm.req.ip_cm.ipv")),
                       num(r.get("infiniband.cm.req.ip_cm.sport")))
                want = (int(c["conn"], 16), int(c["sid"], 16),
                        c["protocol"], c["dport"], c["major"], c["minor"],
                        ipv, c["sport"])
                if ipv in (4, 6):   # only then does either name addresses
                    got += (r.get(sip), r.get(dip))
                    want += (c["src"], c["dst"])
            elif m["type"] == "REJ":
                nrej += 1
                n = num(r.get("infiniband.cm.rej.rejinfolen"))
                ari = (r.get("infiniband.cm.rej.ari") or "").replace(":", "")
                got = (num(r.get("infiniband.cm.rej.reason")), n,
                       ari[:2 * (n or 0)] or "-")
                want = (m["reason"], m["ari_len"], ari_hex(m))
            else:
                continue
            if got != want:
                bad.append("frame %d %s: tshark %r, siwx-ipcm %r" %
                           (m["frame"], m["type"], got, want))
    if not nreq:
        bad.append("no REQ to compare")
    print("== tshark and siwx-ipcm agree on %d REQs and %d REJs" %
          (nreq - sum("REQ" in b for b in bad),
           nrej - sum("REJ" in b for b in bad)))
    return bad


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "rejects":
        bad = rejects(args[0], args[1:])
    elif mode == "deviations":
        bad = deviations(args[0], args[1])
    elif mode == "header":
        bad = header(args[0], args[1])
    elif mode == "tshark":
        bad = tshark(args[0], args[1])
    else:
        print("unknown mode %s" % mode, file=sys.stderr)
        return 2
    for b in bad:
        print("== %s" % b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
