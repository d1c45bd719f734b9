# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite churn (included by selftests/Makefile)
PROGS += churn
churn_SRCS := churn/churn.c
