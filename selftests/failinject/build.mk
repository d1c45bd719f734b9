# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite failinject (included by selftests/Makefile)
PROGS += failinject_verbs
failinject_verbs_SRCS := failinject/failinject_verbs.c
