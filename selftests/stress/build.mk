# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite stress (included by selftests/Makefile)
PROGS += stress
stress_SRCS := stress/stress.c
