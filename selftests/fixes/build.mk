# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suites fixes and term_wire (included by selftests/Makefile)
PROGS += fixes term_peer
fixes_SRCS     := fixes/fixes.c
term_peer_SRCS := fixes/term_peer.c
