# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suites basic and basic-stock (included by selftests/Makefile)
PROGS += basic
basic_SRCS := basic/basic.c
