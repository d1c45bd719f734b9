# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suites mpa and mpa_pair (included by selftests/Makefile)
PROGS += mpa_conn
mpa_conn_SRCS := mpa/mpa_conn.c
