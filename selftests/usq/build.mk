# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite usq (included by selftests/Makefile)
PROGS += usq
usq_SRCS := usq/usq.c
