# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite rawpeer (included by selftests/Makefile)
PROGS += raw_server
raw_server_SRCS := rawpeer/raw_server.c
