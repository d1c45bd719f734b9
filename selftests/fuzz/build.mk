# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite fuzz (included by selftests/Makefile)
PROGS += fuzz_target
fuzz_target_SRCS := fuzz/fuzz_target.c
