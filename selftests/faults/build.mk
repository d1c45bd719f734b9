# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suite faults (included by selftests/Makefile). The stock build (rdma-core
# 44, no ibv_wr_flush) is a stub that exits 4.
PROGS += faults_traffic
faults_traffic_SRCS := faults/faults_traffic.c
$(foreach d,bin stock,$(O)/$(d)/faults_traffic): $(SELFTEST_SRC)/flush/flush_common.h
$(O)/bin/faults_traffic: $(wildcard $(RDMA_PREFIX)/include/infiniband/siwdv.h)
