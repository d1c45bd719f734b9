#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""counters_check.py PCAP DIR [FIRST]: the protocol counters of siw0 and siw1
(patch 0062, 'rdma statistic show link siwN/1') against a capture of the
same traffic (wireshark_cap.sh).

DIR holds, for each device D of siw0 and siw1, D.before and D.after (the
ports/1/hw_counters files as 'name value' lines, read just before the
capture started and after it stopped), D.addr (its IPv4 address) and
D.rdma.json ('rdma -j statistic show link D/1', read right after
D.after).

Checked, per device (the capture's direction from or to its address):
- tx_CLASS_fpdus and tx_CLASS_bytes (sum of MPA ULPDU Lengths) equal
  what the capture shows the device sent, for every opcode class;
- rx_CLASS_*: what the capture shows it received on connections without a
  Terminate, exactly; on connections with one, the receiver may have
  dropped what followed it, so at most that much more;
- term_tx_KIND equals the Terminates it sent by layer and error type;
  term_rx_KIND at most those it was sent, at least those on connections
  where it sent none itself;
- mpa_rev1/mpa_rev2/mpa_enhanced/mpa_crc: one per established connection
  the device is an end of, by the Reply's revision, S and C flags;
  mpa_rtr_*: one per peer-to-peer connection the device initiated, by the
  type of its RTR (the initiator's first FPDU, zero-length);
  mpa_rejects_sent/rcvd: Replies with the R flag;
- crc_errors: 0 (every FPDU of the capture has a valid CRC when CRC is
  on: checked too);
- 'rdma statistic' reports every counter, with the value sysfs has.

Per QP ('rdma statistic qp', siw1 in auto mode for the whole run; DIR
also holds qp_auto.rc, the status of 'rdma statistic qp set link siw1/1
auto type on', qp.samples, 'rdma statistic qp show' taken every half
second during the traffic, '--' between samples; qp.live, the same
taken while 6 s of ib_send_bw (after the capture, both devices in auto
mode then; its status in qp_perftest.rc) kept a QP bound; and qp.after,
the same once every QP was gone):
- qp.auto_mode: the set succeeded;
- qp.counted: qp.live shows a counter bound to a QP, with Sends in it
  (what a bound QP does is counted there), ib_send_bw exit 0;
- qp.within_link: no counter value sampled during the capture exceeds
  siw1's final link value minus its value before (the link totals
  include the counters);
- qp.released: no counter is left once the QPs are gone.
siw1's link totals checked against the capture above then include what
its QPs counted while bound: nothing of it may be lost or counted twice.
Prints TAP lines (numbered from FIRST, default 1; no plan) named wireshark_cap.counters.*;
exit status 1 if any failed.
"""

import json
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import iwarp_capture as IC  # noqa: E402
import siwx_wire as W  # noqa: E402

DEVS = ("siw0", "siw1")
CLASSES = {
    W.RDMAP_OP_WRITE: "write",
    W.RDMAP_OP_READ_REQ: "read_req",
    W.RDMAP_OP_READ_RESP: "read_resp",
    W.RDMAP_OP_SEND: "send",
    W.RDMAP_OP_SEND_INV: "send",
    W.RDMAP_OP_SEND_SE: "send",
    W.RDMAP_OP_SEND_SE_INV: "send",
    W.RDMAP_OP_TERMINATE: "terminate",
    W.RDMAP_OP_IMM: "imm",
    W.RDMAP_OP_IMM_SE: "imm",
    W.RDMAP_OP_ATOMIC_REQ: "atomic_req",
    W.RDMAP_OP_ATOMIC_RESP: "atomic_resp",
    W.RDMAP_OP_FLUSH_REQ: "flush_req",
    W.RDMAP_OP_FLUSH_RESP: "flush_resp",
    W.RDMAP_OP_ATOMIC_WRITE_REQ: "atomic_write_req",
    W.RDMAP_OP_ATOMIC_WRITE_RESP: "atomic_write_resp",
}
CLASS_NAMES = sorted(set(CLASSES.values()))


def term_kind(layer, etype):
    if layer == W.TERM_LAYER_RDMAP:
        return {W.RDMAP_ETYPE_CATASTROPHIC: "rdmap_catastrophic",
                W.RDMAP_ETYPE_REMOTE_PROTECTION: "rdmap_protection",
                W.RDMAP_ETYPE_REMOTE_OPERATION: "rdmap_operation"
                }.get(etype, "other")
    if layer == W.TERM_LAYER_DDP:
        return {W.DDP_ETYPE_CATASTROPHIC: "ddp_catastrophic",
                W.DDP_ETYPE_TAGGED_BUF: "ddp_tagged",
                W.DDP_ETYPE_UNTAGGED_BUF: "ddp_untagged"}.get(etype, "other")
    if layer == W.TERM_LAYER_LLP:
        return "llp"
    return "other"


TERM_KINDS = ("rdmap_catastrophic", "rdmap_protection", "rdmap_operation",
              "ddp_catastrophic", "ddp_tagged", "ddp_untagged", "llp",
              "other")


def read_counters(path):
    c = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 2 and p[1].isdigit():
                c[p[0]] = int(p[1])
    return c


class Tally:
    """What the capture shows of one device."""

    def __init__(self):
        z = {k: 0 for k in CLASS_NAMES}
        self.tx_fpdus, self.tx_bytes = dict(z), dict(z)
        self.rx_fpdus, self.rx_bytes = dict(z), dict(z)   # clean conns
        self.rx_more_fpdus, self.rx_more_bytes = dict(z), dict(z)
        self.term_tx = {k: 0 for k in TERM_KINDS}
        self.term_rx_min = {k: 0 for k in TERM_KINDS}
        self.term_rx_max = {k: 0 for k in TERM_KINDS}
        self.mpa = {"mpa_rev1": 0, "mpa_rev2": 0, "mpa_enhanced": 0,
                    "mpa_crc": 0, "mpa_rejects_sent": 0,
                    "mpa_rejects_rcvd": 0, "mpa_rtr_send": 0,
                    "mpa_rtr_write": 0, "mpa_rtr_read": 0}


def tally(pcap, addrs):
    """{dev: Tally} and a list of problems found in the capture itself."""
    t = {d: Tally() for d in DEVS}
    by_addr = {socket.inet_aton(a): d for d, a in addrs.items()}
    probs = []
    fl = IC.flows(pcap)
    ports = sorted({k[3] for k, f in fl.items() if not f.synack})
    seen = set()
    nconn = 0
    for port in ports:
        for key, ifl, rfl in IC.connections(fl, port):
            if key in seen or not ifl.segs:
                continue
            seen.add(key)
            src, _, dst, _ = key
            ini, res = by_addr.get(src), by_addr.get(dst)
            if ini is None or res is None:
                continue
            ib, rb = ifl.stream()[0], rfl.stream()[0]
            req, rl = IC.parse_frame(ib, IC.KEY_REQ)
            rep, pl = IC.parse_frame(rb, IC.KEY_REP)
            if not req or not rep:
                continue
            nconn += 1
            if rep["r"]:
                t[res].mpa["mpa_rejects_sent"] += 1
                t[ini].mpa["mpa_rejects_rcvd"] += 1
                continue
            for d in (ini, res):
                t[d].mpa["mpa_rev1" if rep["rev"] == 1 else "mpa_rev2"] += 1
                if rep["s"]:
                    t[d].mpa["mpa_enhanced"] += 1
                if rep["c"]:
                    t[d].mpa["mpa_crc"] += 1
            # peer-to-peer: the initiator's first FPDU is its RTR
            if rep.get("a"):
                fi = IC.parse_fpdus(ib[rl:])
                k = {W.RDMAP_OP_SEND: "mpa_rtr_send",
                     W.RDMAP_OP_WRITE: "mpa_rtr_write",
                     W.RDMAP_OP_READ_REQ: "mpa_rtr_read"}.get(
                         fi[0]["op"] if fi and not fi[0]["plen"] else None)
                if k:
                    t[ini].mpa[k] += 1
                else:
                    probs.append("%s: peer-to-peer without an RTR" %
                                 IC.endpoint(src, key[1]))
            dirs = []
            for sender, rcvr, data in ((ini, res, ib[rl:]),
                                       (res, ini, rb[pl:])):
                fp = [f for f in IC.frames(data) if f.complete]
                for f in fp:
                    IC.ddp(f)
                if rep["c"]:
                    pr, _ = IC.check_crc(fp, True)
                    probs += ["%s %s->%s: %s" % (IC.endpoint(src, key[1]),
                                                 sender, rcvr, p) for p in pr]
                dirs.append((sender, rcvr, fp))
            terminated = any(f.kind == W.RDMAP_OP_TERMINATE
                             for _, _, fp in dirs for f in fp)
            sent_term = {s: any(f.kind == W.RDMAP_OP_TERMINATE for f in fp)
                         for s, _, fp in dirs}
            for sender, rcvr, fp in dirs:
                for f in fp:
                    if f.kind is None:
                        probs.append("%s: an FPDU with a truncated header"
                                     % IC.endpoint(src, key[1]))
                        continue
                    cls = CLASSES.get(f.kind)
                    if cls is None:
                        probs.append("%s: RDMAP opcode 0x%x" %
                                     (IC.endpoint(src, key[1]), f.kind))
                        continue
                    t[sender].tx_fpdus[cls] += 1
                    t[sender].tx_bytes[cls] += f.mpalen
                    if terminated:
                        t[rcvr].rx_more_fpdus[cls] += 1
                        t[rcvr].rx_more_bytes[cls] += f.mpalen
                    else:
                        t[rcvr].rx_fpdus[cls] += 1
                        t[rcvr].rx_bytes[cls] += f.mpalen
                    if f.kind == W.RDMAP_OP_TERMINATE:
                        k = term_kind(f.layer, f.etype)
                        t[sender].term_tx[k] += 1
                        t[rcvr].term_rx_max[k] += 1
                        if not sent_term[rcvr]:
                            t[rcvr].term_rx_min[k] += 1
    if not nconn:
        probs.append("no MPA connection between %s found in the capture" %
                     " and ".join(addrs.values()))
    return t, probs


def main():
    pcap, d = sys.argv[1], sys.argv[2]
    addrs = {}
    for dev in DEVS:
        with open(os.path.join(d, dev + ".addr")) as f:
            addrs[dev] = f.read().strip()
    n = [int(sys.argv[3]) - 1 if len(sys.argv) > 3 else 0]
    fails = [0]

    def tap(ok, name, detail=""):
        n[0] += 1
        if not ok:
            fails[0] += 1
        print("%s %d wireshark_cap.counters.%s%s" %
              ("ok" if ok else "not ok", n[0], name,
               (": " + detail) if detail else ""))

    t, probs = tally(pcap, addrs)
    tap(not probs, "capture", "; ".join(probs[:5]))
    for dev in DEVS:
        b = read_counters(os.path.join(d, dev + ".before"))
        a = read_counters(os.path.join(d, dev + ".after"))
        tap(bool(a) and set(a) == set(b), "%s.read" % dev,
            "%d counters" % len(a))
        if not a:
            continue

        def delta(name):
            if name not in a or name not in b:
                return None
            return a[name] - b[name]

        x = t[dev]
        for cls in CLASS_NAMES:
            for what, want in (("fpdus", x.tx_fpdus[cls]),
                               ("bytes", x.tx_bytes[cls])):
                name = "tx_%s_%s" % (cls, what)
                got = delta(name)
                tap(got == want, "%s.%s" % (dev, name),
                    "%s (capture %d)" % (got, want))
            for what, lo, more in (("fpdus", x.rx_fpdus[cls],
                                    x.rx_more_fpdus[cls]),
                                   ("bytes", x.rx_bytes[cls],
                                    x.rx_more_bytes[cls])):
                name = "rx_%s_%s" % (cls, what)
                got = delta(name)
                ok = got is not None and lo <= got <= lo + more
                tap(ok, "%s.%s" % (dev, name),
                    "%s (capture %d%s)" % (got, lo, " + up to %d after a "
                                           "Terminate" % more if more else ""))
        for k in TERM_KINDS:
            got = delta("term_tx_" + k)
            tap(got == x.term_tx[k], "%s.term_tx_%s" % (dev, k),
                "%s (capture %d)" % (got, x.term_tx[k]))
            got = delta("term_rx_" + k)
            lo, hi = x.term_rx_min[k], x.term_rx_max[k]
            tap(got is not None and lo <= got <= hi,
                "%s.term_rx_%s" % (dev, k),
                "%s (capture %d..%d)" % (got, lo, hi))
        for k, want in sorted(x.mpa.items()):
            got = delta(k)
            tap(got == want, "%s.%s" % (dev, k),
                "%s (capture %d)" % (got, want))
        got = delta("crc_errors")
        tap(got == 0, "%s.crc_errors" % dev, "%s" % got)
        if dev == DEVS[0]:
            # Documentation/counters.md names every counter
            with open(os.path.join(HERE, "..", "..", "Documentation",
                                   "counters.md")) as f:
                doc = f.read()
            undoc = sorted(k for k in a if "`%s`" % k not in doc and
                           not any("`%s`" % p in doc and k.startswith(
                               ("tx_", "rx_", "term_tx_", "term_rx_")) and
                               p in k for p in CLASS_NAMES + list(TERM_KINDS)))
            tap(not undoc, "documented", "undocumented: %s" % undoc[:8])
        print("# %s: ird_exhausted %s, ord_waits %s, sq_wrs_flushed %s, "
              "rq_wrs_flushed %s" %
              (dev, delta("ird_exhausted"), delta("ord_waits"),
               delta("sq_wrs_flushed"), delta("rq_wrs_flushed")))
        # 'rdma statistic show link' reports the same counters
        try:
            with open(os.path.join(d, dev + ".rdma.json")) as f:
                js = json.load(f)
            r = {}
            for ent in js:
                for k, v in ent.items():
                    if isinstance(v, int) and k not in ("port",):
                        r[k] = v
            missing = sorted(set(a) - set(r))
            differ = sorted(k for k in a if k in r and r[k] != a[k])
            tap(not missing and not differ, "%s.rdma_statistic" % dev,
                "%d counters; missing %s; differ from sysfs %s" %
                (len(r), missing[:5], differ[:5]))
        except (OSError, ValueError) as e:
            tap(False, "%s.rdma_statistic" % dev, str(e))
    check_qp_counters(d, tap)
    return 1 if fails[0] else 0


def read_qp_samples(path):
    """'rdma statistic qp show' text, samples separated by '--' lines:
    a list of samples, each a list of (link, {counter: value}, [lqpn])"""
    samples, cur = [], []
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.strip() == "--":
            samples.append(cur)
            cur = []
        elif line.startswith("link "):
            w = line.split()
            vals = {}
            for i in range(6, len(w) - 1, 2):
                try:
                    vals[w[i]] = int(w[i + 1])
                except ValueError:
                    pass
            cur.append((w[1], vals, []))
        elif "LQPN:" in line and cur:
            cur[-1][2].extend(x for x in line.split("<")[1].split(">")[0]
                              .split(",") if x.strip())
    if cur:
        samples.append(cur)
    return samples


def check_qp_counters(d, tap):
    try:
        with open(os.path.join(d, "qp_auto.rc")) as f:
            rc = f.read().strip()
    except OSError:
        rc = "missing"
    tap(rc == "0", "qp.auto_mode", "rdma statistic qp set ... auto: %s" % rc)
    def bound(samples, links):
        return [(v, q) for s in samples for link, v, q in s
                if link in links and q and
                sum(x for k, x in v.items() if k.endswith("_fpdus")) > 0]
    live = bound(read_qp_samples(os.path.join(d, "qp.live")) or [],
                 ("siw0/1", "siw1/1"))
    try:
        with open(os.path.join(d, "qp_perftest.rc")) as f:
            prc = f.read().strip()
    except OSError:
        prc = "missing"
    sends = [v.get("tx_send_fpdus", 0) + v.get("rx_send_fpdus", 0)
             for v, _ in live]
    tap(bool(live) and max(sends) > 0 and prc == "0", "qp.counted",
        "a bound QP with %s Sends counted (ib_send_bw exit %s)" %
        (max(sends) if sends else "no", prc))
    samples = read_qp_samples(os.path.join(d, "qp.samples")) or []
    seen = bound(samples, ("siw1/1",))
    print("# qp: %d samples during the capture, %d with a bound siw1 QP "
          "that counted FPDUs" % (len(samples), len(seen)))
    b = read_counters(os.path.join(d, "siw1.before"))
    a = read_counters(os.path.join(d, "siw1.after"))
    over = sorted({k for v, _ in seen for k, x in v.items()
                   if k in a and k in b and x > a[k] - b[k]})
    tap(not over, "qp.within_link",
        "counters above the link total: %s" % over[:5])
    after = read_qp_samples(os.path.join(d, "qp.after"))
    left = [x for s in (after or []) for x in s]
    tap(after is not None and not left, "qp.released",
        "%d counters left" % len(left))


if __name__ == "__main__":
    sys.exit(main())
