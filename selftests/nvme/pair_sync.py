#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""pair_sync.py - one line each way between the two VMs of a pair suite.

  pair_sync.py serve ADDR PORT LINE TIMEOUT   accept one connection, send
                                              LINE, print the peer's line
  pair_sync.py ask ADDR PORT TIMEOUT LINE     connect (retrying until the
                                              peer listens), print its
                                              line, send LINE

Exit status 0 when a line came back, 1 on a timeout or a closed
connection (TIMEOUT in seconds covers the whole exchange).
"""
import socket
import sys
import time


def readline(sock, deadline):
    buf = b""
    while not buf.endswith(b"\n"):
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = sock.recv(256)
        if not chunk:
            raise ConnectionError("closed before a line")
        buf += chunk
    return buf.decode(errors="replace").strip()


def serve(addr, port, line, timeout):
    deadline = time.monotonic() + timeout
    with socket.create_server((addr, port), reuse_port=False) as srv:
        srv.settimeout(timeout)
        conn, _ = srv.accept()
        with conn:
            conn.sendall(line.encode() + b"\n")
            print(readline(conn, deadline))


def ask(addr, port, timeout, line):
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    with conn:
        print(readline(conn, deadline))
        conn.sendall(line.encode() + b"\n")


def main(argv):
    try:
        if len(argv) == 6 and argv[1] == "serve":
            serve(argv[2], int(argv[3]), argv[4], float(argv[5]))
        elif len(argv) == 6 and argv[1] == "ask":
            ask(argv[2], int(argv[3]), float(argv[4]), argv[5])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (OSError, ConnectionError) as e:
        print(f"pair_sync: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
