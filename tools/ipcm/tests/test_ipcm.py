#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
test_ipcm.py - the suite of tools/ipcm (libipcm, siwx-ipcm). Prints TAP,
one line per check; exit 0: all passed.

    tools/ipcm/tests/test_ipcm.py [--binaries-only] BUILD_DIR

BUILD_DIR holds siwx-ipcm and test-ipcm (make -C tools/ipcm O=BUILD_DIR).

  header.*   include/siwx/ipcm.h keeps wire.h's rules (siwx_wire.parse
             reads it), the C compiler and Python agree on every value, a
             few facts straight from the annex and Linux
  linux.*    against a Linux 6.12 source (build/linux/pristine, else
             /usr/src/linux-source-6.12.tar.xz, extracted once into
             BUILD_DIR/linux-ref): test-ipcm.c's copy of struct cma_hdr
             and cma_format_hdr()/cma_save_ip_info() is the kernel's; the
             port spaces, CM attribute IDs, CM field offsets and sizes of
             <siwx/ipcm.h> are ibta_vol1_c12.h's, ib_cm.h's, rdma_cm.h's
  unit.*     test-ipcm (every field and named error, the cma_hdr round trip)
  pcap.*     siwx-ipcm on synthetic RoCEv2 captures built here by hand
             (Ethernet/IPv4|IPv6/UDP/BTH/DETH/MAD/CM, numbers from
             <siwx/ipcm.h>): good IPv4 and IPv6 connections, every
             malformation, rejects, noise, grouping, link types and pcap
             variants, truncated packets and files, garbage; --json output
             field by field, the text and -q output, exit statuses
  fuzz.*     test-ipcm --fuzz on the captures: every prefix and mutations
  tshark.*   tshark's infiniband dissector decodes the same captures to the
             same values (skipped without tshark)
  man.*      siwx-ipcm.1 renders (man -l, groff warnings), documents every
             option and every deviation name; so does Documentation/ipcm.md

--binaries-only runs unit, pcap and fuzz only (make test-asan: the
sanitizer build).
"""
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
TOP = os.path.normpath(os.path.join(SRC, "..", ".."))
HEADER = os.path.join(TOP, "include", "siwx", "ipcm.h")
sys.path.insert(0, os.path.join(TOP, "selftests", "lib"))
import siwx_wire  # noqa: E402

VALUES = siwx_wire.parse(HEADER)
C = types.SimpleNamespace(**{k[len("SIWX_"):]: v for k, v in VALUES.items()})

RESULTS = []


def check(name, cond, diag=None):
    RESULTS.append((bool(cond), name, None, diag))
    return bool(cond)


def skip(name, reason):
    RESULTS.append((True, name, reason, None))


def equal(name, got, want):
    return check(name, got == want, "got  %r\nwant %r" % (got, want))


# ------------------------------------------------------------ frame builder

A4, B4 = "192.0.2.1", "192.0.2.2"
A6, B6 = "2001:db8::1", "2001:db8::2"
ID_A, ID_B = 0x11111111, 0x22222222
PORT = 7471
SPORT = 40001


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def addr16(a):
    """An address as the annex's 16-byte field: IPv4 zero-prefixed, as
    Linux writes it."""
    if ":" in a:
        return socket.inet_pton(socket.AF_INET6, a)
    return bytes(C.IPCM_HDR_ADDR_OFF_IPV4) + socket.inet_aton(a)


def ipcm_hdr(src=A4, dst=B4, sport=SPORT, major=0, minor=0, ipv=None,
             rsvd=0, src16=None, dst16=None):
    if ipv is None:
        ipv = C.IPCM_IPV6 if ":" in src else C.IPCM_IPV4
    h = bytearray(C.IPCM_HDR_SIZE)
    h[C.IPCM_HDR_OFF_VERSION] = major << C.IPCM_HDR_MAJOR_SHIFT | minor
    h[C.IPCM_HDR_OFF_IPV] = ipv << C.IPCM_HDR_IPV_SHIFT | rsvd
    struct.pack_into(">H", h, C.IPCM_HDR_OFF_SRC_PORT, sport)
    h[C.IPCM_HDR_OFF_SRC_ADDR:C.IPCM_HDR_OFF_SRC_ADDR + 16] = \
        src16 if src16 is not None else addr16(src)
    h[C.IPCM_HDR_OFF_DST_ADDR:C.IPCM_HDR_OFF_DST_ADDR + 16] = \
        dst16 if dst16 is not None else addr16(dst)
    # the consumer's 56 bytes: something recognisable
    return bytes(h) + bytes(range(C.IPCM_CONSUMER_PD_SIZE))


def sid(proto=C.IPCM_PROTOCOL_TCP, port=PORT):
    return C.IPCM_SID_PREFIX | proto << C.IPCM_SID_PROTOCOL_SHIFT | port


def mad(attr, body, tid=1):
    h = bytearray(C.MAD_HDR_SIZE)
    h[C.MAD_OFF_BASE_VERSION] = C.MAD_BASE_VERSION
    h[C.MAD_OFF_MGMT_CLASS] = C.MAD_CLASS_CM
    h[C.MAD_OFF_CLASS_VERSION] = C.CM_CLASS_VERSION
    h[C.MAD_OFF_METHOD] = C.MAD_METHOD_SEND
    struct.pack_into(">Q", h, C.MAD_OFF_TID, tid)
    struct.pack_into(">H", h, C.MAD_OFF_ATTR_ID, attr)
    body = bytes(body)
    assert len(body) <= C.MAD_SIZE - C.MAD_HDR_SIZE
    return bytes(h) + body + bytes(C.MAD_SIZE - C.MAD_HDR_SIZE - len(body))


def ids(local, remote):
    b = bytearray(8)
    struct.pack_into(">I", b, C.CM_OFF_LOCAL_COMM_ID, local)
    struct.pack_into(">I", b, C.CM_OFF_REMOTE_COMM_ID, remote)
    return b


def req(local=ID_A, service_id=None, pd=None):
    b = bytearray(C.CM_REQ_OFF_PD + C.CM_REQ_PD_SIZE)
    struct.pack_into(">I", b, C.CM_OFF_LOCAL_COMM_ID, local)
    struct.pack_into(">Q", b, C.CM_REQ_OFF_SERVICE_ID,
                     sid() if service_id is None else service_id)
    pd = ipcm_hdr() if pd is None else pd
    b[C.CM_REQ_OFF_PD:C.CM_REQ_OFF_PD + len(pd)] = pd
    return mad(C.CM_ATTR_REQ, b)


def simple(attr, local, remote):
    return mad(attr, ids(local, remote))


def rej(local=ID_B, remote=ID_A, reason=C.CM_REJ_REASON_CONSUMER, ari=b"",
        info_len=None, msg=C.CM_REJ_MSG_REQ):
    b = bytearray(C.CM_REJ_OFF_PD + C.CM_REJ_PD_SIZE)
    b[:8] = ids(local, remote)
    b[C.CM_REJ_OFF_MSG_REJECTED] = msg << C.CM_REJ_MSG_REJECTED_SHIFT
    n = len(ari) if info_len is None else info_len
    b[C.CM_REJ_OFF_INFO_LEN] = n << C.CM_REJ_INFO_LEN_SHIFT
    struct.pack_into(">H", b, C.CM_REJ_OFF_REASON, reason)
    b[C.CM_REJ_OFF_ARI:C.CM_REJ_OFF_ARI + len(ari)] = ari
    return mad(C.CM_ATTR_REJ, b)


def annex_ari(ari, value=b"", layer=C.IPCM_LAYER_IPCM, value_len=None,
              rsvd=0):
    """The annex's reject bytes (slide 6)."""
    b = bytearray(C.IPCM_REJ_HDR_SIZE)
    b[C.IPCM_REJ_OFF_LAYER] = layer
    b[C.IPCM_REJ_OFF_ARI] = ari
    b[C.IPCM_REJ_OFF_VALUE_LEN] = len(value) if value_len is None \
        else value_len
    b[C.IPCM_REJ_OFF_RSVD] = rsvd
    return bytes(b) + bytes(value)


def roce(payload, opcode=C.BTH_OP_UD_SEND_ONLY, qp=C.GSI_QP, pad=0):
    bth = bytearray(C.BTH_SIZE)
    bth[C.BTH_OFF_OPCODE] = opcode
    bth[C.BTH_OFF_FLAGS] = pad << C.BTH_PAD_SHIFT
    struct.pack_into(">H", bth, C.BTH_OFF_PKEY, 0xffff)
    struct.pack_into(">I", bth, C.BTH_OFF_DEST_QP - 1, qp)
    deth = bytearray(C.DETH_SIZE)
    struct.pack_into(">I", deth, C.DETH_OFF_QKEY, C.GSI_QKEY)
    struct.pack_into(">I", deth, C.DETH_OFF_SRC_QP - 1, C.GSI_QP)
    # the ICRC is not checked by siwx-ipcm: zeros
    return bytes(bth) + bytes(deth) + payload + bytes(pad) + \
        bytes(C.ICRC_SIZE)


def udp(payload, src, dst, sport=49152, dport=C.ROCEV2_UDP_PORT,
        length=None):
    n = 8 + len(payload) if length is None else length
    h = struct.pack(">HHHH", sport, dport, n, 0)
    if ":" in src:
        pseudo = socket.inet_pton(socket.AF_INET6, src) + \
            socket.inet_pton(socket.AF_INET6, dst) + \
            struct.pack(">IxxxB", 8 + len(payload), 17)
    else:
        pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + \
            struct.pack(">xBH", 17, 8 + len(payload))
    c = csum(pseudo + h + payload) or 0xffff
    return h[:6] + struct.pack(">H", c) + payload


def ipv4(payload, src, dst, proto=17, frag=0):
    h = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload),
                              1, frag, 64, proto, 0,
                              socket.inet_aton(src), socket.inet_aton(dst)))
    struct.pack_into(">H", h, 10, csum(bytes(h)))
    return bytes(h) + payload


def ipv6(payload, src, dst, nh=17):
    return struct.pack(">IHBB16s16s", 6 << 28, len(payload), nh, 64,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst)) + payload


def ip_packet(m, src, dst, **kw):
    """A RoCEv2 packet carrying MAD m between src and dst, as IP."""
    u = udp(roce(m, **kw), src, dst)
    return ipv6(u, src, dst) if ":" in src else ipv4(u, src, dst)


def eth(packet, vlan=0):
    et = 0x86dd if packet[0] >> 4 == 6 else 0x0800
    h = bytes.fromhex("020000000002" "020000000001")
    for _ in range(vlan):
        h += struct.pack(">HH", 0x8100, 100)
    return h + struct.pack(">H", et) + packet


def sll(packet):
    et = 0x86dd if packet[0] >> 4 == 6 else 0x0800
    return struct.pack(">HHH8sH", 0, 1, 6, bytes(8), et) + packet


def sll2(packet):
    et = 0x86dd if packet[0] >> 4 == 6 else 0x0800
    return struct.pack(">HHIHBB8s", et, 0, 2, 1, 0, 6, bytes(8)) + packet


LT_ETHERNET, LT_RAW, LT_SLL, LT_IPV4, LT_IPV6, LT_SLL2 = \
    1, 101, 113, 228, 229, 276


def pcap(frames, linktype=LT_ETHERNET, endian="<", nsec=False,
         caplen=None):
    """A libpcap file; caplen cuts every record (snap length)."""
    magic = 0xa1b23c4d if nsec else 0xa1b2c3d4
    out = struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 262144,
                      linktype)
    for i, f in enumerate(frames):
        inc = f if caplen is None else f[:caplen]
        out += struct.pack(endian + "IIII", 1700000000 + i, i, len(inc),
                           len(f)) + inc
    return out


def conversation(src=A4, dst=B4, pd=None, service_id=None, close=True):
    """The MADs of a whole connection: (mad, from_active) pairs."""
    seq = [(req(pd=pd if pd is not None else ipcm_hdr(src, dst),
                service_id=service_id), True),
           (simple(C.CM_ATTR_REP, ID_B, ID_A), False),
           (simple(C.CM_ATTR_RTU, ID_A, ID_B), True)]
    if close:
        seq += [(simple(C.CM_ATTR_DREQ, ID_A, ID_B), True),
                (simple(C.CM_ATTR_DREP, ID_B, ID_A), False)]
    return seq


def frames_of(seq, src=A4, dst=B4, link=eth):
    return [link(ip_packet(m, src if act else dst, dst if act else src))
            for m, act in seq]


# ------------------------------------------------------------ runner

class Tool:
    def __init__(self, build):
        self.exe = os.path.join(build, "siwx-ipcm")
        self.unit = os.path.join(build, "test-ipcm")
        self.tmp = tempfile.mkdtemp(prefix="ipcm-test.")
        self.n = 0

    def write(self, data, name=None):
        self.n += 1
        p = os.path.join(self.tmp, name or "t%03d.pcap" % self.n)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def run(self, *args, stdin=None, cwd=None):
        r = subprocess.run([self.exe] + list(args), input=stdin, cwd=cwd,
                           capture_output=True, timeout=60)
        return r.returncode, r.stdout.decode(errors="replace"), \
            r.stderr.decode(errors="replace")

    def json(self, data):
        """exit status, the connection objects, the capture-level object
        (or None), stderr"""
        rc, out, err = self.run("--json", self.write(data))
        objs = []
        for line in out.splitlines():
            try:
                objs.append(json.loads(line))
            except ValueError:
                objs.append({"unparsable": line})
        conns = [o for o in objs if o.get("conn") is not None]
        glob = [o for o in objs if o.get("conn", 0) is None]
        return rc, conns, (glob[0] if glob else None), err


def names(obj):
    return [d["name"] for d in obj["deviations"]] if obj else []


def types_(conn):
    return [m["type"] for m in conn["messages"]]


# ------------------------------------------------------------ header

def t_header():
    check("header.rules", VALUES and all(k.startswith("SIWX_")
                                          for k in VALUES),
          "siwx_wire.parse(include/siwx/ipcm.h) failed")
    src = ['#include <stdio.h>', '#include "%s"' % HEADER,
           "int main(void)", "{"]
    for n in VALUES:
        src.append('\tprintf("%s=%%llu\\n", (unsigned long long)(%s));'
                   % (n, n))
    src += ["\treturn 0;", "}"]
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, "dump.c"), os.path.join(d, "dump")
        with open(c, "w") as f:
            f.write("\n".join(src) + "\n")
        r = subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-Wall",
                            "-Werror", "-o", exe, c], capture_output=True,
                           text=True)
        if r.returncode:
            check("header.c_equals_python", False, r.stderr[-2000:])
        else:
            out = subprocess.run([exe], capture_output=True, text=True,
                                 check=True).stdout
            got = dict(line.split("=", 1) for line in out.split())
            bad = ["%s: C %s, Python %d" % (n, got.get(n), v)
                   for n, v in VALUES.items() if int(got.get(n, -1)) != v]
            check("header.c_equals_python (%d values)" % len(VALUES),
                  not bad, "\n".join(bad))
    # facts from the annex's slides and Linux, typed in here on purpose
    # (a header edited consistently in C and Python but wrongly fails)
    # -- facts --
    equal("header.known_values",
          (C.IPCM_SID_PREFIX, C.IPCM_PS_TCP, C.IPCM_PS_UDP, C.IPCM_PS_IB,
           C.IPCM_PS_MASK, C.IPCM_HDR_SIZE, C.IPCM_CONSUMER_PD_SIZE,
           C.CM_REQ_OFF_PD, C.IPCM_REJ_SIZE, C.IPCM_ARI_UNKNOWN_ADDR,
           C.ROCEV2_UDP_PORT, C.CM_ATTR_REQ, C.CM_ATTR_DREP),
          (0x0000000001000000, 0x0000000001060000, 0x0000000001110000,
           0x00000000013F0000, 0xFFFFFFFFFFFF0000, 36, 56, 140, 72, 6,
           4791, 0x10, 0x16))
    # -- end of facts --
    equal("header.port_spaces_are_annex_sids",
          [C.IPCM_SID_PREFIX | p << C.IPCM_SID_PROTOCOL_SHIFT
           for p in (C.IPCM_PROTOCOL_TCP, C.IPCM_PROTOCOL_UDP,
                     C.IPCM_PROTOCOL_IB)],
          [C.IPCM_PS_TCP, C.IPCM_PS_UDP, C.IPCM_PS_IB])
    # no copies: the numbers live in the header only
    found = []
    for d, _, fs in os.walk(SRC):
        for f in fs:
            if not f.endswith((".c", ".h", ".py")):
                continue
            p = os.path.join(d, f)
            with open(p, errors="replace") as fh:
                text = fh.read()
            rel = os.path.relpath(p, TOP)
            # this file's known_values are the one deliberate copy
            text = re.sub(r"# -- facts --.*?# -- end of facts --", "", text,
                          flags=re.S)
            # a number in a comment documents, it does not copy
            if f.endswith((".c", ".h")):
                text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
            else:
                text = re.sub(r'"""[\s\S]*?"""|#.*$', "", text,
                              flags=re.M)
            for pat in (r"\b4791\b", r"(?i)0x0000000001[0-9a-f]{6}\b",
                        r"(?m)^\s*#\s*define\s+SIWX_"):
                for m in re.finditer(pat, text):
                    found.append("%s: %s" % (rel, m.group(0)))
    check("header.no_copies", not found, "\n".join(found))


# ------------------------------------------------------------ Linux

def linux_sources(build, scratch):
    """{basename: text} of the Linux files compared, or a reason. An
    extract is cached in build/linux-ref (scratch/linux-ref if build is
    no directory)."""
    if not os.path.isdir(build):
        build = scratch
    want = ["drivers/infiniband/core/cma.c", "include/rdma/rdma_cm.h",
            "include/rdma/ib_cm.h", "include/rdma/ibta_vol1_c12.h",
            "include/rdma/ib_mad.h", "drivers/infiniband/core/cm_msgs.h"]
    bdir = os.environ.get("SIWX_BUILD", os.path.join(TOP, "build"))
    trees = [os.path.join(bdir, "linux", "pristine"),
             os.path.join(build, "linux-ref")]
    for t in trees:
        if all(os.path.exists(os.path.join(t, w)) for w in want):
            break
    else:
        tarball = os.environ.get("LINUX_TARBALL",
                                 "/usr/src/linux-source-6.12.tar.xz")
        if not os.path.exists(tarball):
            return None, "no Linux 6.12 source (build/linux/pristine, %s)" \
                % tarball
        t = os.path.join(build, "linux-ref")
        tmp = t + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        r = subprocess.run(["tar", "-xJf", tarball, "-C", tmp,
                            "--strip-components=1", "--wildcards"] +
                           ["*/" + w for w in want],
                           capture_output=True, text=True)
        if r.returncode:
            return None, "tar: " + r.stderr[-300:]
        shutil.rmtree(t, ignore_errors=True)
        os.rename(tmp, t)
    out = {}
    for w in want:
        with open(os.path.join(t, w), errors="replace") as f:
            out[os.path.basename(w)] = f.read()
    return out, t


def tokens(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.findall(r"\w+|->|!=|==|<<|>>|&&|\|\||[^\s\w]", text)


def c_block(text, head):
    """The text from head to its closing brace (and a ';' after it)."""
    i = text.find(head)
    if i < 0:
        return None
    j, depth = text.index("{", i), 0
    for k in range(j, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if not depth:
                end = k + 1
                if text[end:end + 1] == ";":
                    end += 1
                return text[i:end]
    return None


def c_define(text, name):
    m = re.search(r"#define\s+%s\s+(.*)" % re.escape(name), text)
    return m.group(1).strip() if m else None


def t_linux(build, scratch):
    srcs, where = linux_sources(build, scratch)
    tests = ["linux.cma_hdr_is_the_kernels", "linux.format_hdr_statements",
             "linux.save_ip_info_statements", "linux.port_spaces",
             "linux.cm_layout", "linux.attr_ids_and_sizes"]
    if srcs is None:
        for t in tests:
            skip(t, where)
        return
    cma = srcs["cma.c"]
    with open(os.path.join(HERE, "test-ipcm.c")) as f:
        ours = f.read()
    bad = []
    for head in ("union cma_ip_addr {", "struct cma_hdr {",
                 "static inline u8 cma_get_ip_ver(",
                 "static void cma_set_ip_ver("):
        a, b = c_block(cma, head), c_block(ours, head)
        if a is None or b is None or tokens(a) != tokens(b):
            bad.append("%s differs:\nkernel: %s\nours:   %s" % (head, a, b))
    if c_define(cma, "CMA_VERSION") != c_define(ours, "CMA_VERSION"):
        bad.append("CMA_VERSION")
    check("linux.cma_hdr_is_the_kernels", not bad,
          "\n".join(bad) + "\n(%s)" % where)

    def statements(block):
        return [" ".join(tokens(s)) for s in re.findall(
            r"[^;{}]*;", re.sub(r"/\*.*?\*/", "", block, flags=re.S))]
    kfmt = c_block(cma, "static int cma_format_hdr(")
    ofmt = c_block(ours, "static void linux_format_hdr(")
    mine = [s for s in statements(ofmt) if "cma_hdr" in s and
            "struct cma_hdr" not in s]
    missing = [s for s in mine if s not in statements(kfmt or "")]
    # the buffer the header goes in is zeroed (kzalloc) in cma_connect_ib()
    conn = c_block(cma, "static int cma_connect_ib(") or ""
    if not re.search(r"private_data\s*=\s*kzalloc\(", conn):
        missing.append("cma_connect_ib(): private_data = kzalloc(...)")
    check("linux.format_hdr_statements (%d)" % len(mine),
          mine and not missing, "not in the kernel's:\n" +
          "\n".join(missing))

    ksave = (c_block(cma, "static int cma_save_ip_info(") or "") + \
        (c_block(cma, "static void cma_save_ip4_info(") or "") + \
        (c_block(cma, "static void cma_save_ip6_info(") or "")
    k = " ".join(tokens(ksave))
    osave = c_block(ours, "static int linux_save_ip_info(")
    needed = ["if ( hdr -> cma_version != CMA_VERSION ) return - EINVAL ;",
              "switch ( cma_get_ip_ver ( hdr ) ) { case 4 :",
              "case 6 :", "default : return - EAFNOSUPPORT ;",
              ". sin_addr . s_addr = hdr -> dst_addr . ip4 . addr ,",
              ". sin_addr . s_addr = hdr -> src_addr . ip4 . addr ,",
              ". sin_port = hdr -> port ,",
              ". sin6_addr = hdr -> dst_addr . ip6 ,",
              ". sin6_addr = hdr -> src_addr . ip6 ,",
              ". sin6_port = hdr -> port ,"]
    o = " ".join(tokens(osave or ""))
    missing = [n for n in needed if n not in k or n not in o]
    check("linux.save_ip_info_statements", not missing,
          "not in both cma_save_ip*_info() and ours:\n" + "\n".join(missing))

    rc = srcs["rdma_cm.h"]
    got = [int(re.sub(r"[uUlL]+$", "", c_define(rc, "RDMA_IB_IP_PS_" + n)
                      or "-1"), 0)
           for n in ("MASK", "TCP", "UDP", "IB")]
    equal("linux.port_spaces", got,
          [C.IPCM_PS_MASK, C.IPCM_PS_TCP, C.IPCM_PS_UDP, C.IPCM_PS_IB])

    h = srcs["ibta_vol1_c12.h"]

    def field(name):
        m = re.search(r"#define\s+%s\s+CM_FIELD(?:_MLOC|_BLOC|\d+_LOC)\("
                      r"struct\s+\w+,\s*(\d+)(?:,\s*(\d+))?" % name, h)
        return (int(m.group(1)), int(m.group(2) or 0)) if m else None
    layout = {
        "CM_REQ_LOCAL_COMM_ID": (C.CM_OFF_LOCAL_COMM_ID, 32),
        "CM_REQ_SERVICE_ID": (C.CM_REQ_OFF_SERVICE_ID, 0),
        "CM_REQ_PRIVATE_DATA": (C.CM_REQ_OFF_PD, C.CM_REQ_PD_SIZE * 8),
        "CM_MRA_REMOTE_COMM_ID": (C.CM_OFF_REMOTE_COMM_ID, 32),
        "CM_MRA_PRIVATE_DATA": (C.CM_MRA_OFF_PD, C.CM_MRA_PD_SIZE * 8),
        "CM_REJ_LOCAL_COMM_ID": (C.CM_OFF_LOCAL_COMM_ID, 32),
        "CM_REJ_REMOTE_COMM_ID": (C.CM_OFF_REMOTE_COMM_ID, 32),
        "CM_REJ_MESSAGE_REJECTED": (C.CM_REJ_OFF_MSG_REJECTED,
                                    8 - C.CM_REJ_MSG_REJECTED_SHIFT),
        "CM_REJ_REJECTED_INFO_LENGTH": (C.CM_REJ_OFF_INFO_LEN,
                                        8 - C.CM_REJ_INFO_LEN_SHIFT),
        "CM_REJ_REASON": (C.CM_REJ_OFF_REASON, 16),
        "CM_REJ_ARI": (C.CM_REJ_OFF_ARI, C.CM_REJ_ARI_SIZE * 8),
        "CM_REJ_PRIVATE_DATA": (C.CM_REJ_OFF_PD, C.CM_REJ_PD_SIZE * 8),
        "CM_REP_LOCAL_COMM_ID": (C.CM_OFF_LOCAL_COMM_ID, 32),
        "CM_REP_REMOTE_COMM_ID": (C.CM_OFF_REMOTE_COMM_ID, 32),
        "CM_REP_PRIVATE_DATA": (C.CM_REP_OFF_PD, C.CM_REP_PD_SIZE * 8),
        "CM_RTU_LOCAL_COMM_ID": (C.CM_OFF_LOCAL_COMM_ID, 32),
        "CM_RTU_REMOTE_COMM_ID": (C.CM_OFF_REMOTE_COMM_ID, 32),
        "CM_RTU_PRIVATE_DATA": (C.CM_RTU_OFF_PD, C.CM_RTU_PD_SIZE * 8),
        "CM_DREQ_LOCAL_COMM_ID": (C.CM_OFF_LOCAL_COMM_ID, 32),
        "CM_DREQ_REMOTE_COMM_ID": (C.CM_OFF_REMOTE_COMM_ID, 32),
        "CM_DREQ_PRIVATE_DATA": (C.CM_DREQ_OFF_PD, C.CM_DREQ_PD_SIZE * 8),
        "CM_DREP_LOCAL_COMM_ID": (C.CM_OFF_LOCAL_COMM_ID, 32),
        "CM_DREP_REMOTE_COMM_ID": (C.CM_OFF_REMOTE_COMM_ID, 32),
        "CM_DREP_PRIVATE_DATA": (C.CM_DREP_OFF_PD, C.CM_DREP_PD_SIZE * 8),
    }
    bad = ["%s: kernel %r, ours %r" % (n, field(n), v)
           for n, v in layout.items() if field(n) != v]
    check("linux.cm_layout (%d fields of ibta_vol1_c12.h)" % len(layout),
          not bad, "\n".join(bad))

    cm, madh, msgs = srcs["ib_cm.h"], srcs["ib_mad.h"], srcs["cm_msgs.h"]

    def num(text, name):
        m = re.search(r"\b%s\b\s*(?:=\s*|cpu_to_be16\(|\s)\s*(0x[0-9a-fA-F]+"
                      r"|\d+)" % re.escape(name), text)
        return int(m.group(1), 0) if m else None
    pairs = [(num(cm, "CM_%s_ATTR_ID" % a), getattr(C, "CM_ATTR_" + a))
             for a in ("REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP")]
    pairs += [(num(cm, "IB_CM_%s_PRIVATE_DATA_SIZE" % a),
               getattr(C, "CM_%s_PD_SIZE" % a))
              for a in ("REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP")]
    pairs += [(num(cm, "IB_CM_REJ_ARI_LENGTH"), C.CM_REJ_ARI_SIZE),
              (num(cm, "IB_CM_REJ_CONSUMER_DEFINED"),
               C.CM_REJ_REASON_CONSUMER),
              (num(cm, "IB_CM_REJ_INVALID_SERVICE_ID"),
               C.CM_REJ_REASON_INVALID_SID),
              (num(madh, "IB_MGMT_CLASS_CM"), C.MAD_CLASS_CM),
              (num(madh, "IB_MGMT_METHOD_SEND"), C.MAD_METHOD_SEND),
              (num(madh, "IB_MGMT_BASE_VERSION"), C.MAD_BASE_VERSION),
              (num(msgs, "IB_CM_CLASS_VERSION"), C.CM_CLASS_VERSION),
              (num(madh, "IB_MGMT_MAD_HDR"), C.MAD_HDR_SIZE),
              (num(madh, "IB_MGMT_MAD_DATA"), C.MAD_SIZE - C.MAD_HDR_SIZE)]
    bad = ["pair %d: kernel %r, ours %r" % (i, a, b)
           for i, (a, b) in enumerate(pairs) if a != b]
    check("linux.attr_ids_and_sizes (%d)" % len(pairs), not bad,
          "\n".join(bad))


# ------------------------------------------------------------ unit

def t_unit(tool):
    r = subprocess.run([tool.unit], capture_output=True, text=True,
                       timeout=120)
    n = 0
    diag = []
    for line in r.stdout.splitlines():
        m = re.match(r"(not )?ok \d+ - (.*)", line)
        if m:
            n += 1
            RESULTS.append((not m.group(1), "unit." + m.group(2), None,
                            "\n".join(diag) or None))
            diag = []
        elif line.startswith("#"):
            diag.append(line[2:])
    plan = re.search(r"^1\.\.(\d+)$", r.stdout, re.M)
    check("unit.complete (exit %d, %d checks)" % (r.returncode, n),
          r.returncode == 0 and n > 100 and plan and int(plan.group(1)) == n,
          r.stderr[-2000:])


# ------------------------------------------------------------ pcap

def good_v4():
    return pcap(frames_of(conversation()))


def good_v6():
    return pcap(frames_of(conversation(A6, B6), A6, B6))


def t_good(tool):
    rc, conns, glob, err = tool.json(good_v4())
    equal("pcap.good_ipv4.exit", rc, 0)
    ok = equal("pcap.good_ipv4.one_connection", len(conns), 1)
    if ok:
        c = conns[0]
        equal("pcap.good_ipv4.fields",
              {k: c[k] for k in ("conn", "peer", "frame", "req", "sid",
                                 "annex", "protocol", "protocol_name",
                                 "dport", "major", "minor", "ip_version",
                                 "reserved", "src", "sport", "dst")},
              {"conn": "0x11111111", "peer": "0x22222222", "frame": 1,
               "req": True, "sid": "0x%016x" % sid(), "annex": True,
               "protocol": 6, "protocol_name": "tcp", "dport": PORT,
               "major": 0, "minor": 0, "ip_version": 4, "reserved": 0,
               "src": A4, "sport": SPORT, "dst": B4})
        equal("pcap.good_ipv4.messages",
              [(m["type"], m["frame"]) for m in c["messages"]],
              [("REQ", 1), ("REP", 2), ("RTU", 3), ("DREQ", 4),
               ("DREP", 5)])
        equal("pcap.good_ipv4.no_deviations", c["deviations"], [])
    equal("pcap.good_ipv4.no_capture_deviations", glob, None)

    rc, conns, glob, err = tool.json(good_v6())
    equal("pcap.good_ipv6.exit", rc, 0)
    if equal("pcap.good_ipv6.one_connection", len(conns), 1):
        c = conns[0]
        equal("pcap.good_ipv6.fields",
              [c[k] for k in ("ip_version", "src", "sport", "dst", "dport",
                              "protocol_name")],
              [6, A6, SPORT, B6, PORT, "tcp"])
        equal("pcap.good_ipv6.messages", types_(c),
              ["REQ", "REP", "RTU", "DREQ", "DREP"])
        equal("pcap.good_ipv6.no_deviations", c["deviations"], [])

    # rdma_cm's other port spaces, an unnamed protocol, IPv4-mapped v4
    for name, proto, pname in (("udp", C.IPCM_PROTOCOL_UDP, "udp"),
                               ("ib", C.IPCM_PROTOCOL_IB, "ib"),
                               ("sctp", 132, None)):
        rc, conns, _, _ = tool.json(pcap(frames_of(conversation(
            service_id=sid(proto, 5000)))))
        equal("pcap.protocol_%s" % name,
              (rc, [(c["protocol"], c["protocol_name"], c["dport"])
                    for c in conns]), (0, [(proto, pname, 5000)]))
    mapped = b"\0" * 10 + b"\xff\xff"
    rc, conns, _, _ = tool.json(pcap(frames_of(conversation(pd=ipcm_hdr(
        src16=mapped + socket.inet_aton(A4),
        dst16=mapped + socket.inet_aton(B4))))))
    equal("pcap.ipv4_mapped_addresses_taken",
          (rc, [(c["src"], c["dst"], c["deviations"]) for c in conns]),
          (0, [(A4, B4, [])]))


# (name, REQ header or SID change, expected deviations)
MALFORMED = [
    ("bad_sid", dict(service_id=0x0000000002060000 | PORT),
     ["sid-not-in-annex-range"]),
    ("bad_sid_agn", dict(service_id=0x0100000001060000 | PORT),
     ["sid-not-in-annex-range"]),
    ("major_version", dict(pd=ipcm_hdr(major=1)), ["major-version"]),
    ("minor_version", dict(pd=ipcm_hdr(minor=2)), ["minor-version"]),
    ("ip_version", dict(pd=ipcm_hdr(ipv=5)), ["ip-version"]),
    ("reserved_bits", dict(pd=ipcm_hdr(rsvd=0xf)), ["reserved-bits"]),
    ("src_addr_format_v4", dict(pd=ipcm_hdr(src16=addr16(A6))),
     ["src-addr-format"]),
    ("dst_addr_format_v4", dict(pd=ipcm_hdr(
        dst16=bytes(11) + b"\1" + socket.inet_aton(B4))),
     ["dst-addr-format"]),
    ("src_addr_format_v6", dict(pd=ipcm_hdr(A6, B6, src16=bytes(10) +
                                            b"\xff\xff" +
                                            socket.inet_aton(A4))),
     ["src-addr-format"]),
    ("dst_addr_format_v6", dict(pd=ipcm_hdr(A6, B6, dst16=addr16(B4))),
     ["dst-addr-format"]),
    ("everything", dict(pd=ipcm_hdr(major=3, minor=1, rsvd=1,
                                    src16=addr16(A6), dst16=addr16(B6))),
     ["major-version", "minor-version", "reserved-bits",
      "src-addr-format", "dst-addr-format"]),
]


def t_malformed(tool):
    for name, kw, want in MALFORMED:
        seq = [(req(service_id=kw.get("service_id"), pd=kw.get("pd")),
                True),
               (rej(reason=C.CM_REJ_REASON_INVALID_SID
                    if "sid" in name else C.CM_REJ_REASON_CONSUMER,
                    ari=b"" if "sid" in name else
                    annex_ari(C.IPCM_ARI_UNSPECIFIED)), False)]
        rc, conns, glob, err = tool.json(pcap(frames_of(seq)))
        got = (rc, len(conns), names(conns[0]) if conns else None, glob)
        equal("pcap.malformed.%s" % name, got, (1, 1, want, None))
        if conns:
            equal("pcap.malformed.%s.frame" % name,
                  sorted({d["frame"] for d in conns[0]["deviations"]}), [1])
    # the JSON of a bad SID: no 5-tuple, the SID as sent
    rc, conns, _, _ = tool.json(pcap(frames_of(
        [(req(service_id=0x0123456789abcdef), True)])))
    if check("pcap.bad_sid.json_present", conns, "no connection"):
        equal("pcap.bad_sid.json", [conns[0][k] for k in (
            "sid", "annex", "protocol", "src", "dst", "dport")],
            ["0x0123456789abcdef", False, None, None, None, None])
    # IPV 5: the addresses are shown as the 16 bytes they are
    rc, conns, _, _ = tool.json(pcap(frames_of(
        [(req(pd=ipcm_hdr(ipv=5)), True)])))
    equal("pcap.ip_version.addresses_raw",
          [(c["ip_version"], c["src"], c["dst"]) for c in conns],
          [(5, "::" + A4, "::" + B4)])


REJECTS = [
    # (name, ARI bytes, info_len or None, expected deviations,
    #  expected message fields)
    ("annex_unknown_addr", annex_ari(C.IPCM_ARI_UNKNOWN_ADDR, addr16(B6)),
     None, [], {"layer": 0, "layer_name": "ip-cm", "ari": 6,
                "ari_name": "unknown-addr", "value_len": 16,
                "value": addr16(B6).hex()}),
    ("annex_ip_version", annex_ari(C.IPCM_ARI_IP_VERSION, b"\x06"), None,
     [], {"ari_name": "ip-version", "value": "06"}),
    ("annex_unspecified", annex_ari(C.IPCM_ARI_UNSPECIFIED), None, [],
     {"ari": 0, "ari_name": "unspecified", "value": "", "value_len": 0}),
    ("ulp_layer", bytes([C.IPCM_LAYER_ULP]) + b"app says no", None, [],
     {"layer": 1, "layer_name": "ulp", "ulp": b"app says no".hex()}),
    ("empty_reason_28", b"", None, ["rej-without-annex-ari"],
     {"ari_len": 0}),
    ("reject_layer", bytes([2, 0, 0, 0]), None, ["reject-layer"],
     {"layer": 2, "layer_name": None}),
    ("ari_unknown", annex_ari(9), None, ["ari-unknown"],
     {"ari": 9, "ari_name": None}),
    ("value_too_long", annex_ari(6, bytes(C.IPCM_REJ_VALUE_MAX),
                                 value_len=C.IPCM_REJ_VALUE_MAX + 1),
     None, ["suggested-value-too-long"], {"value_len": 69}),
    ("value_truncated", annex_ari(6, bytes(4), value_len=8), None,
     ["suggested-value-truncated"], {"value_len": 8}),
    ("rej_reserved", annex_ari(0, rsvd=0x80), None, ["rej-reserved"], {}),
    ("rej_short", bytes([0, 1]), None, ["rej-short"], {"ari": 1}),
    ("info_length", annex_ari(0), 100, ["rej-info-length"],
     {"ari_len": 100}),
]


def t_rejects(tool):
    for name, ari, info_len, want, fields in REJECTS:
        seq = [(req(), True), (rej(ari=ari, info_len=info_len), False)]
        rc, conns, glob, err = tool.json(pcap(frames_of(seq)))
        equal("pcap.reject.%s" % name,
              (rc, [names(c) for c in conns], glob),
              (1 if want else 0, [want], None))
        msgs = conns[0]["messages"] if conns else []
        r = msgs[1] if len(msgs) > 1 else {}
        equal("pcap.reject.%s.fields" % name,
              {k: r.get(k, "missing") for k in
               ["type", "reason", "msg_rejected"] + list(fields)},
              dict(type="REJ", reason=28, msg_rejected=0, **fields))
    # reason 28 without ARI is only a deviation for the REQ of an annex
    # SID: a rejected REP, or a non-annex SID, are not the annex's
    seq = [(req(), True), (simple(C.CM_ATTR_REP, ID_B, ID_A), False),
           (rej(ID_A, ID_B, msg=C.CM_REJ_MSG_REP), True)]
    rc, conns, glob, _ = tool.json(pcap(frames_of(seq)))
    equal("pcap.reject.of_rep_not_checked",
          (rc, [(types_(c), names(c)) for c in conns]),
          (0, [(["REQ", "REP", "REJ"], [])]))
    seq = [(req(service_id=0x1000000000000001), True), (rej(), False)]
    rc, conns, glob, _ = tool.json(pcap(frames_of(seq)))
    equal("pcap.reject.non_annex_sid_not_checked",
          (rc, [names(c) for c in conns]), (1, [["sid-not-in-annex-range"]]))
    seq = [(req(), True), (rej(reason=C.CM_REJ_REASON_INVALID_SID), False)]
    rc, conns, glob, _ = tool.json(pcap(frames_of(seq)))
    equal("pcap.reject.reason_8",
          (rc, [[(m["type"], m.get("reason"), "layer" in m)
                 for m in c["messages"]] for c in conns]),
          (0, [[("REQ", None, False), ("REJ", 8, False)]]))


def t_noise(tool):
    noise = [
        # DNS, TCP, ARP
        eth(ipv4(udp(b"\0" * 20, A4, B4, 5353, 53), A4, B4)),
        eth(ipv4(b"\0" * 40, A4, B4, proto=6)),
        bytes(12) + b"\x08\x06" + bytes(28),
        # RoCEv2 RC SEND to QP 0x11; UD to QP 1 of another class (SA)
        eth(ip_packet(req(), A4, B4, opcode=0x04, qp=0x11)),
        eth(ip_packet(b"\x01\x03" + req()[2:], A4, B4)),
        # a UD packet to QP 2; a CM SIDR_REQ (not a connection message)
        eth(ip_packet(req(), A4, B4, qp=2)),
        eth(ip_packet(mad(0x17, ids(5, 0)), A4, B4)),
        # MAD base version 0x80 (OPA); an IPv4 fragment; UDP to 4792
        eth(ip_packet(b"\x80" + req()[1:], A4, B4)),
        eth(ipv4(udp(roce(req()), A4, B4), A4, B4, frag=0x2000)),
        eth(ipv4(udp(roce(req()), A4, B4, dport=4792), A4, B4)),
        # a frame shorter than an Ethernet header
        b"\x02",
    ]
    frames = noise[:6] + frames_of(conversation()) + noise[6:]
    rc, conns, glob, err = tool.json(pcap(frames))
    equal("pcap.noise_ignored",
          (rc, [(c["conn"], types_(c), c["deviations"]) for c in conns],
           glob),
          (0, [("0x11111111", ["REQ", "REP", "RTU", "DREQ", "DREP"], [])],
           None))
    rc, out, err = tool.run(tool.write(pcap(frames)))
    last = out.splitlines()[-1] if out else ""
    check("pcap.noise_counted", re.search(
        r": %d frames, 10 RoCEv2, 5 CM MADs, 1 connections, 0 deviations$"
        % len(frames), last), last)
    # an IPv6 hop-by-hop header before UDP is walked over
    u = udp(roce(req(pd=ipcm_hdr(A6, B6, major=1))), A6, B6)
    hop = bytes([17, 0]) + bytes(6)
    p = struct.pack(">IHBB16s16s", 6 << 28, len(hop) + len(u), 0, 64,
                    socket.inet_pton(socket.AF_INET6, A6),
                    socket.inet_pton(socket.AF_INET6, B6)) + hop + u
    rc, conns, _, _ = tool.json(pcap([eth(p)]))
    equal("pcap.ipv6_extension_header",
          (rc, [names(c) for c in conns]), (1, [["major-version"]]))


def t_grouping(tool):
    # two connections interleaved, a REQ retransmitted, an MRA, and a
    # connection whose REQ the capture missed
    c2a, c2b = 0x33333333, 0x44444444
    seq = [
        (req(), True),
        (req(local=c2a, pd=ipcm_hdr(sport=40002)), True),
        (req(), True),
        (simple(C.CM_ATTR_MRA, ID_B, ID_A), False),
        (simple(C.CM_ATTR_REP, c2b, c2a), False),
        (simple(C.CM_ATTR_REP, ID_B, ID_A), False),
        (simple(C.CM_ATTR_RTU, c2a, c2b), True),
        (simple(C.CM_ATTR_RTU, ID_A, ID_B), True),
        (simple(C.CM_ATTR_DREQ, c2b, c2a), False),
        (simple(C.CM_ATTR_DREP, c2a, c2b), True),
        (simple(C.CM_ATTR_RTU, 0x55555555, 0x66666666), True),
        # the first connection's ID reused after a REJ: a new connection
        (rej(), False),
        (req(pd=ipcm_hdr(sport=40003)), True),
    ]
    rc, conns, glob, _ = tool.json(pcap(frames_of(seq)))
    equal("pcap.grouping",
          (rc, [(c["conn"], c["peer"], c["req"], c["sport"], types_(c))
                for c in conns]),
          (1, [("0x11111111", "0x22222222", True, SPORT,
                ["REQ", "REQ", "MRA", "REP", "RTU", "REJ"]),
               ("0x33333333", "0x44444444", True, 40002,
                ["REQ", "REP", "RTU", "DREQ", "DREP"]),
               ("0x55555555", "0x66666666", False, None, ["RTU"]),
               ("0x11111111", None, True, 40003, ["REQ"])]))
    # the REJ (reason 28, no ARI) of the first: its one deviation
    equal("pcap.grouping.deviations", [names(c) for c in conns],
          [["rej-without-annex-ari"], [], [], []])


def t_links(tool):
    seq = conversation()
    want = (0, [("0x11111111", A4, SPORT, B4, PORT,
                 ["REQ", "REP", "RTU", "DREQ", "DREP"], [])])

    def summary(data):
        rc, conns, glob, err = tool.json(data)
        return (rc, [(c["conn"], c["src"], c["sport"], c["dst"], c["dport"],
                      types_(c), names(c)) for c in conns])
    raw4 = [ip_packet(m, A4 if a else B4, B4 if a else A4) for m, a in seq]
    raw6 = [ip_packet(m, A6 if a else B6, B6 if a else A6) for m, a in seq]
    cases = [
        ("ethernet_vlan", pcap(frames_of(seq, link=lambda p: eth(p, 1)))),
        ("ethernet_qinq", pcap(frames_of(seq, link=lambda p: eth(p, 2)))),
        ("linux_sll", pcap(frames_of(seq, link=sll), LT_SLL)),
        ("linux_sll2", pcap(frames_of(seq, link=sll2), LT_SLL2)),
        ("raw_ip", pcap(raw4, LT_RAW)),
        ("linktype_ipv4", pcap(raw4, LT_IPV4)),
        ("big_endian", pcap(frames_of(seq), endian=">")),
        ("nanosecond", pcap(frames_of(seq), nsec=True)),
        ("big_endian_nanosecond", pcap(frames_of(seq), endian=">",
                                       nsec=True)),
        ("bth_pad_count", pcap([eth(ip_packet(m, A4 if a else B4,
                                              B4 if a else A4, pad=3))
                                for m, a in seq])),
    ]
    for name, data in cases:
        equal("pcap.link.%s" % name, summary(data), want)
    want6 = (0, [("0x11111111", A4, SPORT, B4, PORT,
                  ["REQ", "REP", "RTU", "DREQ", "DREP"], [])])
    # IPv4 annex header in RoCEv2 over IPv6: what the REQ says counts
    equal("pcap.link.raw_ipv6", summary(pcap(raw6, LT_RAW)), want6)
    equal("pcap.link.linktype_ipv6", summary(pcap(raw6, LT_IPV6)), want6)


def t_truncated(tool):
    frames = frames_of(conversation())
    # snap length: the REQ cut inside its private data header
    cut = 14 + 20 + 8 + 12 + 8 + 24 + C.CM_REQ_OFF_PD + 10
    rc, conns, glob, err = tool.json(pcap(frames, caplen=cut))
    equal("pcap.truncated.snaplen_req",
          (rc, names(glob), [d["frame"] for d in glob["deviations"]]
           if glob else None),
          (1, ["truncated-cm-mad"], [1]))
    equal("pcap.truncated.snaplen_rest_checked",
          [types_(c) for c in conns], [["REQ", "REP", "RTU", "DREQ",
                                         "DREP"]])
    # a REJ cut inside its ARI; a REQ cut inside the MAD header
    seq = [(req(), True), (rej(ari=annex_ari(6, bytes(16))), False)]
    f = frames_of(seq)
    f[1] = f[1][:14 + 20 + 8 + 20 + 24 + C.CM_REJ_OFF_ARI + 5]
    rc, conns, glob, err = tool.json(pcap(f))
    equal("pcap.truncated.rej_ari", (rc, names(glob)),
          (1, ["truncated-cm-mad"]))
    f = [frames[0][:14 + 20 + 8 + 20 + 10]]
    rc, conns, glob, err = tool.json(pcap(f))
    equal("pcap.truncated.mad_header", (rc, names(glob), conns),
          (1, ["truncated-cm-mad"], []))
    # a short UDP datagram (its length says so), a frame cut in the BTH
    m = req()[:C.MAD_HDR_SIZE + 100]
    p = eth(ipv4(udp(roce(m), A4, B4), A4, B4))
    rc, conns, glob, err = tool.json(pcap([p]))
    equal("pcap.truncated.short_datagram", (rc, names(glob)),
          (1, ["truncated-cm-mad"]))
    rc, conns, glob, err = tool.json(pcap([frames[0][:14 + 20 + 8 + 5]]))
    equal("pcap.truncated.in_bth_ignored", (rc, conns, glob), (0, [], None))
    # a UDP length larger than the IP datagram, an IP total length of 0
    p = bytearray(frames[0])
    struct.pack_into(">H", p, 14 + 20 + 4, 60000)
    rc, conns, glob, err = tool.json(pcap([bytes(p)]))
    equal("pcap.lying_udp_length", (rc, [types_(c) for c in conns]),
          (0, [["REQ"]]))
    p = bytearray(frames[0])
    struct.pack_into(">H", p, 14 + 2, 0)
    rc, conns, glob, err = tool.json(pcap([bytes(p)]))
    equal("pcap.ip_total_length_zero", (rc, conns), (0, []))


def t_files(tool):
    good = good_v4()
    cases = [
        ("empty", b"", 2, "shorter than a pcap file header"),
        ("garbage", bytes((i * 37 + 11) & 0xff for i in range(3000)), 2,
         "not a pcap file"),
        ("pcapng", bytes.fromhex("0a0d0d0a") + bytes(60), 2, "editcap"),
        ("header_cut", good[:20], 2, "shorter than a pcap file header"),
        ("record_cut", good[:24 + 16 + 100], 2, "truncated"),
        ("record_header_cut", good[:24 + 8], 2, "truncated"),
        ("huge_record", good[:24] + struct.pack("<IIII", 0, 0, 1 << 30,
                                                 1 << 30), 2,
         "impossible length"),
        ("linktype_80211", good[:20] + struct.pack("<I", 105) + good[24:],
         2, "link type"),
        ("no_records", good[:24], 0, ""),
    ]
    for name, data, want_rc, msg in cases:
        rc, out, err = tool.run(tool.write(data))
        equal("pcap.file.%s" % name, (rc, msg in err), (want_rc, True))
    # a cut file still reports what it read before the cut
    second = 24 + 16 + len(frames_of(conversation())[0]) + 16 + 50
    rc, conns, glob, err = tool.json(good[:second])
    equal("pcap.file.cut_reports_what_was_read",
          (rc, [types_(c) for c in conns]), (2, [["REQ"]]))
    rc, out, err = tool.run(os.path.join(tool.tmp, "no-such-file"))
    equal("pcap.file.missing", (rc, "No such file" in err), (2, True))
    rc, out, err = tool.run(tool.tmp)
    equal("pcap.file.directory", rc, 2)
    rc, out, err = tool.run("-", stdin=good)
    equal("pcap.file.stdin", (rc, "REQ REP RTU DREQ DREP" in out), (0, True))

    # usage
    rc, out, err = tool.run()
    equal("pcap.usage.no_file", (rc, "usage:" in err), (2, True))
    rc, out, err = tool.run("--frobnicate", tool.write(good))
    equal("pcap.usage.unknown_option", (rc, "unknown option" in err),
          (2, True))
    rc, out, err = tool.run(tool.write(good), tool.write(good))
    equal("pcap.usage.two_files", rc, 2)
    rc, out, err = tool.run("-h")
    equal("pcap.usage.help", (rc, out.startswith("usage:")), (0, True))
    tool.write(good, "-q")
    rc, out, err = tool.run("--", "-q", cwd=tool.tmp)
    equal("pcap.usage.double_dash", (rc, "REQ REP" in out), (0, True))


def t_text(tool):
    rc, out, err = tool.run(tool.write(good_v4(), "good-v4.pcap"))
    lines = out.splitlines()
    equal("pcap.text.good_ipv4", (rc, lines[:-1]), (0, [
        "conn 0x11111111 tcp %s:%d -> %s:%d REQ REP RTU DREQ DREP"
        % (A4, SPORT, B4, PORT)]))
    check("pcap.text.summary", re.fullmatch(
        r".*good-v4\.pcap: 5 frames, 5 RoCEv2, 5 CM MADs, 1 connections, "
        r"0 deviations", lines[-1] if lines else ""), out)
    rc, out, err = tool.run(tool.write(good_v6()))
    equal("pcap.text.good_ipv6", out.splitlines()[0],
          "conn 0x11111111 tcp [%s]:%d -> [%s]:%d REQ REP RTU DREQ DREP"
          % (A6, SPORT, B6, PORT))
    rc, out, err = tool.run("-q", tool.write(good_v4()))
    equal("pcap.text.quiet_good", (rc, out), (0, ""))
    bad = pcap(frames_of([(req(pd=ipcm_hdr(ipv=5)), True),
                          (rej(ari=annex_ari(C.IPCM_ARI_IP_VERSION,
                                             b"\x04")), False)]))
    rc, out, err = tool.run(tool.write(bad))
    lines = out.splitlines()
    equal("pcap.text.deviation",
          (rc, lines[0], lines[1] if len(lines) > 1 else ""),
          (1, "conn 0x11111111 tcp [::%s]:%d -> [::%s]:%d REQ "
              "REJ(28,layer=ip-cm,ari=ip-version,value=04)"
              % (A4, SPORT, B4, PORT),
           "  deviation ip-version (frame 1): IP version 5, neither 4 nor 6"
           " (ARI 0x03)"))
    rc, out, err = tool.run("-q", tool.write(bad))
    equal("pcap.text.quiet_bad", (rc, out.splitlines()),
          (1, ["conn 0x11111111: deviation ip-version (frame 1): IP version"
               " 5, neither 4 nor 6 (ARI 0x03)"]))
    seq = [(req(), True), (rej(), False)]
    rc, out, err = tool.run(tool.write(pcap(frames_of(seq))))
    check("pcap.text.empty_reject", " REQ REJ(28,no-ari)\n" in out, out)
    seq = [(req(service_id=0x0000000002060000 | PORT), True),
           (rej(reason=8), False)]
    rc, out, err = tool.run(tool.write(pcap(frames_of(seq))))
    check("pcap.text.non_annex_sid", out.startswith(
        "conn 0x11111111 sid 0x0000000002061d2f (not an annex SID) REQ "
        "REJ(8)\n"), out)
    f = frames_of(conversation())
    rc, out, err = tool.run(tool.write(pcap(f, caplen=120)))
    check("pcap.text.capture_deviation", re.search(
        r"^capture: deviation truncated-cm-mad \(frame 1\): REQ cut short",
        out, re.M), out)
    check("pcap.text.req_cut_short", re.search(
        r"^conn 0x11111111 \(REQ cut short in the capture\) REQ REP RTU "
        r"DREQ DREP$", out, re.M), out)


def t_fuzz(tool):
    files = [tool.write(good_v4(), "fuzz-v4.pcap"),
             tool.write(pcap(frames_of([(req(), True), (rej(
                 ari=annex_ari(6, bytes(16))), False)]), LT_SLL2),
                 "fuzz-rej-sll2.pcap"),
             tool.write(pcap(frames_of(conversation(A6, B6), A6, B6),
                             endian=">"), "fuzz-v6-be.pcap")]
    r = subprocess.run([tool.unit, "--fuzz"] + files, capture_output=True,
                       text=True, timeout=600)
    lines = [l for l in r.stdout.splitlines() if re.match(r"(not )?ok ", l)]
    for line in lines:
        m = re.match(r"(not )?ok \d+ - fuzz (\S+): (.*)", line)
        RESULTS.append((not m.group(1), "fuzz.%s: %s" % (
            os.path.basename(m.group(2)), m.group(3)), None,
            r.stderr[-2000:] or None))
    # a sanitizer's report: its summary and the top of its stack
    why = [l for l in r.stderr.splitlines()
           if re.search(r"ERROR|SUMMARY|runtime error|^\s+#[0-7] ", l)]
    check("fuzz.complete (exit %d)" % r.returncode,
          r.returncode == 0 and len(lines) == len(files),
          "\n".join(why[:25]) or r.stderr[-2000:])


# ------------------------------------------------------------ tshark

def t_tshark(tool):
    tshark = shutil.which("tshark")
    tests = ["tshark.ipv4_req", "tshark.ipv6_req", "tshark.malformed_req",
             "tshark.reject"]
    if not tshark:
        for t in tests:
            skip(t, "no tshark")
        return
    fields = ["frame.number", "infiniband.cm.req",
              "infiniband.cm.req.serviceid",
              "infiniband.cm.req.serviceid.protocol",
              "infiniband.cm.req.serviceid.dport",
              "infiniband.cm.req.ip_cm.majv", "infiniband.cm.req.ip_cm.minv",
              "infiniband.cm.req.ip_cm.ipv", "infiniband.cm.req.ip_cm.sport",
              "infiniband.cm.req.ip_cm.sip4", "infiniband.cm.req.ip_cm.dip4",
              "infiniband.cm.req.ip_cm.sip6", "infiniband.cm.req.ip_cm.dip6",
              "infiniband.cm.rej.reason", "infiniband.cm.rej.rejinfolen",
              "infiniband.cm.rej.ari"]

    def ts(path):
        args = [tshark, "-n", "-r", path, "-T", "fields", "-E",
                "separator=|"]
        for f in fields:
            args += ["-e", f]
        r = subprocess.run(args, capture_output=True, text=True,
                           timeout=120,
                           env=dict(os.environ, HOME=tool.tmp))
        return [dict(zip(fields, line.split("|")))
                for line in r.stdout.splitlines()], r.stderr

    def num(v):
        return int(v, 0) if v else None

    def compare(name, data, rej_frame=None):
        p = tool.write(data)
        rows, err = ts(p)
        rc, conns, glob, _ = tool.json(data)
        if not rows or not conns:
            check(name, False, "tshark: %r\n%s" % (rows, err[-500:]))
            return
        r, c = rows[0], conns[0]
        v6 = r["infiniband.cm.req.ip_cm.ipv"] and \
            num(r["infiniband.cm.req.ip_cm.ipv"]) == 6
        got = (num(r["infiniband.cm.req"]),
               num(r["infiniband.cm.req.serviceid"]),
               num(r["infiniband.cm.req.serviceid.protocol"]),
               num(r["infiniband.cm.req.serviceid.dport"]),
               num(r["infiniband.cm.req.ip_cm.majv"]),
               num(r["infiniband.cm.req.ip_cm.minv"]),
               num(r["infiniband.cm.req.ip_cm.ipv"]),
               num(r["infiniband.cm.req.ip_cm.sport"]),
               r["infiniband.cm.req.ip_cm.sip6" if v6 else
                 "infiniband.cm.req.ip_cm.sip4"],
               r["infiniband.cm.req.ip_cm.dip6" if v6 else
                 "infiniband.cm.req.ip_cm.dip4"])
        want = (int(c["conn"], 16), int(c["sid"], 16), c["protocol"],
                c["dport"], c["major"], c["minor"], c["ip_version"],
                c["sport"], c["src"], c["dst"])
        equal(name, got, want)
        if rej_frame:
            r = rows[rej_frame - 1]
            m = c["messages"][rej_frame - 1]
            ari = r["infiniband.cm.rej.ari"].replace(":", "")
            n = num(r["infiniband.cm.rej.rejinfolen"])
            equal(name + ".rej", (num(r["infiniband.cm.rej.reason"]), n,
                                  ari[:2 * n]),
                  (m["reason"], m["ari_len"],
                   annex_ari(m["ari"], bytes.fromhex(m["value"])).hex()))

    compare("tshark.ipv4_req", good_v4())
    compare("tshark.ipv6_req", good_v6())
    compare("tshark.malformed_req", pcap(frames_of(conversation(
        pd=ipcm_hdr(major=2, minor=3)))))
    compare("tshark.reject", pcap(frames_of([
        (req(), True),
        (rej(ari=annex_ari(C.IPCM_ARI_UNKNOWN_ADDR, addr16(B6))), False)])),
        rej_frame=2)


# ------------------------------------------------------------ man, docs

def error_names():
    """(every error name of the library (ipcm.c's table), the deviation
    names siwx-ipcm can print: those of the library a capture can show
    and the checker's own (capture.h))"""
    with open(os.path.join(SRC, "ipcm.c")) as f:
        lib = re.findall(r'\[IPCM_E_\w+\] = \{ "([\w-]+)"', f.read())
    with open(os.path.join(SRC, "capture.h")) as f:
        own = re.findall(r'#define CHECK_DEV_\w+\s+"([\w-]+)"', f.read())
    # the sockaddr encoder's, and a REQ cut short (truncated-cm-mad then)
    never = ("address-family", "short-private-data")
    return lib + own, [n for n in lib if n not in never] + own


def t_man(tool):
    man = os.path.join(SRC, "siwx-ipcm.1")
    doc = os.path.join(TOP, "Documentation", "ipcm.md")
    with open(man) as f:
        text = f.read()
    if shutil.which("man"):
        r = subprocess.run(["man", "-l", man], capture_output=True,
                           text=True, env=dict(os.environ, MANWIDTH="80",
                                               MANPAGER="cat", PAGER="cat"))
        missing = [s for s in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS",
                               "OUTPUT", "DEVIATIONS", "EXIT STATUS",
                               "EXAMPLES", "SEE ALSO")
                   if not re.search(r"^%s$" % s, r.stdout, re.M)]
        check("man.renders", r.returncode == 0 and not missing,
              "missing sections: %s\n%s" % (missing, r.stderr[-1000:]))
    else:
        skip("man.renders", "no man")
    if shutil.which("groff"):
        r = subprocess.run(["groff", "-man", "-ww", "-z", man],
                           capture_output=True, text=True)
        check("man.groff_warnings", r.returncode == 0 and not r.stderr,
              r.stderr[-2000:])
    else:
        skip("man.groff_warnings", "no groff")
    rc, out, err = tool.run("-h")
    opts = re.findall(r"^\s+(-\w|--[\w-]+)", out, re.M)
    missing = [o for o in opts if o.replace("-", r"\-") not in text]
    check("man.every_option (%d)" % len(opts), opts and not missing,
          "not in the man page: %s" % missing)
    every, devs = error_names()
    missing = [d for d in devs if d.replace("-", r"\-") not in text]
    check("man.every_deviation (%d)" % len(devs), len(devs) > 12 and
          not missing, "not in the man page: %s" % missing)
    with open(doc) as f:
        dtext = f.read()
    missing = [d for d in every if d not in dtext]
    check("docs.every_error_name (%d)" % len(every), not missing,
          "not in Documentation/ipcm.md: %s" % missing)


def main():
    args = sys.argv[1:]
    binaries_only = "--binaries-only" in args
    args = [a for a in args if a != "--binaries-only"]
    if len(args) != 1:
        print("usage: test_ipcm.py [--binaries-only] BUILD_DIR",
              file=sys.stderr)
        return 2
    build = os.path.abspath(args[0])
    tool = Tool(build)
    groups = [(t_unit, tool), (t_good, tool), (t_malformed, tool),
              (t_rejects, tool), (t_noise, tool), (t_grouping, tool),
              (t_links, tool), (t_truncated, tool), (t_files, tool),
              (t_text, tool), (t_fuzz, tool)]
    if not binaries_only:
        groups = [(t_header,), (t_linux, build, tool.tmp)] + groups + \
            [(t_tshark, tool), (t_man, tool)]
    try:
        for fn, *a in groups:
            # a group that breaks (a missing binary, a bug here) is one
            # failed test, and the others still run
            try:
                fn(*a)
            except Exception:
                check("%s.ran" % fn.__name__[2:], False,
                      traceback.format_exc())
    finally:
        shutil.rmtree(tool.tmp, ignore_errors=True)
    print("TAP version 13")
    print("1..%d" % len(RESULTS))
    failed = 0
    for i, (ok, name, skipped, diag) in enumerate(RESULTS, 1):
        if skipped:
            print("ok %d %s # SKIP %s" % (i, name, skipped))
            continue
        if not ok:
            failed += 1
            print("not ok %d %s" % (i, name))
            for line in (diag or "").splitlines()[-25:]:
                print("#   " + line)
        else:
            print("ok %d %s" % (i, name))
    print("# %d checks, %d failed" % (len(RESULTS), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
