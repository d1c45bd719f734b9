#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
cm-inject.py - send hand-built InfiniBand CM REQs over RoCEv2 and report
the answer: the raw CM REQ injector of the IP CM Service annex tests.

Each REQ is a complete RoCEv2 packet built here byte by byte: an IPv4 or
IPv6 header (raw socket, header included), UDP to port 4791, BTH (UD
SEND Only to QP 1), DETH (the GSI Q_Key), the 256-byte CM REQ MAD, and
the invariant CRC computed as rxe checks it (IBTA Annex A17: the masked
IP and UDP fields and BTH byte 4 as ones, behind 8 bytes of ones for the
LRH). Every layout and constant comes from include/siwx/ipcm.h.

The REQ carries a Service ID of the annex's range (IP protocol, port)
and the annex's private data header, well formed or broken on purpose
(the CASES below). The answer to it - a REJ (reason, Additional
Rejection Information), a REP or MRA, or nothing - is read from a UDP
socket bound to port 4791 (so run it where no rxe device owns that
port: another network namespace) and printed, one line a case:

  case major_version: REJ reason=28 ari_len=5 ari=0001010000 pd=-
  case good: REJ reason=28 ari_len=0 ari=- pd=ulp-reject
  case unknown_dst: none

Usage:
  cm-inject.py [--src ADDR] [--port PORT] [--timeout S] DST CASE...
  cm-inject.py --list
  DST: the rxe device's IP address (IPv4 or IPv6); --src: this side's
  address (default: the one the route to DST uses); --port: the
  listener's port (the SID's low 16 bits, default 7174).
Exit: 0 when every case got an answer, 1 otherwise, 2 on usage errors.
"""
import argparse
import ipaddress
import os
import random
import select
import socket
import struct
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "selftests", "lib"))
import siwx_wire  # noqa: E402

V = siwx_wire.parse(os.environ.get("SIWX_IPCM_H") or
                    os.path.join(TOP, "include", "siwx", "ipcm.h"))


def c(name):
    return V["SIWX_" + name]


# ------------------------------------------------------------ the header

def addr16(ip):
    """An address in its 16-byte field: IPv4 in the last 4 bytes."""
    a = ipaddress.ip_address(ip)
    if a.version == 4:
        return bytes(c("IPCM_HDR_ADDR_OFF_IPV4")) + a.packed
    return a.packed


def ipcm_hdr(src, dst, sport, version=None, ipv=None, src16=None,
             dst16=None):
    """The annex's 36-byte REQ private data header."""
    h = bytearray(c("IPCM_HDR_SIZE"))
    if version is None:
        version = (c("IPCM_MAJOR_VERSION") << c("IPCM_HDR_MAJOR_SHIFT") |
                   c("IPCM_MINOR_VERSION"))
    if ipv is None:
        ipv = ipaddress.ip_address(dst).version
    h[c("IPCM_HDR_OFF_VERSION")] = version
    h[c("IPCM_HDR_OFF_IPV")] = ipv << c("IPCM_HDR_IPV_SHIFT")
    struct.pack_into(">H", h, c("IPCM_HDR_OFF_SRC_PORT"), sport)
    o, n = c("IPCM_HDR_OFF_SRC_ADDR"), c("IPCM_HDR_ADDR_SIZE")
    h[o:o + n] = src16 if src16 is not None else addr16(src)
    o = c("IPCM_HDR_OFF_DST_ADDR")
    h[o:o + n] = dst16 if dst16 is not None else addr16(dst)
    return bytes(h)


def ipv4_mapped_junk(ip):
    """An IPv4 address behind a prefix that is neither zeros nor ::ffff."""
    return bytes.fromhex("20010db8" + "00" * 8) + \
        ipaddress.ip_address(ip).packed


# The cases: name -> (header builder, what it breaks). Each builder gets
# (src, dst, sport) and returns the 36 bytes.
CASES = {
    "good": (lambda s, d, p: ipcm_hdr(s, d, p),
             "well formed, to the listener's address"),
    "unknown_dst": (lambda s, d, p: ipcm_hdr(s, UNKNOWN[ipv(d)], p),
                    "well formed, to an address the server does not have"),
    "major_version": (lambda s, d, p: ipcm_hdr(s, d, p, version=0x10),
                      "MajV 1"),
    "minor_version": (lambda s, d, p: ipcm_hdr(s, d, p, version=0x01),
                      "MinV 1"),
    "ip_version": (lambda s, d, p: ipcm_hdr(s, d, p, ipv=5),
                   "IPV 5"),
    "ip_version_0": (lambda s, d, p: ipcm_hdr(s, d, p, ipv=0),
                     "IPV 0"),
    "src_format": (lambda s, d, p: ipcm_hdr(s, d, p,
                                            src16=ipv4_mapped_junk(s)),
                   "IPV 4, the source address behind a non-IPv4 prefix"),
    "dst_format": (lambda s, d, p: ipcm_hdr(s, d, p,
                                            dst16=ipv4_mapped_junk(d)),
                   "IPV 4, the destination behind a non-IPv4 prefix"),
    "src_mapped": (lambda s, d, p: ipcm_hdr(
        s, d, p, src16=bytes(10) + b"\xff\xff" +
        ipaddress.ip_address(s).packed),
        "IPV 4, the source as ::ffff:a.b.c.d (accepted)"),
}
UNKNOWN = {4: "192.0.2.77", 6: "2001:db8::77"}
UDP_NO_CHECK6_RX = 102          # <linux/udp.h>


def ipv(ip):
    return ipaddress.ip_address(ip).version


# ------------------------------------------------------------ CM REQ MAD

def cm_req(sid, src, dst, pdata, comm_id, qpn, psn, guid, tid):
    m = bytearray(c("MAD_SIZE"))
    m[c("MAD_OFF_BASE_VERSION")] = c("MAD_BASE_VERSION")
    m[c("MAD_OFF_MGMT_CLASS")] = c("MAD_CLASS_CM")
    m[c("MAD_OFF_CLASS_VERSION")] = c("CM_CLASS_VERSION")
    m[c("MAD_OFF_METHOD")] = c("MAD_METHOD_SEND")
    struct.pack_into(">Q", m, c("MAD_OFF_TID"), tid)
    struct.pack_into(">H", m, c("MAD_OFF_ATTR_ID"), c("CM_ATTR_REQ"))
    b = c("MAD_HDR_SIZE")

    def u8(off, v):
        m[b + off] = v

    def u16(off, v):
        struct.pack_into(">H", m, b + off, v)

    def u24(off, v):                    # 24 bits, the byte after is apart
        m[b + off:b + off + 3] = struct.pack(">I", v)[1:]

    struct.pack_into(">I", m, b + c("CM_OFF_LOCAL_COMM_ID"), comm_id)
    struct.pack_into(">Q", m, b + c("CM_REQ_OFF_SERVICE_ID"), sid)
    struct.pack_into(">Q", m, b + c("CM_REQ_OFF_LOCAL_CA_GUID"), guid)
    u24(c("CM_REQ_OFF_LOCAL_QPN"), qpn)
    u8(c("CM_REQ_OFF_RESP_RESOURCES"), 1)
    u8(c("CM_REQ_OFF_INIT_DEPTH"), 1)
    # Remote CM Response Timeout 20 (4.096 us * 2^20), RC, no EEFC
    u8(c("CM_REQ_OFF_REMOTE_CM_TIMEOUT"),
       20 << c("CM_REQ_REMOTE_CM_TIMEOUT_SHIFT"))
    u24(c("CM_REQ_OFF_STARTING_PSN"), psn)
    u8(c("CM_REQ_OFF_LOCAL_CM_TIMEOUT"),
       20 << c("CM_REQ_LOCAL_CM_TIMEOUT_SHIFT") |
       (7 & c("CM_REQ_RETRY_COUNT_MASK")))
    u16(c("CM_REQ_OFF_PKEY"), c("IB_DEFAULT_PKEY"))
    # Path MTU 1024 (3): the veth's 1500 bytes hold it; RNR retry 7
    u8(c("CM_REQ_OFF_PATH_MTU"), 3 << c("CM_REQ_PATH_MTU_SHIFT") |
       (7 & c("CM_REQ_RNR_RETRY_MASK")))
    u8(c("CM_REQ_OFF_MAX_CM_RETRIES"), 15 << c("CM_REQ_MAX_CM_RETRIES_SHIFT"))
    u16(c("CM_REQ_OFF_PRI_LOCAL_LID"), c("CM_LID_PERMISSIVE"))
    u16(c("CM_REQ_OFF_PRI_REMOTE_LID"), c("CM_LID_PERMISSIVE"))
    g, n = c("CM_REQ_OFF_PRI_LOCAL_GID"), c("CM_REQ_GID_SIZE")
    m[b + g:b + g + n] = gid(src)
    g = c("CM_REQ_OFF_PRI_REMOTE_GID")
    m[b + g:b + g + n] = gid(dst)
    struct.pack_into(">I", m, b + c("CM_REQ_OFF_PRI_FLOW"),
                     2 & c("CM_REQ_PACKET_RATE_MASK"))      # 2.5 Gb/s
    u8(c("CM_REQ_OFF_PRI_HOP_LIMIT"), 64)
    u8(c("CM_REQ_OFF_PRI_ACK_TIMEOUT"), 14 << c("CM_REQ_ACK_TIMEOUT_SHIFT"))
    o = b + c("CM_REQ_OFF_PD")
    m[o:o + len(pdata)] = pdata
    return bytes(m)


def gid(ip):
    """The RoCEv2 GID of an address: IPv4-mapped IPv6 for IPv4."""
    a = ipaddress.ip_address(ip)
    return (bytes(10) + b"\xff\xff" + a.packed) if a.version == 4 \
        else a.packed


# ------------------------------------------------------------ RoCEv2

def bth_deth(psn):
    bth = bytearray(c("BTH_SIZE"))
    bth[c("BTH_OFF_OPCODE")] = c("BTH_OP_UD_SEND_ONLY")
    struct.pack_into(">H", bth, c("BTH_OFF_PKEY"), c("IB_DEFAULT_PKEY"))
    o = c("BTH_OFF_DEST_QP")
    bth[o:o + 3] = struct.pack(">I", c("GSI_QP"))[1:]
    o = c("BTH_OFF_PSN")
    bth[o:o + 3] = struct.pack(">I", psn & c("BTH_QP_MASK"))[1:]
    deth = bytearray(c("DETH_SIZE"))
    struct.pack_into(">I", deth, c("DETH_OFF_QKEY"), c("GSI_QKEY"))
    o = c("DETH_OFF_SRC_QP")
    deth[o:o + 3] = struct.pack(">I", c("GSI_QP"))[1:]
    return bytes(bth), bytes(deth)


def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def icrc(iphdr, udphdr, bth, rest):
    """The invariant CRC over the masked headers (rxe_icrc.c's way)."""
    ip = bytearray(iphdr)
    if ip[0] >> 4 == 4:
        ip[1] = 0xff                    # TOS
        ip[8] = 0xff                    # TTL
        ip[10:12] = b"\xff\xff"         # header checksum
    else:
        ip[0:4] = b"\x6f\xff\xff\xff"   # traffic class, flow label
        ip[7] = 0xff                    # hop limit
    udp = bytearray(udphdr)
    udp[6:8] = b"\xff\xff"              # UDP checksum
    b = bytearray(bth)
    b[4] = 0xff                         # BTH reserved byte (resv8a)
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(b) + rest)
    return struct.pack("<I", crc)


def packet(src, dst, sport, payload):
    """The IP packet of one RoCEv2 payload (BTH on) with its ICRC."""
    bth, rest = payload[:c("BTH_SIZE")], payload[c("BTH_SIZE"):]
    ulen = 8 + len(payload) + c("ICRC_SIZE")
    s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if s.version == 4:
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0x5157,
                         0x4000, 64, socket.IPPROTO_UDP, 0, s.packed,
                         d.packed)
        ip = ip[:10] + struct.pack(">H", csum16(ip)) + ip[12:]
        pseudo = s.packed + d.packed + struct.pack(">BBH", 0, 17, ulen)
    else:
        ip = struct.pack(">IHBB16s16s", 0x60000000, ulen,
                         socket.IPPROTO_UDP, 64, s.packed, d.packed)
        pseudo = s.packed + d.packed + struct.pack(">IxxxB", ulen, 17)
    udp = struct.pack(">HHHH", sport, c("ROCEV2_UDP_PORT"), ulen, 0)
    crc = icrc(ip, udp, bth, rest)
    body = udp + payload + crc
    ck = csum16(pseudo + body) or 0xffff
    udp = udp[:6] + struct.pack(">H", ck)
    return ip + udp + payload + crc


# ------------------------------------------------------------ answers

ATTR = {"CM_ATTR_REJ": "REJ", "CM_ATTR_REP": "REP", "CM_ATTR_MRA": "MRA",
        "CM_ATTR_DREQ": "DREQ", "CM_ATTR_RTU": "RTU"}


def parse_answer(data, comm_id):
    """(kind, text) of a RoCEv2 payload that answers comm_id, or None."""
    off = c("BTH_SIZE") + c("DETH_SIZE")
    mad = data[off:off + c("MAD_SIZE")]
    if len(mad) < c("MAD_SIZE") or \
            mad[c("MAD_OFF_MGMT_CLASS")] != c("MAD_CLASS_CM"):
        return None
    attr = struct.unpack_from(">H", mad, c("MAD_OFF_ATTR_ID"))[0]
    b = c("MAD_HDR_SIZE")
    remote = struct.unpack_from(">I", mad, b + c("CM_OFF_REMOTE_COMM_ID"))[0]
    if remote != comm_id:
        return None
    kind = next((v for k, v in ATTR.items() if c(k) == attr),
                "attr 0x%04x" % attr)
    if kind != "REJ":
        return kind, kind
    reason = struct.unpack_from(">H", mad, b + c("CM_REJ_OFF_REASON"))[0]
    alen = mad[b + c("CM_REJ_OFF_INFO_LEN")] >> c("CM_REJ_INFO_LEN_SHIFT")
    o = b + c("CM_REJ_OFF_ARI")
    ari = mad[o:o + min(alen, c("CM_REJ_ARI_SIZE"))]
    o = b + c("CM_REJ_OFF_PD")
    pd = mad[o:o + c("CM_REJ_PD_SIZE")].split(b"\0")[0]
    pd = pd.decode() if pd and pd.isascii() and pd.decode().isprintable() \
        else (pd[:16].hex() or "-")
    return kind, "REJ reason=%d ari_len=%d ari=%s pd=%s" % (
        reason, alen, ari.hex() or "-", pd)


def route_src(dst):
    fam = socket.AF_INET if ipv(dst) == 4 else socket.AF_INET6
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.connect((dst, c("ROCEV2_UDP_PORT")))
        return s.getsockname()[0]
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--src")
    ap.add_argument("--port", type=int, default=7174)
    ap.add_argument("--proto", type=int, default=c("IPCM_PROTOCOL_TCP"),
                    help="IP protocol of the SID (default TCP)")
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("dst", nargs="?")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    if a.list:
        for k, (_, what) in CASES.items():
            print("%-14s %s" % (k, what))
        return 0
    if not a.dst or not a.cases:
        ap.print_usage(sys.stderr)
        return 2
    bad = [k for k in a.cases if k not in CASES]
    if bad:
        print("cm-inject: unknown case(s) %s (--list)" % " ".join(bad),
              file=sys.stderr)
        return 2
    src = a.src or route_src(a.dst)
    fam = socket.AF_INET if ipv(a.dst) == 4 else socket.AF_INET6
    tx = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW)
    if fam == socket.AF_INET:
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    rx = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET6:
        # rxe sends RoCEv2 over IPv6 with a zero UDP checksum (as RoCEv2
        # allows); a UDPv6 socket drops such datagrams unless told
        rx.setsockopt(socket.IPPROTO_UDP, UDP_NO_CHECK6_RX, 1)
    rx.bind(("0.0.0.0" if fam == socket.AF_INET else "::",
             c("ROCEV2_UDP_PORT")))
    sid = (c("IPCM_SID_PREFIX") | a.proto << c("IPCM_SID_PROTOCOL_SHIFT") |
           a.port)
    rnd = random.Random()
    missing = 0
    for name in a.cases:
        sport = rnd.randrange(49152, 65536)
        comm_id = rnd.getrandbits(32) or 1
        pdata = CASES[name][0](src, a.dst, sport)
        mad = cm_req(sid, src, a.dst, pdata, comm_id,
                     rnd.getrandbits(24) or 2, rnd.getrandbits(24),
                     rnd.getrandbits(64), rnd.getrandbits(64))
        bth, deth = bth_deth(rnd.getrandbits(24))
        pkt = packet(src, a.dst, rnd.randrange(49152, 65536),
                     bth + deth + mad)
        tx.sendto(pkt, (a.dst, 0))
        end = time.monotonic() + a.timeout
        got = []
        while time.monotonic() < end:
            r, _, _ = select.select([rx], [], [], end - time.monotonic())
            if not r:
                break
            data = rx.recv(4096)
            ans = parse_answer(data, comm_id)
            if not ans:
                continue
            got.append(ans[1])
            if ans[0] in ("REJ", "REP"):
                break
        print("case %s: %s" % (name, "; ".join(got) if got else "none"),
              flush=True)
        missing += not got
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
