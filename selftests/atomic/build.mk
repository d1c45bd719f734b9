# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suites atomic, atomic_wire and atomic_pair: RFC 7306 atomics (included by
# selftests/Makefile)
ATOMIC_PROGS := atomic atomic_peer atomic_pair
PROGS += $(ATOMIC_PROGS)
atomic_SRCS      := atomic/atomic.c
atomic_peer_SRCS := atomic/atomic_peer.c
atomic_pair_SRCS := atomic/atomic_pair.c
# masked atomics: the siwdv direct verbs are in libsiw, when installed
$(addprefix $(O)/bin/,$(ATOMIC_PROGS)): \
  LDLIBS += $(if $(wildcard $(RDMA_PREFIX)/lib/libsiw.so),-lsiw)
# the atomic programs share a header, and use siwdv.h once it is there
$(foreach d,bin stock,$(addprefix $(O)/$(d)/,$(ATOMIC_PROGS))): \
  $(SELFTEST_SRC)/atomic/atomic_common.h
$(addprefix $(O)/bin/,$(ATOMIC_PROGS)): \
  $(wildcard $(RDMA_PREFIX)/include/infiniband/siwdv.h)
