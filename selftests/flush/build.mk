# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suites flush and flush_pair: RDMA Flush and RDMA Atomic Write (included
# by selftests/Makefile). The stock build (rdma-core 44, no ibv_wr_flush)
# is a stub that skips.
FLUSH_PROGS := flush flush_pair
PROGS += $(FLUSH_PROGS)
flush_SRCS      := flush/flush.c
flush_pair_SRCS := flush/flush_pair.c
$(foreach d,bin stock,$(addprefix $(O)/$(d)/,$(FLUSH_PROGS))): \
  $(SELFTEST_SRC)/flush/flush_common.h
$(addprefix $(O)/bin/,$(FLUSH_PROGS)): \
  $(wildcard $(RDMA_PREFIX)/include/infiniband/siwdv.h)
