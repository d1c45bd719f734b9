# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite interop (included by selftests/Makefile)
PROGS += interop
interop_SRCS := interop/interop.c
