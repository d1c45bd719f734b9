# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# suites imm, imm_wire and imm_probe: RFC 7306 immediate data (included by
# selftests/Makefile)
IMM_PROGS := imm imm_peer imm_probe
PROGS += $(IMM_PROGS)
imm_SRCS       := imm/imm.c
imm_peer_SRCS  := imm/imm_peer.c
imm_probe_SRCS := imm/imm_probe.c
# siwdv (64-bit immediate) and a shared header
$(addprefix $(O)/bin/,$(IMM_PROGS)): \
  LDLIBS += $(if $(wildcard $(RDMA_PREFIX)/lib/libsiw.so),-lsiw)
$(foreach d,bin stock,$(addprefix $(O)/$(d)/,$(IMM_PROGS))): \
  $(SELFTEST_SRC)/imm/imm_common.h
