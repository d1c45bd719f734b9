# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite powerfail (selftests/pmem): the program of both VMs (included by
# selftests/Makefile). ibv_wr_flush/ibv_wr_atomic_write are in our
# rdma-core only: the stock build has the emulation alone.
PROGS += pmem_flush
pmem_flush_SRCS := pmem/pmem_flush.c
$(O)/bin/pmem_flush: CPPFLAGS_COMMON += -DHAVE_IBV_FLUSH=1
