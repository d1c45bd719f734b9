#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
mpa_suite.py - RFC 6581 enhanced MPA connection setup, single VM. TAP.

    mpa_suite.py [-l] [NAME-REGEX]

Part 1, the matrix: siwx <-> siwx over the siw0 loopback, driven through
rdma_cm by selftests/mpa/mpa_conn, for combinations of model
(client-server, peer-to-peer), RTR types offered and accepted, IRD/ORD
values (0, 1, 4, 128 = device max, 0x3FFF) and negotiation modes
(relaxed, strict, ulp), set through the module parameters. Every case
computes its expectation from an independent model of the RFC 6581 rules
(model() below) and asserts:
  - what each ULP saw: events, status, the IRD/ORD the CM events carry,
    accept's return value, that ULP traffic (Send, Reads up to ORD, Write)
    works and that the RTR produced no completion;
  - what `rdma -dd resource show qp` reports for both QPs;
  - the wire: the MPA Request and Reply (Rev, S, A/B/C/D, IRD, ORD) and the
    RTR or Terminate, decoded from a capture by ../lib/iwarp_capture.py.

Part 2, crafted frames: tools/mpa-peer as initiator against an mpa_conn
server, and as responder (--listen) against an mpa_conn client, for what
no real peer sends: bad Key, Rev 0/3, S with short private data, A without
RTR type, oversized private data, 0x3FFF, garbage after the Reply, a wrong
or missing RTR, closing on the enhanced Request (with and without the
revision 1 retry). Each gets the answer of Documentation/rfc6581.md.

Part 3: no Oops/WARNING/BUG in dmesg, refusals logged (rate limited).

Environment: SIWX_BIN (mpa_conn), SIWX_MPA_PEER, SIWX_ADDR0/1, SIWX_NETNS1,
SIWX_NETDEV0, SIWX_RESULTS,
SIWX_MPA_JOBS (raw peer cases with default parameters run at a time: 3).
"""
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import iwarp_capture  # noqa: E402
from kernel_problems import PROBLEMS  # noqa: E402
import siwx_wire as W  # noqa: E402

BIN = os.environ.get("SIWX_BIN", os.path.join(TOP, "build/selftests/bin"))
MPA_CONN = os.path.join(BIN, "mpa_conn")
PEER = os.environ.get("SIWX_MPA_PEER",
                      os.path.join(TOP, "build/tools/mpa-peer/mpa-peer"))
A0 = os.environ.get("SIWX_ADDR0", "192.168.77.1")
A1 = os.environ.get("SIWX_ADDR1", "192.168.77.2")
# siw1 and A1 in a namespace of their own (tools/vm/run --netns): the
# clients are there (mpa_conn enters it for --src A1, mpa-peer is started
# in it), so every connection crosses the veth pair, captured on veth0
NETNS = os.environ.get("SIWX_NETNS1", "")
IN_NS = ["ip", "netns", "exec", NETNS] if NETNS else []
IFACE = os.environ.get("SIWX_NETDEV0", "veth0") if NETNS else "lo"
OUT = os.path.join(os.environ.get("SIWX_RESULTS", "/tmp"), "mpa")
# raw peer cases with the default parameters run this many at a time
JOBS = max(1, int(os.environ.get("SIWX_MPA_JOBS", "3")))
PARAMS = "/sys/module/siw/parameters"
MAXV = 128                      # siw device max_qp_rd_atom / init_rd_atom
NONEG = W.MPA_V2_NO_NEGOTIATION
DEFAULTS = {"mpa_rev": "2", "mpa_p2p": "0", "mpa_rtr_offer": "write,read",
            "mpa_rtr_accept": "send,write,read", "mpa_ird_ord": "relaxed",
            "mpa_rev1_retry": "0", "mpa_crc": "0", "mpa_crc_strict": "0"}
RTR_OP = {"write": W.RDMAP_OP_WRITE, "read": W.RDMAP_OP_READ_REQ,
          "send": W.RDMAP_OP_SEND}
RTR_LEN = {"write": W.DDP_TAGGED_HDR_SIZE,      # ULPDU of a zero-length RTR
           "read": W.DDP_UNTAGGED_HDR_SIZE + W.RDMAP_READ_REQ_SIZE,
           "send": W.DDP_UNTAGGED_HDR_SIZE}

# ---------------------------------------------------------------- TAP

NTEST = 0
FAILED = 0


def tap(ok, name, diag=()):
    global NTEST, FAILED
    NTEST += 1
    if not ok:
        FAILED += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", NTEST, name))
    if not ok:
        for d in diag:
            for line in str(d).splitlines():
                print("#   " + line)
    sys.stdout.flush()


def note(msg):
    print("# " + msg)
    sys.stdout.flush()


# ---------------------------------------------------------------- helpers

def set_params(over):
    vals = dict(DEFAULTS)
    vals.update(over)
    for k, v in vals.items():
        if k.startswith("_"):       # the case's own, not a parameter
            continue
        with open(os.path.join(PARAMS, k), "w") as f:
            f.write(str(v))


def read_lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def wait_for(path, pattern, timeout):
    end = time.time() + timeout
    rx = re.compile(pattern)
    while time.time() < end:
        if any(rx.search(ln) for ln in read_lines(path)):
            return True
        time.sleep(0.05)
    return False


def parse_conn(lines, role):
    """mpa_conn output: events, accept rc, qpn, traffic."""
    r = {"events": [], "accept": None, "connect": None, "qpn": None,
         "dev": None,
         "traffic": None, "unexpected": []}
    for ln in lines:
        m = re.match(r"%s event=(\S+) status=(-?\d+) initiator_depth=(\d+) "
                     r"responder_resources=(\d+)" % role, ln)
        if m:
            r["events"].append((m.group(1), int(m.group(2)),
                                int(m.group(3)), int(m.group(4))))
        m = re.match(r"server accept rc=(-?\d+)", ln)
        if m:
            r["accept"] = int(m.group(1))
        m = re.match(r"client connect rc=(-?\d+)", ln)
        if m:
            r["connect"] = int(m.group(1))
        m = re.match(r"%s qpn=(\d+)" % role, ln)
        if m:
            r["qpn"] = int(m.group(1))
        m = re.match(r"%s dev=(\S+)" % role, ln)
        if m:
            r["dev"] = m.group(1)
        if re.match(r"%s traffic ok" % role, ln):
            r["traffic"] = ln
        elif re.match(r"%s traffic failed" % role, ln):
            r["traffic"] = False
        if "unexpected completion" in ln:
            r["unexpected"].append(ln)
    return r


def event(r, name):
    return next((e for e in r["events"] if e[0] == name), None)


RES_KEYS = ("lqpn", "state", "mpa-role", "mpa-rev", "mpa-enhanced",
            "mpa-model", "mpa-rtr", "mpa-crc", "ird", "ord")


def rdma_res():
    """{(device, lqpn): {key: value}} from `rdma -dd resource show qp`
    (the two ends are on two devices, siw0 and siw1, each with QP
    numbers of its own, when the client runs in siw1's namespace)."""
    try:
        out = subprocess.run(["rdma", "-dd", "resource", "show", "qp"],
                             capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    qps = {}
    for rec in re.split(r"\n(?=link )", out):
        tok = rec.split()
        d = {}
        for i, t in enumerate(tok[:-1]):
            # driver details come as drv_NAME VALUE
            t = t[4:] if t.startswith("drv_") else t
            if t in RES_KEYS and t not in d:
                d[t] = tok[i + 1]
        if "lqpn" in d and len(tok) > 1:
            qps[(tok[1].split("/")[0], int(d["lqpn"]))] = d
    return qps


class Capture:
    def __init__(self, path, ports):
        self.path = path
        self.proc = subprocess.Popen(
            ["tcpdump", "-i", IFACE, "-U", "-n", "-s", "1024", "-w", path,
             "tcp portrange %d-%d" % ports],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # tcpdump says "listening on" once it captures
        end = time.time() + 20
        self.ok = False
        while time.time() < end:
            line = self.proc.stderr.readline()
            if "listening on" in line:
                self.ok = True
                break
            if not line and self.proc.poll() is not None:
                break

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def run_conn(name, port, srv, cli, hold=1500, query=True, srv_first=True,
             later=False):
    """One connection between mpa_conn server and client. later: return
    once both ends have their QP and rdma res is read (the connection has
    taken its snapshot of the parameters), with a function that waits for
    the rest and returns the result."""
    sout = os.path.join(OUT, name + ".srv")
    cout = os.path.join(OUT, name + ".cli")
    sp = subprocess.Popen([MPA_CONN, "server", "--addr", A0, "--port",
                           str(port), "--hold-ms", str(hold),
                           "--timeout-ms", "20000"] + srv,
                          stdout=open(sout, "w"), stderr=subprocess.STDOUT)
    wait_for(sout, r"server listen", 10)
    cp = subprocess.Popen([MPA_CONN, "client", "--addr", A0, "--src", A1,
                           "--port",
                           str(port), "--hold-ms", str(hold),
                           "--timeout-ms", "20000"] + cli,
                          stdout=open(cout, "w"), stderr=subprocess.STDOUT)
    res = {}
    if query:
        end = time.time() + 30
        while time.time() < end:
            s_l, c_l = read_lines(sout), read_lines(cout)
            s_ready = any("server qpn=" in x for x in s_l) or sp.poll() \
                is not None
            c_ready = any("client qpn=" in x for x in c_l) or cp.poll() \
                is not None
            if s_ready and c_ready:
                break
            time.sleep(0.05)
        res = rdma_res()

    def finish():
        for p in (cp, sp):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return {"srv": parse_conn(read_lines(sout), "server"),
                "cli": parse_conn(read_lines(cout), "client"),
                "src": sp.returncode, "crc": cp.returncode, "res": res,
                "raw": ["server:"] + read_lines(sout) + ["client:"] +
                read_lines(cout)}
    return finish if later else finish()


# ---------------------------------------------------------------- model

def rtr_set(s):
    return set() if s in ("", "none") else set(s.split(","))


def model(c):
    """Expected outcome of a matrix case from the RFC 6581 rules."""
    p = dict(DEFAULTS)
    p.update(c["params"])
    mode, p2p = p["mpa_ird_ord"], p["mpa_p2p"] == "1"
    rev = int(p["mpa_rev"])
    ci, co = c["cli"]
    si, so = c["srv"]
    offer, accept = rtr_set(p["mpa_rtr_offer"]), rtr_set(p["mpa_rtr_accept"])
    p2p = p2p and rev == 2
    enh = rev == 2 and (p2p or mode != "ulp")
    e = {"enh": enh, "p2p": p2p, "rev": 2 if enh else 1}
    if p2p:
        if co == 0:
            offer = offer - {"read"}
        if not offer:
            e["result"] = "connect_einval"
            return e
        if not accept:
            e["result"] = "rejected"
            return e
    if not enh:
        e.update(result="ok", req_ev=(0, 0), c_loc=(ci, co), s_loc=(si, so),
                 rtr=None)
        return e
    req_i = NONEG if mode == "ulp" else ci
    req_o = NONEG if mode == "ulp" else co
    e["req"] = (req_i, req_o)
    e["req_ev"] = (min(req_i, MAXV), min(req_o, MAXV))
    insufficient = False
    if req_i == NONEG:
        rep_o, s_o = NONEG, so
    else:
        s_o = so
        if so > req_i:
            insufficient = mode == "strict"
            s_o = req_i
        rep_o = s_o
    if req_o == NONEG:
        rep_i, s_i = NONEG, si
    else:
        s_i = si
        if si < req_o and mode == "relaxed":
            s_i = min(req_o, MAXV)
        rep_i = s_i
    e["rep"] = (rep_i, rep_o)
    e["s_loc"] = (s_i, s_o)
    if p2p:
        rset = set(accept)
        if s_i == 0:
            rset.discard("read")
        if rset & offer:
            rset &= offer
        if not rset:
            rset = set(accept)
        e["rep_rtr"] = rset
    if insufficient:
        e["result"] = "responder_term6"
        return e
    c_i = ci
    if rep_o != NONEG and ci < rep_o:
        if mode == "strict" or rep_o > MAXV:
            e["result"] = "initiator_term6"
            return e
        c_i = rep_o
    c_o = co if rep_i == NONEG else min(co, rep_i)
    e["c_loc"] = (c_i, c_o)
    e["rtr"] = None
    if p2p:
        cand = e["rep_rtr"] & offer
        if c_o == 0:
            cand.discard("read")
        pick = next((t for t in ("write", "send", "read") if t in cand),
                    None)
        if not pick:
            e["result"] = "term7"
            return e
        e["rtr"] = pick
    e["result"] = "ok"
    return e


# ---------------------------------------------------------------- matrix

def mcase(name, params=None, cli=(4, 4), srv=(4, 4), extra=()):
    return {"name": name, "params": params or {}, "cli": cli, "srv": srv,
            "extra": list(extra)}


P2P = {"mpa_p2p": "1"}


def p2p(offer, accept="send,write,read", **kw):
    d = dict(P2P, mpa_rtr_offer=offer, mpa_rtr_accept=accept)
    d.update(kw)
    return d


MATRIX = [
    mcase("cs.relaxed.4_4"),
    mcase("cs.relaxed.zero", cli=(0, 0), srv=(0, 0)),
    mcase("cs.relaxed.one_vs_max", cli=(1, 1), srv=(MAXV, MAXV)),
    mcase("cs.relaxed.max_vs_one", cli=(MAXV, MAXV), srv=(1, 1)),
    mcase("cs.relaxed.crossed", cli=(0, 4), srv=(0, 4)),
    mcase("cs.strict.fits", {"mpa_ird_ord": "strict"}),
    mcase("cs.strict.too_small", {"mpa_ird_ord": "strict"}, cli=(1, 4),
          srv=(4, 4)),
    mcase("cs.strict.no_raise", {"mpa_ird_ord": "strict"}, cli=(4, 8),
          srv=(2, 2)),
    mcase("cs.ulp.rev1", {"mpa_ird_ord": "ulp"}, cli=(3, 5), srv=(5, 3)),
    mcase("cs.rev1", {"mpa_rev": "1"}),
    mcase("cs.rev1_ignores_p2p", {"mpa_rev": "1", "mpa_p2p": "1"}),
    mcase("cs.crc", {"mpa_crc": "1"}),
    mcase("p2p.ulp.noneg", p2p("write", mpa_ird_ord="ulp"), cli=(3, 5),
          srv=(5, 3)),
    mcase("p2p.write", p2p("write")),
    mcase("p2p.send", p2p("send")),
    mcase("p2p.read", p2p("read")),
    mcase("p2p.all.prefers_write", p2p("send,write,read")),
    mcase("p2p.send_read.prefers_send", p2p("send,read")),
    mcase("p2p.read.accept_send_read", p2p("read", "send,read")),
    mcase("p2p.send.sig_all", p2p("send"), extra=["--sig-all"]),
    mcase("p2p.read.crc", p2p("read", mpa_crc="1")),
    mcase("p2p.write.zero", p2p("write"), cli=(0, 0), srv=(0, 0)),
    mcase("p2p.read.max", p2p("read"), cli=(MAXV, MAXV), srv=(MAXV, MAXV)),
    mcase("p2p.strict.too_small", p2p("write", mpa_ird_ord="strict"),
          cli=(1, 4), srv=(4, 4)),
    mcase("p2p.nomatch.send_vs_write", p2p("send", "write")),
    mcase("p2p.nomatch.read_needs_ord", p2p("write,read", "read"),
          cli=(4, 0)),
    mcase("p2p.nomatch.read_needs_ird", p2p("read", mpa_ird_ord="strict"),
          srv=(0, 4)),
    mcase("p2p.read_only_ord0", p2p("read", "read"), cli=(4, 0)),
    mcase("p2p.accept_none", p2p("write", "none")),
]


def check_matrix_case(c, r, wire, port):
    e = model(c)
    name = "matrix." + c["name"]
    diag = ["expected: %r" % e] + r["raw"]
    sv, cl = r["srv"], r["cli"]
    res = e["result"]

    if res == "connect_einval":
        tap(cl["connect"] == -22, name + ".connect_refused_locally", diag)
        return
    if res == "rejected":
        ev = event(cl, "REJECTED")
        tap(ev is not None and sv["accept"] is None, name + ".rejected",
            diag)
        w = wire[0] if wire else None
        tap(w is not None and w["rep"] is not None and w["rep"]["r"] == 1,
            name + ".wire_reply_r", diag + ["wire: %r" % wire])
        return

    # the responder's view of the Request
    ev = event(sv, "CONNECT_REQUEST")
    tap(ev is not None and (ev[2], ev[3]) == e["req_ev"],
        name + ".request_event_values", diag)

    if res == "ok":
        ce, se = event(cl, "ESTABLISHED"), event(sv, "ESTABLISHED")
        tap(sv["accept"] == 0 and ce is not None and se is not None and
            ce[1] == 0 and se[1] == 0, name + ".established", diag)
        tap(ce is not None and (ce[2], ce[3]) == e["c_loc"],
            name + ".initiator_ird_ord", diag)
        tap(se is not None and (se[2], se[3]) == e["s_loc"],
            name + ".responder_ird_ord", diag)
        tap(bool(cl["traffic"]) and bool(sv["traffic"]) and
            not cl["unexpected"] and not sv["unexpected"],
            name + ".traffic_no_rtr_completion", diag)
        q = r["res"]
        cq = q.get((cl["dev"], cl["qpn"]), {})
        sq = q.get((sv["dev"], sv["qpn"]), {})
        want_rtr = e["rtr"] or "none"
        good = (cq.get("mpa-role") == "initiator" and
                sq.get("mpa-role") == "responder" and
                cq.get("mpa-rev") == str(e["rev"]) and
                cq.get("mpa-enhanced") == str(int(e["enh"])) and
                cq.get("mpa-model") == ("peer-to-peer" if e["p2p"] else
                                        "client-server") and
                cq.get("mpa-rtr") == want_rtr and
                sq.get("mpa-rtr") == want_rtr and
                (cq.get("ird"), cq.get("ord")) ==
                tuple(str(x) for x in e["c_loc"]) and
                (sq.get("ird"), sq.get("ord")) ==
                tuple(str(x) for x in e["s_loc"]))
        tap(good, name + ".rdma_resource", diag + ["rdma res: %r" % q])
    elif res == "responder_term6":
        tap(sv["accept"] == -12, name + ".accept_enomem", diag)
        tap(cl["traffic"] is not True and not str(cl["traffic"]).startswith(
            "client traffic ok"), name + ".initiator_not_usable", diag)
    elif res == "term7":
        ce = event(cl, "CONNECT_ERROR")
        tap(ce is not None and ce[1] == -95, name + ".connect_error_eopnotsupp",
            diag)
        se = event(sv, "ESTABLISHED")
        tap(se is None or se[1] != 0, name + ".responder_not_established",
            diag)

    # the wire
    w = wire[0] if len(wire) == 1 else None
    wd = diag + ["wire (port %d): %r" % (port, wire)]
    if w is None or not w["req"] or not w["rep"]:
        tap(False, name + ".wire", wd)
        return
    rq, rp = w["req"], w["rep"]
    good = rq["rev"] == e["rev"] and rq["s"] == int(e["enh"])
    if e["enh"]:
        good = good and (rq.get("ird"), rq.get("ord")) == e["req"] and \
            rq.get("a") == int(e["p2p"])
        if e["p2p"]:
            off = rtr_set(dict(DEFAULTS, **c["params"])["mpa_rtr_offer"])
            if c["cli"][1] == 0:
                off.discard("read")
            good = good and (rq["b"], rq["c_rtr"], rq["d_rtr"]) == (
                int("send" in off), int("write" in off), int("read" in off))
    tap(good, name + ".wire_request", wd)
    good = rp["rev"] == e["rev"] and rp["s"] == int(e["enh"]) and rp["r"] == 0
    if e["enh"]:
        good = good and (rp.get("ird"), rp.get("ord")) == e["rep"] and \
            rp.get("a") == int(e["p2p"])
        if e["p2p"]:
            rs = e["rep_rtr"]
            good = good and (rp["b"], rp["c_rtr"], rp["d_rtr"]) == (
                int("send" in rs), int("write" in rs), int("read" in rs))
    tap(good, name + ".wire_reply", wd)
    if res == "ok" and e["rtr"]:
        t = e["rtr"]
        d = w["rtr"]
        good = d is not None and d["op"] == RTR_OP[t] and \
            d["len"] == RTR_LEN[t] and d.get("size", 0) == 0 and \
            (t == "write" or d.get("msn") == 1)
        tap(good, name + ".wire_rtr_" + t, wd)
    elif res == "ok":
        # client-server: the first FPDU is the ULP's 64-byte Send
        d = w["rtr"]
        tap(d is not None and d["op"] == W.RDMAP_OP_SEND and
            d["len"] == RTR_LEN["send"] + 64, name + ".wire_no_rtr", wd)
    if res == "term7":
        t = w["term_i"]
        tap(t is not None and (t["layer"], t["etype"], t["code"]) ==
            T_NO_RTR, name + ".wire_term_%d_%d_%d" % T_NO_RTR, wd)
    if res == "responder_term6":
        t = w["term_r"]
        tap(t is not None and (t["layer"], t["etype"], t["code"]) ==
            T_IRD, name + ".wire_term_%d_%d_%d" % T_IRD, wd)


def run_matrix(sel):
    base = 52000
    cases = [c for c in MATRIX if sel.search("matrix." + c["name"])]
    if not cases:
        return
    pcap = os.path.join(OUT, "matrix.pcap")
    cap = Capture(pcap, (base, base + len(MATRIX)))
    tap(cap.ok, "matrix.capture_started")
    # the next case starts while the last one holds its connection: each
    # connection has taken its parameters once both ends have a QP
    pending = []
    for c in cases:
        port = base + MATRIX.index(c)
        set_params(c["params"])
        fin = run_conn("matrix." + c["name"], port,
                       ["--ird", str(c["srv"][0]), "--ord", str(c["srv"][1])] +
                       c["extra"],
                       ["--ird", str(c["cli"][0]), "--ord", str(c["cli"][1])] +
                       c["extra"], later=True)
        pending.append((c, fin, port))
    set_params({})
    results = [(c, fin(), port) for c, fin, port in pending]
    time.sleep(0.5)
    cap.stop()
    for c, r, port in results:
        try:
            wire = iwarp_capture.decode(pcap, port)
        except Exception as ex:       # a broken capture fails the case
            wire = []
            note("decode %s: %r" % (c["name"], ex))
        check_matrix_case(c, r, wire, port)


# ---------------------------------------------------------------- raw peers

def peer_initiator(name, port, peer_args, srv_args=(), params=None,
                   steps=(), srv_timeout=12000, no_request=False):
    """mpa-peer as initiator against an mpa_conn server. no_request: the
    server must never see a connection request; once mpa-peer is done
    (refused), it gets 1 s to show one and is then stopped instead of
    waiting out its timeout."""
    set_params(params or {})
    sout = os.path.join(OUT, name + ".srv")
    sp = subprocess.Popen([MPA_CONN, "server", "--addr", A0, "--port",
                           str(port), "--no-traffic", "--timeout-ms",
                           str(srv_timeout)] + list(srv_args),
                          stdout=open(sout, "w"), stderr=subprocess.STDOUT)
    wait_for(sout, r"server listen", 10)
    # --delay 0: the RTR or first FPDU right behind the Reply (patch 0024)
    pp = subprocess.run(IN_NS + [PEER, "--timeout", "8000", "--rx-ms", "2500",
                         "--delay", "0"] +
                        list(peer_args) + [A0, str(port)] + list(steps),
                        capture_output=True, text=True, timeout=60)
    try:
        if no_request:
            try:
                sp.wait(timeout=1)
            except subprocess.TimeoutExpired:
                sp.terminate()
        sp.wait(timeout=srv_timeout / 1000 + 30)
    except subprocess.TimeoutExpired:
        sp.kill()
        sp.wait()
    set_params({})
    return pp.stdout.splitlines() + pp.stderr.splitlines(), \
        read_lines(sout)


def peer_responder(name, port, peer_args, cli_args=(), params=None,
                   steps=()):
    """mpa-peer --listen as responder for an mpa_conn client."""
    set_params(params or {})
    netem = (params or {}).get("_netem")
    if netem:
        # on the peer's way to the client (IFACE carries both directions)
        subprocess.run(["tc", "qdisc", "replace", "dev", IFACE, "root",
                        "netem"] + netem.split(), check=True, timeout=20)
    try:
        return _peer_responder(name, port, peer_args, cli_args, steps)
    finally:
        if netem:
            subprocess.run(["tc", "qdisc", "del", "dev", IFACE, "root"],
                           timeout=20)
        set_params({})


def _peer_responder(name, port, peer_args, cli_args, steps):
    pout = os.path.join(OUT, name + ".peer")
    pp = subprocess.Popen([PEER, "--listen", "--timeout", "10000",
                           "--rx-ms", "2500"] + list(peer_args) +
                          [A0, str(port)] + list(steps),
                          stdout=open(pout, "w"), stderr=subprocess.STDOUT)
    wait_for(pout, r"^listening ", 10)
    cp = subprocess.run([MPA_CONN, "client", "--addr", A0, "--src", A1,
                         "--port",
                         str(port), "--no-traffic", "--hold-ms", "300",
                         "--timeout-ms", "15000"] + list(cli_args),
                        capture_output=True, text=True, timeout=60)
    try:
        pp.wait(timeout=40)
    except subprocess.TimeoutExpired:
        pp.kill()
        pp.wait()
    return read_lines(pout), cp.stdout.splitlines()


def expect_lines(name, lines, pats, diag):
    """Every pattern (regex; '!' prefix: must not match) against lines."""
    ok = True
    for p in pats:
        neg = p.startswith("!")
        rx = re.compile(p[1:] if neg else p)
        hit = any(rx.search(ln) for ln in lines)
        if hit == neg:
            ok = False
            diag = diag + ["pattern %r %s" % (p, "matched" if neg else
                                              "did not match")]
    tap(ok, name, diag)


KEYHEX = W.KEY_REQ.hex()
# the MPA-layer Terminates of RFC 6581 (Layer, EType, Code)
T_INVALID = (W.TERM_LAYER_LLP, W.LLP_ETYPE_MPA, W.LLP_ECODE_INVALID_REQ_RESP)
T_IRD = (W.TERM_LAYER_LLP, W.LLP_ETYPE_MPA, W.LLP_ECODE_INSUFFICIENT_IRD)
T_NO_RTR = (W.TERM_LAYER_LLP, W.LLP_ETYPE_MPA, W.LLP_ECODE_NO_MATCHING_RTR)
RX_TERM = r"rx opcode=0x%x" % W.RDMAP_OP_TERMINATE   # mpa-peer's rx line
NO_TERM = "!" + RX_TERM
TERM = RX_TERM + r" term .*layer=%d etype=%d code=0x%02x"

# name, mpa-peer options, server options, params, steps, peer expectations,
# server expectations
INITIATOR_CASES = [
    ("bad_key", ["--req-hex", "MPA ID Bad Frame".encode().hex() + "10020004"
                 "00040004"], [], None, [],
     [r"no-reply", r"closed"], [r"!CONNECT_REQUEST"]),
    ("rev0", ["--rev", "0", "--no-enhanced"], [], None, [],
     [r"no-reply", r"closed"], [r"!CONNECT_REQUEST"]),
    ("rev3", ["--rev", "3"], [], None, [],
     [r"no-reply", r"closed"], [r"!CONNECT_REQUEST"]),
    ("s_rev1", ["--rev", "1", "--flags", "0x10", "--no-enhanced",
                "--pdata", "00040004"], [], None, [],
     [r"reply rev=1 .*r=1", r"rejected"], [r"!CONNECT_REQUEST"]),
    ("s_short_pdata", ["--req-hex", KEYHEX + "100200020004"], [], None, [],
     [r"reply rev=2 .*r=1 s=0", r"rejected"], [r"!CONNECT_REQUEST"]),
    ("a_without_rtr", ["--p2p", "--rtr", "none"], [], None, [],
     [r"reply rev=2 .*r=1 s=0", r"rejected"], [r"!CONNECT_REQUEST"]),
    ("rtr_flags_without_a", ["--ird-word", "0x0004", "--ord-word", "0x8004"],
     [], None, [],
     [r"reply rev=2 .*r=1 s=0", r"rejected"], [r"!CONNECT_REQUEST"]),
    ("pdata_over_512", ["--no-enhanced", "--pd-len", "600"], [], None, [],
     [r"no-reply", r"closed"], [r"!CONNECT_REQUEST"]),
    ("pdata_over_iwcm", ["--pdata", "41" * 300], [], None, [],
     [r"reply rev=2 .*r=1", r"rejected"], [r"!CONNECT_REQUEST"]),
    ("garbage_after_request", ["--req-hex", KEYHEX + "10020004000400040011"
                               "2233"], [], None, [],
     [r"no-reply|closed"], [r"!CONNECT_REQUEST"]),
    ("noneg_echo", ["--ird-word", "0x3fff", "--ord-word", "0x3fff"],
     ["--ird", "3", "--ord", "5"], None, [],
     [r"reply rev=2 .* s=1 .*ird_word=0x3fff ord_word=0x3fff"],
     [r"CONNECT_REQUEST status=0 initiator_depth=128 responder_resources=128",
      r"ESTABLISHED status=0 initiator_depth=3 responder_resources=5"]),
    ("noneg_ird_only", ["--ird-word", "0x3fff", "--ord", "2"],
     ["--ird", "1", "--ord", "5"], None, [],
     [r"reply rev=2 .*ird_word=0x0002 ord_word=0x3fff"],
     [r"ESTABLISHED status=0 initiator_depth=2 responder_resources=5"]),
    ("rtr_wrong_type", ["--p2p", "--rtr", "send,write", "--send-rtr", "send"],
     [], {"mpa_rtr_accept": "write"}, [],
     [TERM % T_NO_RTR], [r"ESTABLISHED status=-104"]),
    ("rtr_with_payload", ["--p2p", "--rtr", "write", "--send-rtr", "none"],
     [], None, ["write stag=1 to=0 data=00112233"],
     [TERM % T_NO_RTR], [r"ESTABLISHED status=-104"]),
    ("rtr_read_nonzero", ["--p2p", "--rtr", "read", "--send-rtr", "none"],
     [], None, ["read_req sink_stag=1 sink_to=0 size=8 src_stag=1 src_to=0"],
     [TERM % T_NO_RTR], [r"ESTABLISHED status=-104"]),
    ("rtr_send_crc", ["--p2p", "--rtr", "send", "--crc"], [], None,
     ["send data=00112233"], [r"reply rev=2 .*c=1", NO_TERM],
     [r"ESTABLISHED status=0"]),
    ("ord_above_ird_strict_crc", ["--crc", "--ird", "1"], ["--ord", "4"],
     {"mpa_ird_ord": "strict"}, [],
     [r"reply rev=2 .*c=1 .*ird=4 ord=1", TERM % T_IRD + r".*crc=ok"],
     [r"server accept rc=-12"]),
    ("rtr_missing_times_out", ["--p2p", "--rtr", "write", "--send-rtr",
                               "none", "--rx-ms", "13000"], [], None, [],
     [r"closed|reset"], [r"ESTABLISHED status=-104", r"DISCONNECTED"]),
]

RESPONDER_CASES = [
    ("bad_key", ["--key", "MPA ID Bad Frame"], [], None,
     [TERM % T_INVALID], [r"event=CONNECT_ERROR status=-71"]),
    ("rev3", ["--rev", "3"], [], None,
     [TERM % T_INVALID], [r"event=CONNECT_ERROR status=-71"]),
    ("s_short", ["--reply-hex", W.KEY_REP.hex() + "100200020004"], [], None,
     [TERM % T_INVALID], [r"event=CONNECT_ERROR status=-71"]),
    ("s_to_rev1_request", ["--enhanced", "--rev", "1"], [],
     {"mpa_ird_ord": "ulp"}, [TERM % T_INVALID],
     [r"event=CONNECT_ERROR status=-71"]),
    ("p2p_answered_cs", ["--no-p2p"], [], {"mpa_p2p": "1"},
     [TERM % T_NO_RTR], [r"event=CONNECT_ERROR status=-95"]),
    ("a_without_rtr", ["--rtr", "none"], [], {"mpa_p2p": "1"},
     [TERM % T_NO_RTR], [r"event=CONNECT_ERROR status=-95"]),
    ("no_common_rtr_crc", ["--rtr", "send", "--crc"], [],
     {"mpa_p2p": "1", "mpa_rtr_offer": "write,read"},
     [TERM % T_NO_RTR + r".*crc=ok"], [r"event=CONNECT_ERROR status=-95"]),
    ("ord_above_ird_strict", ["--ord", "9"], ["--ird", "2"],
     {"mpa_ird_ord": "strict"}, [TERM % T_IRD],
     [r"event=CONNECT_ERROR status=-12"]),
    ("ord_above_ird_relaxed", ["--ord", "9"], ["--ird", "2", "--ord", "3"],
     None, [NO_TERM],
     [r"event=ESTABLISHED status=0 initiator_depth=9 responder_resources=3"]),
    ("ord_above_device_max", ["--ord", "200"], ["--ird", "2"], None,
     [TERM % T_IRD], [r"event=CONNECT_ERROR status=-12"]),
    ("ird_lowers_ord", ["--ird", "1"], ["--ird", "4", "--ord", "6"], None,
     [NO_TERM],
     [r"event=ESTABLISHED status=0 initiator_depth=4 responder_resources=1"]),
    ("noneg_echo", ["--ird-word", "0xbfff", "--ord-word", "0xbfff"],
     ["--ird", "3", "--ord", "5"], {"mpa_ird_ord": "ulp", "mpa_p2p": "1",
                                    "mpa_rtr_offer": "write"},
     [r"request rev=2 .*ird_word=0xbfff ord_word=0xbfff",
      r"rx opcode=0x%x write len=14" % W.RDMAP_OP_WRITE],
     [r"event=ESTABLISHED status=0 initiator_depth=3 responder_resources=5"]),
    ("garbage_after_reply", ["--garbage", "0011" + "22" * 30], [], None,
     [RX_TERM + " term"], [r"event=ESTABLISHED status=0",
                           r"event=DISCONNECTED"]),
    ("reject", ["--reject"], [], None, [r"!rx opcode"],
     [r"event=REJECTED status=-104"]),
    ("close_on_enhanced", ["--close-on-enhanced"], [], None,
     [r"closing on enhanced request"], [r"event=REJECTED status=-104"]),
    ("close_on_enhanced_retry", ["--close-on-enhanced", "--accept-count",
                                 "2"], ["--pdata", "hello"],
     {"mpa_rev1_retry": "1"},
     [r"^conn 2", r"request rev=1 flags=0x00 .*s=0 pd_len=5 .*"
      r"pdata=68656c6c6f"], [r"event=ESTABLISHED status=0"]),
    # the same with the peer's packets delayed: the first connection is
    # still in LAST_ACK (its four-tuple taken) when the retry connects, as
    # it was once in CI when the peer's ACK came late (connect() from the
    # same port failed with EADDRNOTAVAIL: no retry, REJECTED -104)
    ("close_on_enhanced_retry_slow_ack", ["--close-on-enhanced",
                                          "--accept-count", "2"],
     ["--pdata", "hello"], {"mpa_rev1_retry": "1", "_netem": "delay 300ms"},
     [r"^conn 2", r"request rev=1 flags=0x00 .*s=0 pd_len=5 .*"
      r"pdata=68656c6c6f"], [r"event=ESTABLISHED status=0"]),
    # the retry's connection refused (the peer listens no more): a clean
    # connect error, no second connection (the module dereferenced the
    # socket it no longer had: KASAN null-ptr-deref on the debug kernel)
    ("close_on_enhanced_retry_refused", ["--close-on-enhanced"],
     ["--pdata", "hello"], {"mpa_rev1_retry": "1"},
     [r"closing on enhanced request", r"!^conn 2"],
     [r"event=(REJECTED|CONNECT_ERROR) status=-\d+"]),
]


def run_raw(sel):
    """The raw peer cases. Those with the module's default parameters run
    JOBS at a time (each on its own port); the others one after the other,
    as the parameters are the module's. Checked in the table's order."""
    jobs = []
    port = 53000
    for c in INITIATOR_CASES:
        port += 1
        if sel.search("initiator_peer." + c[0]):
            jobs.append(("initiator_peer." + c[0], port, c, True))
    for c in RESPONDER_CASES:
        port += 1
        if sel.search("responder_peer." + c[0]):
            jobs.append(("responder_peer." + c[0], port, c, False))

    def run(job):
        full, port, c, initiator = job
        if initiator:
            name, popts, sopts, params, steps, _, sexp = c
            return peer_initiator(full, port, popts, sopts, params, steps,
                                  srv_timeout=20000 if "times_out" in name
                                  else 12000,
                                  no_request="!CONNECT_REQUEST" in sexp)
        name, popts, copts, params = c[:4]
        return peer_responder(full, port, popts, copts, params)

    results = {}
    par = [j for j in jobs if j[2][3] is None]
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as ex:
        for j, r in zip(par, ex.map(run, par)):
            results[j[0]] = r
    for j in jobs:
        if j[0] not in results:
            results[j[0]] = run(j)
    for full, port, c, initiator in jobs:
        plines, olines = results[full]
        if initiator:
            pexp, oexp, other = c[5], c[6], "server"
        else:
            pexp, oexp, other = c[4], c[5], "client"
        diag = ["mpa-peer:"] + plines + [other + ":"] + olines
        expect_lines(full + ".peer", plines, pexp, diag)
        expect_lines(full + "." + other, olines, oexp, diag)


def run_kernel_checks(sel):
    if not sel.search("kernel"):
        return
    try:
        dmesg = subprocess.run(["dmesg"], capture_output=True, text=True,
                               timeout=20).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        dmesg = []
    bad = [ln for ln in dmesg if PROBLEMS.search(ln)]
    tap(not bad, "kernel.no_problems", bad[:40])
    logged = [ln for ln in dmesg if "siw: MPA " in ln]
    tap(bool(logged), "kernel.refusals_logged", ["no 'siw: MPA' lines"])
    note("%d refusal log lines, e.g.: %s" % (len(logged),
                                             logged[0] if logged else "-"))
    # the parameters refuse what they cannot represent
    bad = []
    for k, v in (("mpa_rev", "3"), ("mpa_rev", "0"),
                 ("mpa_rtr_offer", "write,bogus"), ("mpa_ird_ord", "loose")):
        try:
            with open(os.path.join(PARAMS, k), "w") as f:
                f.write(v)
            bad.append("%s=%s accepted" % (k, v))
        except OSError:
            pass
    with open(os.path.join(PARAMS, "mpa_rtr_offer")) as f:
        shown = f.read().strip()
    tap(not bad and shown == DEFAULTS["mpa_rtr_offer"],
        "kernel.parameters_validated", bad + ["mpa_rtr_offer: " + shown])


def main():
    args = sys.argv[1:]
    if args and args[0] == "-l":
        for c in MATRIX:
            print("matrix." + c["name"])
        for c in INITIATOR_CASES:
            print("initiator_peer." + c[0])
        for c in RESPONDER_CASES:
            print("responder_peer." + c[0])
        print("kernel")
        print("decoder")
        return 0
    sel = re.compile(args[0] if args else ".")
    os.makedirs(OUT, exist_ok=True)
    if not os.path.isdir(PARAMS) or \
            not os.path.exists(os.path.join(PARAMS, "mpa_rev")):
        print("1..0 # SKIP siw without RFC 6581 parameters (not siwx)")
        return 0
    t0 = time.time()
    if sel.search("decoder"):
        # the wire decoder's own unit test (pure logic, synthetic frames)
        u = subprocess.run([sys.executable,
                            os.path.join(HERE, "test_mpa_wire.py")],
                           capture_output=True, text=True, timeout=120)
        tap(u.returncode == 0, "decoder.unit_test",
            (u.stdout + u.stderr).splitlines()[-30:])
    try:
        run_matrix(sel)
        run_raw(sel)
        run_kernel_checks(sel)
    finally:
        set_params({})
    print("1..%d" % NTEST)
    note("%d failed, %.0f s" % (FAILED, time.time() - t0))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
