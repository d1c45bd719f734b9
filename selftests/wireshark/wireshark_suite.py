#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
wireshark_suite.py - suite wireshark (host): tools/wireshark/siwx.lua,
the Lua dissector, against the project's own decoder.

    wireshark_suite.py                  the suite (TAP)
    wireshark_suite.py contents PCAP    what suite wireshark_cap checks in
                                        the VM: iwarp_capture.py finds
                                        every kind of message the real
                                        reference capture must hold
    wireshark_suite.py compare PCAP [LUA]
                                        one capture, problems on stderr

For each capture (the committed pcaps/*.pcap.gz, and the fresh one of
suite wireshark_cap when a run left it in SIWX_RESULTS), tshark runs once
with the dissector (-X lua_script:tools/wireshark/siwx.lua -T fields -e
siwx.*) and selftests/lib/iwarp_capture.py decodes the same file; per TCP
direction every field must be the same, in the same order, as many times:

  mpa_frames         MPA Request/Reply: S, revision, private data length,
                     IRD, ORD, A, B, C, D, the private data after the word
  opcodes            the RDMAP opcode of every FPDU (5 bits) and its
                     wire.h name
  immediates         Immediate Data (0x8/0x9): the 64-bit value, its low
                     32 bits
  flush_requests     STag, Length, Tagged Offset, Disposition Flags, P, G,
                     selectivity, reserved bits
  atomic_writes      Atomic Write Request: STag, Length, Tagged Offset, data
  coverage           the capture holds what it is there for (every kind of
                     message above, P2P, 0x3FFF, ...), so that no check
                     passes on nothing

and, once: wire-lua.py --check agrees with wire.h and fails on a mutated
copy of wire.h and on a hand-edited Lua copy; no wire number outside the
generated block of siwx.lua; the comparison fails with a dissector whose
opcode table was mutated (the test can fail); mkpcap.py still writes
pcaps/synthetic.pcap.gz byte for byte; `make install-wireshark` honours
DESTDIR and WIRESHARK_LUA_DIR, defaults to the folder tshark reports for
global Lua plugins, and Wireshark loads the plugin from its personal
plugin folder without -X.

Environment: SIWX_RESULTS (host suites: the run's results; the fresh
capture is SIWX_RESULTS/single/wireshark_cap.pcap.gz), TSHARK (default
tshark).
"""
import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "selftests", "lib"))
import iwarp_capture as ic  # noqa: E402
import siwx_wire as W  # noqa: E402

LUA = os.path.join(TOP, "tools", "wireshark", "siwx.lua")
WIRE_LUA = os.path.join(TOP, "tools", "wireshark", "wire-lua.py")
WIRE_H = os.path.join(TOP, "include", "siwx", "wire.h")
PCAPS = os.path.join(HERE, "pcaps")
TSHARK = os.environ.get("TSHARK") or shutil.which("tshark") or \
    "/usr/bin/tshark"
# selftests/lib/capture.sh's TSHARK_IWARP: MPA is found heuristically only
TSHARK_IWARP = ["-n", "-o", "tcp.try_heuristic_first:TRUE",
                "--disable-heuristic", "rpcrdma_iwarp",
                "--disable-heuristic", "smb_direct_iwarp"]

IMM_OPS = (W.RDMAP_OP_IMM, W.RDMAP_OP_IMM_SE)

# tshark -T fields columns: the packet's direction, then the siwx fields
DIR_FIELDS = ["frame.number", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst",
              "ipv6.dst", "tcp.dstport"]
MPA_FIELDS = ["siwx.mpa.frame", "siwx.mpa.s", "siwx.mpa.rev",
              "siwx.mpa.pd_len", "siwx.mpa.ird", "siwx.mpa.ord", "siwx.mpa.a",
              "siwx.mpa.b", "siwx.mpa.c", "siwx.mpa.d", "siwx.mpa.pdata"]
OP_FIELDS = ["siwx.rdmap.opcode", "siwx.rdmap.name"]
IMM_FIELDS = ["siwx.imm.data", "siwx.imm.low32"]
FLUSH_FIELDS = ["siwx.flush.stag", "siwx.flush.len", "siwx.flush.to",
                "siwx.flush.disp", "siwx.flush.p", "siwx.flush.g",
                "siwx.flush.sel", "siwx.flush.rsvd"]
AW_FIELDS = ["siwx.awrite.stag", "siwx.awrite.len", "siwx.awrite.to",
             "siwx.awrite.data"]
FIELDS = DIR_FIELDS + MPA_FIELDS + OP_FIELDS + IMM_FIELDS + FLUSH_FIELDS + \
    AW_FIELDS
MPA_KEYS = ("frame", "s", "rev", "pd_len", "ird", "ord", "a", "b", "c", "d",
            "pdata")


def num(v):
    """a tshark field value as an int: 0x.. hex, decimal, True/False"""
    if v in ("True", "False"):
        return int(v == "True")
    return int(v, 0)


class Dirn:
    """What one TCP direction carries: mpa (dict or None), ops [(opcode,
    name)], imms [(value, low32)], flushes [tuple], aws [tuple]."""

    def __init__(self):
        self.mpa = None
        self.ops, self.imms, self.flushes, self.aws = [], [], [], []


# ---------------------------------------------------------------- decoder

def open_pcap(path, tmpdir):
    """a plain pcap file for iwarp_capture (which reads no gzip)"""
    if not path.endswith(".gz"):
        return path
    out = os.path.join(tmpdir, os.path.basename(path)[:-3])
    with gzip.open(path) as f, open(out, "wb") as o:
        shutil.copyfileobj(f, o)
    return out


def decode(path):
    """{(src, sport, dst, dport): Dirn} of every direction that starts
    with an MPA Request or Reply, decoded by iwarp_capture.py; problems."""
    out, probs = {}, []
    for (src, sport, dst, dport), f in ic.flows(path).items():
        data, gap = f.stream()
        key = (ic.endpoint(src, sport), ic.endpoint(dst, dport))
        which = {ic.KEY_REQ: "req", ic.KEY_REP: "rep"}.get(
            data[:W.MPA_KEY_SIZE])
        if not which:
            continue
        if gap:
            probs.append("%s -> %s: a hole in the TCP stream" % key)
        mpa, fpdus, pr = ic.parse_direction(
            data, ic.KEY_REQ if which == "req" else ic.KEY_REP)
        probs += ["%s -> %s: %s" % (key + (p,)) for p in pr
                  if "runs past the capture" not in p]
        d = out[key] = Dirn()
        m = {"frame": which, "s": mpa["s"], "rev": mpa["rev"],
             "pd_len": mpa["pd_len"]}
        if "ird" in mpa:
            m.update(ird=mpa["ird"], ord=mpa["ord"], a=mpa["a"], b=mpa["b"],
                     c=mpa["c_rtr"], d=mpa["d_rtr"])
            if mpa["pdata"]:
                m["pdata"] = mpa["pdata"].hex()
        d.mpa = m
        if which == "rep" and mpa["r"]:
            continue
        for g in fpdus:
            if not hasattr(g, "opcode"):
                continue
            d.ops.append((g.opcode, ic.opcode_name(g.opcode)))
            p = getattr(g, "payload", None)
            if g.opcode in IMM_OPS and not g.tagged and p is not None and \
                    len(p) >= W.RDMAP_IMM_SIZE:
                v = ic.be64(p, 0)
                d.imms.append((v, v & 0xffffffff))
            if hasattr(g, "flush"):
                fl = g.flush
                d.flushes.append((fl["stag"], fl["len"], fl["to"],
                                  fl["disp"], fl["p"], fl["g"], fl["sel"],
                                  fl["rsvd"]))
            if hasattr(g, "awrite"):
                a = g.awrite
                d.aws.append((a["stag"], a["len"], a["to"], a["data"].hex()))
    return out, probs


# ---------------------------------------------------------------- tshark

def tshark(path, lua, extra=()):
    """tshark's siwx fields of the capture: ({key: Dirn}, problems)"""
    cmd = [TSHARK, "-r", path] + TSHARK_IWARP + ["-X", "lua_script:" + lua,
                                                 "-Y", "siwx", "-T", "fields",
                                                 "-E", "separator=/t",
                                                 "-E", "occurrence=a",
                                                 "-E", "aggregator=,"]
    for f in FIELDS:
        cmd += ["-e", f]
    cmd += list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    probs = []
    err = [l for l in r.stderr.splitlines()
           if not l.startswith("Running as user")]
    if r.returncode != 0:
        probs.append("tshark exit %d" % r.returncode)
    if any("Lua" in l or "lua" in l for l in err):
        probs.append("tshark: " + " | ".join(err)[:500])
    out = {}
    for line in r.stdout.splitlines():
        c = dict(zip(FIELDS, line.split("\t")))
        col = {k: (v.split(",") if v else []) for k, v in c.items()}
        src = c["ip.src"] or c["ipv6.src"]
        dst = c["ip.dst"] or c["ipv6.dst"]
        if "," in src or "," in dst:
            probs.append("frame %s: several IP headers" % c["frame.number"])
            continue
        key = ("%s:%s" % (src, c["tcp.srcport"]),
               "%s:%s" % (dst, c["tcp.dstport"]))
        d = out.setdefault(key, Dirn())
        if c["siwx.mpa.frame"]:
            if d.mpa is not None:
                probs.append("frame %s: a second MPA frame in %s -> %s" %
                             ((c["frame.number"],) + key))
            m = {"frame": c["siwx.mpa.frame"]}
            for k in MPA_KEYS[1:]:
                v = c["siwx.mpa." + k]
                if v:
                    m[k] = v if k == "pdata" else num(v)
            d.mpa = m
        ops = [num(v) for v in col["siwx.rdmap.opcode"]]
        names = col["siwx.rdmap.name"]
        if len(ops) != len(names):
            probs.append("frame %s: %d opcodes, %d names" %
                         (c["frame.number"], len(ops), len(names)))
        d.ops += list(zip(ops, names))
        d.imms += list(zip(*[[num(v) for v in col[f]] for f in IMM_FIELDS]))
        n = [len(col[f]) for f in IMM_FIELDS]
        if len(set(n)) > 1:
            probs.append("frame %s: immediate fields %s" %
                         (c["frame.number"], n))
        rows = [col[f] for f in FLUSH_FIELDS]
        if len(set(map(len, rows))) > 1:
            probs.append("frame %s: flush fields %s" %
                         (c["frame.number"], list(map(len, rows))))
        d.flushes += [tuple(num(v) for v in t) for t in zip(*rows)]
        rows = [col[f] for f in AW_FIELDS]
        if len(set(map(len, rows))) > 1:
            probs.append("frame %s: atomic write fields %s" %
                         (c["frame.number"], list(map(len, rows))))
        d.aws += [tuple(num(v) for v in t[:3]) + (t[3],) for t in zip(*rows)]
    return out, probs


# ---------------------------------------------------------------- compare

def fmt(v):
    if isinstance(v, tuple):
        return "(" + ", ".join(fmt(x) for x in v) + ")"
    if isinstance(v, int) and v > 9:
        return "0x%x" % v
    return str(v)


def diff_seq(what, key, got, want):
    """problems when tshark's list differs from the decoder's"""
    if got == want:
        return []
    probs = ["%s -> %s: %s: tshark %d, decoder %d" %
             (key + (what, len(got), len(want)))]
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            probs.append("%s -> %s: %s #%d: tshark %s, decoder %s" %
                         (key + (what, i + 1, fmt(g), fmt(w))))
            break
    return probs


def compare(path, lua=LUA, tmpdir=None):
    """(results {check: problems}, counts {what: n}, decoder dirs)"""
    own = tmpdir is None
    tmpdir = tmpdir or tempfile.mkdtemp(prefix="wireshark.")
    try:
        dec, dprobs = decode(open_pcap(path, tmpdir))
    finally:
        if own:
            shutil.rmtree(tmpdir)
    ts, tprobs = tshark(path, lua)
    res = {"tshark_runs": tprobs, "decoder_runs": dprobs, "mpa_frames": [],
           "opcodes": [], "immediates": [], "flush_requests": [],
           "atomic_writes": []}
    for key in sorted(set(dec) | set(ts)):
        d, t = dec.get(key, Dirn()), ts.get(key, Dirn())
        if d.mpa != t.mpa:
            res["mpa_frames"].append("%s -> %s: tshark %s, decoder %s" %
                                     (key + (t.mpa, d.mpa)))
        res["opcodes"] += diff_seq("opcodes", key, t.ops, d.ops)
        res["immediates"] += diff_seq("immediates", key, t.imms, d.imms)
        res["flush_requests"] += diff_seq("Flush Requests", key, t.flushes,
                                          d.flushes)
        res["atomic_writes"] += diff_seq("Atomic Write Requests", key, t.aws,
                                         d.aws)
    counts = summary(dec)
    tcounts = summary(ts)
    return res, counts, tcounts, dec


def summary(dirs):
    """{what: count} of a {key: Dirn}"""
    c = {"mpa frames": 0, "enhanced words": 0, "fpdus": 0, "immediates": 0,
         "flush requests": 0, "atomic write requests": 0}
    for d in dirs.values():
        if d.mpa:
            c["mpa frames"] += 1
            c["enhanced words"] += int("ird" in d.mpa)
        c["fpdus"] += len(d.ops)
        c["immediates"] += len(d.imms)
        c["flush requests"] += len(d.flushes)
        c["atomic write requests"] += len(d.aws)
        for op, name in d.ops:
            c["op " + name] = c.get("op " + name, 0) + 1
    return c


# what a capture must hold (over the decoder's view): (label, test)
def _ops(dirs):
    return {op for d in dirs.values() for op, _ in d.ops}


def _mpas(dirs):
    return [d.mpa for d in dirs.values() if d.mpa]


REAL = [
    ("Immediate Data", lambda x: W.RDMAP_OP_IMM in _ops(x)),
    ("Immediate Data with SE", lambda x: W.RDMAP_OP_IMM_SE in _ops(x)),
    ("Atomic Request and Response",
     lambda x: {W.RDMAP_OP_ATOMIC_REQ, W.RDMAP_OP_ATOMIC_RESP} <= _ops(x)),
    ("Flush Request and Response",
     lambda x: {W.RDMAP_OP_FLUSH_REQ, W.RDMAP_OP_FLUSH_RESP} <= _ops(x)),
    ("Atomic Write Request and Response",
     lambda x: {W.RDMAP_OP_ATOMIC_WRITE_REQ,
                W.RDMAP_OP_ATOMIC_WRITE_RESP} <= _ops(x)),
    ("a Terminate", lambda x: W.RDMAP_OP_TERMINATE in _ops(x)),
    ("Flush selectivity range and MR",
     lambda x: {f[6] for d in x.values() for f in d.flushes} >=
     {W.FLUSH_SEL_RANGE, W.FLUSH_SEL_MR}),
    ("an IRD/ORD word in a Request and a Reply",
     lambda x: {m["frame"] for m in _mpas(x) if "ird" in m} == {"req", "rep"}),
    ("peer-to-peer (A) with RTR bits",
     lambda x: any(m.get("a") and (m["b"] or m["c"] or m["d"])
                   for m in _mpas(x))),
    ("IRD/ORD 0x3FFF",
     lambda x: any(m.get("ird") == W.MPA_V2_NO_NEGOTIATION
                   for m in _mpas(x))),
]
SYNTHETIC = REAL + [
    ("every opcode wire.h names but Verify Response",
     lambda x: set(range(W.RDMAP_OP_COUNT)) - {W.RDMAP_OP_VERIFY_RESP,
                                               W.RDMAP_OP_SEND_INV,
                                               W.RDMAP_OP_SEND_SE_INV}
     <= _ops(x)),
    ("an opcode wire.h does not name",
     lambda x: any(op >= W.RDMAP_OP_COUNT for op in _ops(x))),
    ("an MPA frame of revision 1",
     lambda x: any(m["rev"] == W.MPA_REV_1 for m in _mpas(x))),
    ("private data after the IRD/ORD word",
     lambda x: any(m.get("pdata") for m in _mpas(x))),
    ("every RTR bit",
     lambda x: all(any(m.get(k) for m in _mpas(x)) for k in "abcd")),
    ("reserved Disposition Flags",
     lambda x: any(f[7] for d in x.values() for f in d.flushes)),
]
REQUIRE = {"siwx": REAL, "synthetic": SYNTHETIC, "fresh": REAL}


def coverage(dirs, reqs):
    return ["no %s" % label for label, t in reqs if not t(dirs)]


# ---------------------------------------------------------------- TAP

class Tap:
    def __init__(self):
        self.n = 0
        self.fails = 0

    def result(self, name, problems, notes=(), skip=None):
        self.n += 1
        for l in notes:
            print("# %s: %s" % (name, l))
        for p in problems[:12]:
            print("# %s: %s" % (name, p))
        if len(problems) > 12:
            print("# %s: ... %d more" % (name, len(problems) - 12))
        if skip:
            print("ok %d wireshark.%s # SKIP %s" % (self.n, name, skip))
        elif problems:
            self.fails += 1
            print("not ok %d wireshark.%s" % (self.n, name))
        else:
            print("ok %d wireshark.%s" % (self.n, name))
        sys.stdout.flush()


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def wire_lua_checks(tap, tmp):
    r = run([sys.executable, WIRE_LUA, "--check"])
    tap.result("wire_lua.check", [] if r.returncode == 0 else
               (r.stdout + r.stderr).splitlines()[-12:],
               [r.stdout.strip()] if r.returncode == 0 else [])

    # a wire.h whose Immediate Data opcode moved: --check must fail
    with open(WIRE_H) as f:
        h = f.read()
    mut, n = re.subn(r"(#define\s+SIWX_RDMAP_OP_IMM_SE\s+)0x9", r"\g<1>0x19",
                     h)
    bad_h = os.path.join(tmp, "wire.h")
    with open(bad_h, "w") as f:
        f.write(mut)
    r = run([sys.executable, WIRE_LUA, "--check", "--wire-h", bad_h])
    tap.result("wire_lua.fails_on_mutated_wire_h",
               ["the mutation did not apply"] if n != 1 else
               [] if r.returncode == 1 else
               ["--check exit %d on a mutated wire.h" % r.returncode],
               [l for l in r.stdout.splitlines() if l.startswith(("-\t",
                                                                  "+\t"))])

    # a hand edit inside the generated block: --check must fail
    with open(LUA) as f:
        lua = f.read()
    mut, n = re.subn(r"(\tFLUSH_DISP_P = )1,", r"\g<1>4,", lua)
    bad_lua = os.path.join(tmp, "edited.lua")
    with open(bad_lua, "w") as f:
        f.write(mut)
    r = run([sys.executable, WIRE_LUA, "--check", "--lua", bad_lua])
    tap.result("wire_lua.fails_on_edited_lua",
               ["the edit did not apply"] if n != 1 else
               [] if r.returncode == 1 else
               ["--check exit %d on an edited siwx.lua" % r.returncode])

    # no wire numbers outside the generated block: hex literals, the keys
    out, inside, comment = [], False, False
    for i, l in enumerate(lua.split("\n"), 1):
        if comment:
            comment = "]]" not in l
        elif l.startswith("--[["):
            comment = "]]" not in l
        elif l.startswith("-- BEGIN wire.h"):
            inside = True
        elif l.startswith("-- END wire.h"):
            inside = False
        elif not inside:
            code = l.split("--", 1)[0]
            if re.search(r"\b0[xX][0-9a-fA-F]", code) or \
                    re.search(r"MPA ID Re[qp]", code):
                out.append("siwx.lua:%d: %s" % (i, l.strip()))
    tap.result("lua.no_wire_numbers_outside_generated_block", out)
    return bad_lua


def mutated_dissector(tmp):
    """siwx.lua with its opcode table mutated (Immediate Data 0x8 -> 0x9)"""
    with open(LUA) as f:
        lua = f.read()
    mut, n = re.subn(r"(\tRDMAP_OP_IMM = )8,", r"\g<1>9,", lua)
    assert n == 1, "RDMAP_OP_IMM not found in the generated block"
    p = os.path.join(tmp, "mutated.lua")
    with open(p, "w") as f:
        f.write(mut)
    return p


CHECKS = ("tshark_runs", "decoder_runs", "mpa_frames", "opcodes",
          "immediates", "flush_requests", "atomic_writes", "coverage")


def capture_checks(tap, name, path, reqs, tmp):
    try:
        res, counts, tcounts, dec = compare(path, tmpdir=tmp)
    except (OSError, ValueError) as e:
        for k in CHECKS:
            tap.result("%s.%s" % (name, k), ["%s: %s" % (path, e)])
        return
    notes = ["%s: %s" % (os.path.relpath(path, TOP) if path.startswith(TOP)
                         else path,
                         ", ".join("%s %d" % kv for kv in sorted(
                             counts.items())))]
    if tcounts != counts:
        notes.append("tshark: " + ", ".join("%s %d" % kv for kv in sorted(
            tcounts.items())))
    tap.result(name + ".tshark_runs", res["tshark_runs"], notes)
    tap.result(name + ".decoder_runs", res["decoder_runs"])
    for k in ("mpa_frames", "opcodes", "immediates", "flush_requests",
              "atomic_writes"):
        tap.result("%s.%s" % (name, k), res[k])
    tap.result(name + ".coverage", coverage(dec, reqs))


def install_checks(tap, tmp):
    make = shutil.which("make") or "/usr/bin/make"
    # the default folder: where tshark says global Lua plugins go
    r = run([TSHARK, "-G", "folders"])
    want = None
    for l in r.stdout.splitlines():
        if l.startswith("Global Lua Plugins:"):
            want = l.split(":", 1)[1].strip()
    dest = os.path.join(tmp, "destdir")
    r = run([make, "-s", "-C", TOP, "install-wireshark", "DESTDIR=" + dest])
    probs = []
    if r.returncode:
        probs += (r.stdout + r.stderr).splitlines()[-8:]
    elif not want:
        probs.append("tshark -G folders names no Global Lua Plugins folder")
    else:
        got = os.path.join(dest + want, "siwx.lua")
        if not os.path.isfile(got):
            probs.append("%s not installed (found: %s)" % (
                got, [os.path.relpath(os.path.join(d, f), dest)
                      for d, _, fs in os.walk(dest) for f in fs]))
        elif open(got).read() != open(LUA).read():
            probs.append("%s differs from tools/wireshark/siwx.lua" % got)
    tap.result("install.destdir_default_folder", probs,
               ["default folder %s" % want])

    # WIRESHARK_LUA_DIR: the personal plugin folder of a HOME of our own;
    # Wireshark must load it from there by itself (no -X)
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(
        home, ".config"))
    pdir = os.path.join(home, ".local", "lib", "wireshark", "plugins")
    probs = []
    r = run([make, "-s", "-C", TOP, "install-wireshark",
             "WIRESHARK_LUA_DIR=" + pdir], env=env)
    if r.returncode:
        probs += (r.stdout + r.stderr).splitlines()[-8:]
    r = run([TSHARK, "-G", "plugins"], env=env)
    if not any("siwx.lua" in l for l in r.stdout.splitlines()):
        probs.append("tshark -G plugins does not list siwx.lua: %s" %
                     " | ".join(r.stdout.splitlines()[:6]))
    syn = os.path.join(PCAPS, "synthetic.pcap.gz")
    r = run([TSHARK, "-r", syn] + TSHARK_IWARP +
            ["-Y", "siwx.imm.data", "-T", "fields", "-e", "siwx.imm.data"],
            env=env)
    if not r.stdout.strip():
        probs.append("no siwx.imm.data without -X: %s" % r.stderr.strip())
    tap.result("install.wireshark_lua_dir_loaded", probs)


def suite():
    print("TAP version 13")
    tap = Tap()
    if not os.access(TSHARK, os.X_OK):
        print("1..1")
        tap.result("setup", ["tshark not installed (apt-get install "
                             "tshark)"])
        return 1
    caps = [(os.path.basename(p)[:-len(".pcap.gz")], p)
            for p in sorted(glob.glob(os.path.join(PCAPS, "*.pcap.gz")))]
    fresh = os.path.join(os.environ.get("SIWX_RESULTS", "/nonexistent"),
                         "single", "wireshark_cap.pcap.gz")
    ncap = len(caps) + 1
    print("1..%d" % (4 + len(CHECKS) * ncap + 2 + 2))
    tmp = tempfile.mkdtemp(prefix="wireshark.")
    try:
        wire_lua_checks(tap, tmp)
        for name, p in caps:
            capture_checks(tap, name, p, REQUIRE.get(name, REAL), tmp)
        if os.path.exists(fresh):
            capture_checks(tap, "fresh", fresh, REQUIRE["fresh"], tmp)
        else:
            for k in CHECKS:
                tap.result("fresh." + k, [], skip="no %s (suite "
                           "wireshark_cap did not run)" % fresh)

        # the comparison can fail: a dissector with a mutated opcode table
        syn = os.path.join(PCAPS, "synthetic.pcap.gz")
        res, _, _, _ = compare(syn, mutated_dissector(tmp), tmp)
        bad = [k for k, v in res.items() if v]
        tap.result("negative.mutated_dissector_detected",
                   [] if {"opcodes", "immediates"} <= set(bad) else
                   ["the comparison found no difference in opcodes and "
                    "immediates (only in %s)" % bad],
                   ["differences found in: %s" % ", ".join(bad)])

        # the synthetic capture is what mkpcap.py writes
        out = os.path.join(tmp, "synthetic.pcap")
        r = run([sys.executable, os.path.join(HERE, "mkpcap.py"), out])
        probs = (r.stdout + r.stderr).splitlines() if r.returncode else []
        if not probs:
            with gzip.open(syn) as f, open(out, "rb") as g:
                if f.read() != g.read():
                    probs.append("mkpcap.py writes another capture than "
                                 "pcaps/synthetic.pcap.gz (regenerate it)")
        tap.result("synthetic.reproducible", probs)
        install_checks(tap, tmp)
    finally:
        shutil.rmtree(tmp)
    return 1 if tap.fails else 0


def main():
    a = sys.argv[1:]
    if not a:
        return suite()
    if a[0] == "contents" and len(a) == 2:
        tmp = tempfile.mkdtemp(prefix="wireshark.")
        try:
            dec, probs = decode(open_pcap(a[1], tmp))
        except (OSError, ValueError) as e:
            print("# %s: %s" % (a[1], e))
            return 1
        finally:
            shutil.rmtree(tmp)
        probs += coverage(dec, REAL)
        print("# " + ", ".join("%s %d" % kv for kv in
                               sorted(summary(dec).items())))
        for p in probs:
            print("# " + p)
        return 1 if probs else 0
    if a[0] == "compare" and len(a) in (2, 3):
        res, counts, tcounts, _ = compare(a[1], *a[2:])
        for k, v in res.items():
            for p in v:
                print("%s: %s" % (k, p), file=sys.stderr)
        print(", ".join("%s %d" % kv for kv in sorted(counts.items())))
        return 1 if any(res.values()) else 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
