#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""mpa-peer against a tiny Python peer over 127.0.0.1: output and wire pinned.

    tools/mpa-peer/tests/loopback.py [MPA-PEER] [--update]

Two exchanges, each compared with tests/golden/ (what the tests that parse
mpa-peer's output rely on: the lines, and the bytes sent):
  initiator  mpa-peer connects; the peer answers the MPA Request (rev 2, C,
             S, A with C_rtr, a text private data) and echoes every byte, so
             each crafted FPDU comes back and is decoded
  responder  mpa-peer --listen; the peer sends an enhanced Request with A
             and a zero-length Write RTR, reads the Reply, echoes the rest
Every FPDU mpa-peer sends is also checked with iwarp_capture.crc32c (the
decoders' one, checked here against the RFC 3720 B.4 vectors).
--update rewrites the golden files (review the diff). Prints TAP (suite
mpa_peer of make check runs it); exit 0: all passed.
"""
import hashlib
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "selftests", "lib"))
import siwx_wire as W  # noqa: E402
from iwarp_capture import crc32c  # noqa: E402  (checked below, RFC 3720)

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
TOP = os.path.abspath(os.path.join(HERE, "../../.."))
A = "127.0.0.1"

def recv_n(s, n, timeout=5):
    b, end = b"", time.time() + timeout
    while len(b) < n and time.time() < end:
        if select.select([s], [], [], end - time.time())[0]:
            d = s.recv(n - len(b))
            if not d:
                break
            b += d
    return b


def echo(s, log):
    """log and echo back all until EOF (or 10 s)"""
    end = time.time() + 10
    while time.time() < end:
        if not select.select([s], [], [], 0.2)[0]:
            continue
        try:
            d = s.recv(65536)
        except OSError:
            break
        if not d:
            break
        log.append(d)
        try:
            s.sendall(d)
        except OSError:
            pass


def rr(key, flags, rev, pd):
    return key + bytes([flags, rev]) + struct.pack(">H", len(pd)) + pd


def fpdus_crc_ok(stream):
    """every FPDU of stream (after the MPA frame) carries a good CRC32c"""
    off, bad = 0, []
    while off + 2 <= len(stream):
        n = 2 + struct.unpack(">H", stream[off:off + 2])[0]
        n += (4 - n % 4) % 4
        if off + n + 4 > len(stream):
            bad.append("partial FPDU at %d" % off)
            break
        got = struct.unpack("<I", stream[off + n:off + n + 4])[0]
        if got != crc32c(stream[off:off + n]):
            bad.append("CRC at %d" % off)
        off += n + 4
    return bad


INIT_STEPS = [
    "send data=00112233", "send se=1 inval=0x77 len=5",
    "write stag=${rkey} to=${addr}+16 data=a1b2c3d4e5",
    "read_resp stag=0x99 to=0x1000 len=16",
    "read_req sink_stag=0x1234 sink_to=8 size=16 src_stag=${rkey} "
    "src_to=${addr}",
    "atomic aop=2 reqid=9 stag=${rkey}^0x100 to=${addr}-8 cmp=5 cmpmask=~0 "
    "swap=0xaaaabbbbccccdddd swapmask=0xffff000000000000",
    "atomic stag=1 to=2 add=3 rsvd=0x12", "imm value=0x42", "imm se=1 len=3",
    "term layer=0 etype=1 code=2 hdrs=MDR attach=001c4101000000000000000100"
    "00000100000000000012340000000000000008000000100000123400000000000100"
    "00",
    "term layer=1 etype=2 code=3 hdrs=MD attach=0012c100000012340000000000"
    "000010",
    "untagged opcode=0x13 data=00", "tagged opcode=0x7 stag=5 to=6 data=80",
    "untagged opcode=0x3 ctrl=0x4163 data=00",
    "flush stag=${rkey} to=${addr}+8 size=64 p=1 g=1 sel=1 drsvd=0x100",
    "flush disp=0x2", "flush_resp", "awrite stag=7 to=0x2000 value=0x1122334455667788",
    "awrite_resp", "awrite size=4 data=ee",
    "term layer=0 etype=2 code=7 hdrs=MDR attach=0026410c000000000000000100"
    "00000600000000000012340000004000000000000100080000000000",
    "send data=00 qn=5", "send data=00 msn=7 mo=4 l=0 dv=0 rv=2",
    "fpdu ulpdu=4103",
    # each wait is for the last frame sent: the lines come in one order
    "atomic_resp reqid=0x5eed value=0x1122334455667788", "rx ms=2000 until=0xb",
    "send len=2 fill=${rx_opcode}", "rx ms=2000 until=3", "shutdown",
]


def initiator(peer):
    ls = socket.socket()
    ls.bind((A, 0))
    ls.listen(1)
    port = ls.getsockname()[1]
    log = []

    def serve():
        ls.settimeout(10)
        s, _ = ls.accept()
        req = recv_n(s, 20)
        req += recv_n(s, struct.unpack(">H", req[18:20])[0])
        log.append(req)
        s.sendall(rr(W.KEY_REP, 0x50, 2, struct.pack(
            ">HH", 0x8010, 0x8010) + b"rkey=0x1234 addr=0x10000 len=4096"))
        echo(s, log)
        s.close()

    t = threading.Thread(target=serve)
    t.start()
    p = subprocess.run([peer, "--p2p", "--delay", "0", "--rx-ms", "500", A,
                        str(port)] + INIT_STEPS, capture_output=True,
                       text=True, timeout=30)
    t.join(15)
    ls.close()
    out = p.stdout.replace("%s:%d" % (A, port), A + ":PORT")
    return p.returncode, out + p.stderr, b"".join(log), 24


RESP_STEPS = ["rx ms=500 until=0", "send data=00 msn=${req_ird} mo=${req_ord}",
              "atomic stag=${req_a} to=${req_c} add=${req_rev}",
              "term layer=2 code=7", "echo done=1"]


def responder(peer):
    p = subprocess.Popen([peer, "--listen", "--timeout", "5000", "--rx-ms",
                          "500", A, "0"] + RESP_STEPS,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    first = p.stdout.readline()
    port = int(first.rsplit(":", 1)[1])
    s = socket.create_connection((A, port), timeout=5)
    rtr = bytes([0, 14, 0xc1, 0x40]) + bytes(12)   # zero-length Write
    rtr += struct.pack("<I", crc32c(rtr))
    s.sendall(rr(W.KEY_REQ, 0x50, 2, struct.pack(
        ">HH", 0x8005, 0x8007) + b"rkey=0x42") + rtr)
    log = [recv_n(s, 20)]
    log.append(recv_n(s, struct.unpack(">H", log[0][18:20])[0]))
    replen = len(b"".join(log))
    echo(s, log)
    s.close()
    out, err = p.communicate(timeout=30)
    out = (first + out).replace("%s:%d" % (A, port), A + ":PORT")
    return p.returncode, out + err, b"".join(log), replen


def check(n, name, res, update):
    rc, out, wire, mpalen = res
    text = "rc=%d\n%s" % (rc, out)
    digest = "wire bytes=%d sha256=%s\n" % (len(wire),
                                           hashlib.sha256(wire).hexdigest())
    path = os.path.join(GOLDEN, name + ".out")
    if update:
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(text + digest)
    with open(path) as f:
        want = f.read()
    bad = fpdus_crc_ok(wire[mpalen:])
    ok = want == text + digest and not bad
    if want != text + digest:
        print("# expected:\n#   " + want.replace("\n", "\n#   "))
        print("# got:\n#   " + (text + digest).replace("\n", "\n#   "))
        print("# wire: " + wire.hex())
    for b in bad:
        print("# " + b)
    print("%s %d %s" % ("ok" if ok else "not ok", n, name))
    return ok


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    peer = args[0] if args else os.path.join(TOP, "build/tools/mpa-peer/"
                                             "mpa-peer")
    print("TAP version 13")
    print("1..3")
    # the CRC32c above, against RFC 3720 B.4
    ok = (crc32c(bytes(32)) == 0x8a9136aa and
          crc32c(b"\xff" * 32) == 0x62a8ab43 and
          crc32c(bytes(range(32))) == 0x46dd794e)
    print("%s 1 crc32c_rfc3720_vectors" % ("ok" if ok else "not ok"))
    update = "--update" in sys.argv
    ok &= check(2, "initiator", initiator(peer), update)
    ok &= check(3, "responder", responder(peer), update)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
