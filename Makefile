# SPDX-License-Identifier: GPL-2.0
#
# siwx top-level Makefile. `make help` lists the targets.

TOP     := $(CURDIR)
BUILD   := $(TOP)/build
KVER    ?= $(shell ls -1d /lib/modules/6.12.* 2>/dev/null | sed 's|.*/||' | grep -v siwx-debug | sort -V | tail -n 1)
KDIR    ?= /lib/modules/$(KVER)/build
PREFIX  ?= /opt/siwx
DESTDIR ?=
# SUITES: the suites `make check` runs (default: those selftests/run.sh runs)
SUITES  ?=

# KERNEL=debug: build and test against the siwx debug kernel (KASAN,
# lockdep, kmemleak, fault injection, gcov; Documentation/debug-kernel.md),
# which tools/debug-kernel/build.sh builds outside the repo and installs.
# Everything goes to build/debug-kernel/ instead of build/, so the outputs
# for Debian's kernel stay as they are. GCOV=1 builds siw.ko with gcov
# profiling (the debug kernel only).
KERNEL  ?=
GCOV    ?=
DEBUG_KERNEL := $(TOP)/tools/debug-kernel/build.sh
ifeq ($(KERNEL),debug)
BUILD   := $(TOP)/build/debug-kernel
KVER    := $(shell $(DEBUG_KERNEL) --status 2>/dev/null && $(DEBUG_KERNEL) --kver 2>/dev/null)
else ifneq ($(KERNEL),)
$(error KERNEL=$(KERNEL): only KERNEL=debug is known)
endif

SIWX_VERSION := $(shell cat $(TOP)/VERSION)$(shell git -C $(TOP) describe --always --dirty --match none 2>/dev/null | sed 's/^/+g/')

SIWX_SRC     := $(BUILD)/siwx/src/drivers/infiniband/sw/siw
UPSTREAM_SRC := $(BUILD)/upstream/src/drivers/infiniband/sw/siw
RDMA_CM_SRC  := $(BUILD)/rdma_cm/src/drivers/infiniband/core
RDMA_PREFIX  := $(BUILD)/rdma-core/prefix
KSFT_DIR     := $(BUILD)/linux/pristine/tools/testing/selftests

# Run the dependency step only when something is missing.
DEPS_OK := $(BUILD)/.deps-ok
DEPS    := $(TOP)/tools/deps.sh

.PHONY: all deps stage modules siwx upstream rdma_cm rdma-core rpma selftests check demo fuzz churn bench bench-ulp bench-scale \
	deb install install-modules install-userspace install-wireshark checkpatch series-check upstream-series clean distclean \
	help ktest debug-kernel check-debug

all: modules rdma-core selftests

help:
	@echo "make demo        boot test VMs, show siwx carrying RDMA traffic"
	@echo "make check       build everything and run every test suite in VMs"
	@echo "make check KERNEL=debug [SUITES=...] [GCOV=1]  the same on the debug kernel (KASAN, lockdep, ...)"
	@echo "make debug-kernel build and install the debug kernel (cached; Documentation/debug-kernel.md)"
	@echo "make deps        install the Debian packages siwx needs (idempotent)"
	@echo "make modules     build build/siwx/siw.ko and build/upstream/siw.ko"
	@echo "make rdma-core   build the patched rdma-core into build/rdma-core/prefix"
	@echo "make rpma        build librpma 1.3.0 and its examples into build/rpma (not part of check)"
	@echo "make selftests   build the test programs"
	@echo "make checkpatch  run the kernel's checkpatch on patches and our files"
	@echo "make series-check build siw.ko and checkpatch --strict after every kernel patch"
	@echo "make upstream-series the series with our files folded in (build/upstream-series/out), checked"
	@echo "make fuzz        the receive-path fuzzer: 1,000,000 frames against one boot (FUZZ_FRAMES, FUZZ_SEED)"
	@echo "make churn       1,000 connect/disconnect and 100 module load cycles in one VM (CHURN_CONNS, CHURN_LOADS)"
	@echo "make bench       siwx vs upstream siw, rxe and raw TCP, then make bench-ulp (BENCH=quick|full)"
	@echo "make bench-ulp   NVMe-oF and NFS over siwx vs upstream siw, rxe and their TCP transports"
	@echo "make bench-scale 1-64 QPs, connection rate, kernel memory per QP/MR/connection (BENCH=quick|full)"
	@echo "make deb         build/deb/out: siwx-dkms and siwx-rdma-core .deb (Documentation/install.md)"
	@echo "make install     install siw.ko (updates/), rdma-core into PREFIX=$(PREFIX), the Wireshark dissector"
	@echo "make install-wireshark  tools/wireshark/siwx.lua into WIRESHARK_LUA_DIR"
	@echo "Variables: KVER=$(KVER) PREFIX=$(PREFIX)"

deps:
	$(DEPS)

$(DEPS_OK): $(DEPS)
	@$(DEPS) --check >/dev/null 2>&1 || $(DEPS)
	@mkdir -p $(BUILD) && touch $@

stage: $(DEPS_OK)
	@$(TOP)/tools/stage-linux.sh $(BUILD)

modules: siwx upstream rdma_cm

siwx: stage
	@test -n "$(KVER)" -a -d "$(KDIR)" || { echo "no kernel headers for '$(KVER)' (make deps)"; exit 1; }
	@test "$(GCOV)" != 1 || grep -q '^CONFIG_GCOV_KERNEL=y' $(KDIR)/.config || \
		{ echo "GCOV=1: $(KVER) has no CONFIG_GCOV_KERNEL (use KERNEL=debug)"; exit 1; }
	@# an object whose .gcno is gone (kbuild does not know it as an output)
	@# is built again, or its counters could never be reported
	@test "$(GCOV)" != 1 || for o in $(SIWX_SRC)/*.o; do \
		case $$o in *.mod.o|*/siw.o) continue ;; esac; \
		[ ! -e "$$o" ] || [ -e "$${o%.o}.gcno" ] || rm -f "$$o"; \
	done
	$(MAKE) -C $(KDIR) M=$(SIWX_SRC) W=1 SIWX_VERSION=$(SIWX_VERSION) SIWX_GCOV=$(GCOV) modules
	@cp -p $(SIWX_SRC)/siw.ko $(BUILD)/siwx/siw.ko
	@echo "  SIWX    $(BUILD)/siwx/siw.ko $$(/sbin/modinfo -F version $(BUILD)/siwx/siw.ko)"

upstream: stage
	$(MAKE) -C $(KDIR) M=$(UPSTREAM_SRC) CONFIG_RDMA_SIW=m modules
	@cp -p $(UPSTREAM_SRC)/siw.ko $(BUILD)/upstream/siw.ko

# rdma_cm.ko and iw_cm.ko with patches/linux-cma (the port mapper's
# registration fix, IP CM Service annex rejects), for the VMs
rdma_cm: stage
	@test -n "$(KVER)" -a -d "$(KDIR)" || { echo "no kernel headers for '$(KVER)' (make deps)"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(RDMA_CM_SRC) W=1 modules
	@cp -p $(RDMA_CM_SRC)/rdma_cm.ko $(RDMA_CM_SRC)/iw_cm.ko $(BUILD)/rdma_cm/
	@echo "  RDMA_CM $(BUILD)/rdma_cm/rdma_cm.ko $(BUILD)/rdma_cm/iw_cm.ko"

# the kernel ULP test module of suite kulp, against the same headers as siwx
ktest: $(DEPS_OK)
	$(MAKE) -C $(TOP)/selftests/kulp KVER=$(KVER) KDIR=$(KDIR) KMOD_OUT=$(BUILD)/selftests/kmod

rdma-core: $(DEPS_OK)
	@$(TOP)/tools/build-rdma-core.sh $(BUILD)/rdma-core $(RDMA_PREFIX)

# librpma 1.3.0 and its examples against our rdma-core (suite rpma; not
# part of check: a download and a build of its own)
rpma: rdma-core
	@$(TOP)/tools/build-rpma.sh $(BUILD)/rpma $(RDMA_PREFIX) $(BUILD)/rpma/prefix

selftests: rdma-core stage ktest
	$(MAKE) -C $(TOP)/selftests O=$(BUILD)/selftests RDMA_PREFIX=$(RDMA_PREFIX) KSFT_DIR=$(KSFT_DIR) \
		SIWX_UAPI=$(BUILD)/siwx/src/include/uapi
	$(MAKE) -C $(TOP)/tools/mpa-peer O=$(BUILD)/tools/mpa-peer
	$(MAKE) -C $(TOP)/tools/fuzz O=$(BUILD)/tools/fuzz
	$(MAKE) -C $(TOP)/tools/ipcm O=$(BUILD)/tools/ipcm
	$(MAKE) -C $(TOP)/tools/demo O=$(BUILD)/tools/demo RDMA_PREFIX=$(RDMA_PREFIX)

# `make debug-kernel`: build (niced, long: Documentation/debug-kernel.md)
# and install the debug kernel unless the cached build is installed already
debug-kernel:
	@$(DEBUG_KERNEL) >/dev/null

ifeq ($(KERNEL),debug)
# make check KERNEL=debug [SUITES='basic ...'] [GCOV=1]: the debug kernel
# first (KVER is only known once it is installed: make calls itself), then
# the modules and tests in build/debug-kernel and the suites on that kernel.
# No series-check and no .deb: they do not depend on the kernel.
check: debug-kernel
	@$(MAKE) --no-print-directory check-debug KERNEL=debug

# With GCOV=1 the .gcno files of the module's build go into the results
# directory too, so that gcov-report.sh still pairs the counters with them
# after a later build replaced them.
check-debug: stage modules rdma-core selftests
	@test -n "$(KVER)" -a -d "$(KDIR)" || { echo "debug kernel not installed (make debug-kernel)"; exit 1; }
	@res=$${SIWX_RESULTS_DIR:-$(BUILD)/selftests/results/$$(date +%Y%m%d-%H%M%S)}; \
	if [ "$(GCOV)" = 1 ]; then \
		mkdir -p $$res/gcno && cp -p $(SIWX_SRC)/*.gcno $$res/gcno/; \
	fi; \
	SIWX_RESULTS_DIR=$$res SIWX_MODULE=$(BUILD)/siwx/siw.ko SIWX_UPSTREAM_MODULE=$(BUILD)/upstream/siw.ko \
		RDMA_PREFIX=$(RDMA_PREFIX) SELFTEST_DIR=$(BUILD)/selftests SIWX_VM_KVER=$(KVER) \
		SIWX_SUITE_TIMEOUT_SCALE=$${SIWX_SUITE_TIMEOUT_SCALE:-6} \
		$(TOP)/selftests/run.sh $(SUITES)
else
# The series check runs at nice 19 next to the VM tests (they leave a
# third of the CPUs idle while guests wait); its log follows theirs. The
# packages are built by suite deb itself (make deb), in the early lane.
check: stage modules rdma-core selftests
	@test -n "$(KVER)" -a -d "$(KDIR)" || { echo "no kernel headers for '$(KVER)' (make deps)"; exit 1; }
	@log=$(BUILD)/series-check.log; \
	KDIR=$(KDIR) nice -n 19 $(TOP)/tools/series-check.sh $(BUILD) >$$log 2>&1 & sc=$$!; \
	echo "series-check: running alongside, niced (log $$log)"; \
	SIWX_MODULE=$(BUILD)/siwx/siw.ko SIWX_UPSTREAM_MODULE=$(BUILD)/upstream/siw.ko \
		RDMA_PREFIX=$(RDMA_PREFIX) SELFTEST_DIR=$(BUILD)/selftests KVER=$(KVER) \
		$(TOP)/selftests/run.sh $(SUITES); rc=$$?; \
	wait $$sc; src=$$?; cat $$log; \
	echo "make check: selftests exit $$rc, series-check exit $$src"; \
	[ $$rc = 0 ] && [ $$src = 0 ]
endif

# The long fuzzer run (suite fuzz with a large slice, one VM); make check
# runs a short seeded slice. See Documentation/reliability.md. With
# KERNEL=debug on the debug kernel (make debug-kernel first).
FUZZ_FRAMES ?= 1000000
FUZZ_SEED   ?= 0x5eed0002
fuzz: modules rdma-core selftests
	@test -n "$(KVER)" -a -d "$(KDIR)" || { echo "no kernel headers for '$(KVER)' (make deps)"; exit 1; }
	SIWX_MODULE=$(BUILD)/siwx/siw.ko SIWX_UPSTREAM_MODULE=$(BUILD)/upstream/siw.ko \
		RDMA_PREFIX=$(RDMA_PREFIX) SELFTEST_DIR=$(BUILD)/selftests KVER=$(KVER) \
		SIWX_FUZZ_FRAMES=$(FUZZ_FRAMES) SIWX_FUZZ_SEED=$(FUZZ_SEED) \
		$(if $(filter debug,$(KERNEL)),SIWX_VM_KVER=$(KVER)) \
		SIWX_SUITE_TIMEOUT_fuzz=$${SIWX_SUITE_TIMEOUT_fuzz:-7200} \
		$(TOP)/selftests/run.sh fuzz

# The long churn run (suite churn with 1,000 connection and 100 module
# load cycles, one VM); make check runs 500 and 30. See
# Documentation/testing.md. With KERNEL=debug on the debug kernel (make
# debug-kernel first), which adds kmemleak's verdicts.
CHURN_CONNS ?= 1000
CHURN_LOADS ?= 100
churn: modules rdma-core selftests
	@test -n "$(KVER)" -a -d "$(KDIR)" || { echo "no kernel headers for '$(KVER)' (make deps)"; exit 1; }
	SIWX_MODULE=$(BUILD)/siwx/siw.ko SIWX_UPSTREAM_MODULE=$(BUILD)/upstream/siw.ko \
		RDMA_PREFIX=$(RDMA_PREFIX) SELFTEST_DIR=$(BUILD)/selftests KVER=$(KVER) \
		SIWX_CHURN_CONNS=$(CHURN_CONNS) SIWX_CHURN_LOADS=$(CHURN_LOADS) \
		$(if $(filter debug,$(KERNEL)),SIWX_VM_KVER=$(KVER)) \
		SIWX_SUITE_TIMEOUT_churn=$${SIWX_SUITE_TIMEOUT_churn:-7200} \
		$(TOP)/selftests/run.sh churn

demo: modules rdma-core selftests
	@KVER=$(KVER) RDMA_PREFIX=$(RDMA_PREFIX) $(TOP)/tools/demo/run.sh

# BENCH=full (default) or quick; see Documentation/performance.md.
BENCH ?= full
bench: modules rdma-core
	@BENCH=$(BENCH) KVER=$(KVER) $(TOP)/tools/bench/bench.sh
	@BENCH=$(BENCH) KVER=$(KVER) $(TOP)/tools/bench/ulp-bench.sh

bench-ulp: modules
	@BENCH=$(BENCH) KVER=$(KVER) $(TOP)/tools/bench/ulp-bench.sh

# issue 15's "Scale" item: into build/bench-scale/ (not part of make bench)
bench-scale: modules rdma-core
	@BENCH=$(BENCH) KVER=$(KVER) $(TOP)/tools/bench/scale.sh

checkpatch: stage
	@$(TOP)/tools/checkpatch.sh $(BUILD)/linux/pristine

# Bisectability: every prefix of patches/linux/series builds (W=1, warnings
# are errors), every patch passes checkpatch --strict. See Documentation/build.md.
series-check: stage
	@test -n "$(KVER)" -a -d "$(KDIR)" || { echo "no kernel headers for '$(KVER)' (make deps)"; exit 1; }
	@KDIR=$(KDIR) $(TOP)/tools/series-check.sh $(BUILD)

upstream-series: stage
	@test -n "$(KVER)" -a -d "$(KDIR)" || { echo "no kernel headers for '$(KVER)' (make deps)"; exit 1; }
	@$(TOP)/tools/upstream-series.sh $(BUILD)
	@KDIR=$(KDIR) SERIES_DIR=$(BUILD)/upstream-series/out SERIES_OWN_FILES=0 \
		SERIES_WORK=$(BUILD)/upstream-series/check $(TOP)/tools/series-check.sh $(BUILD)

# Debian packages: siwx-dkms (the staged sources) and siwx-rdma-core (our
# rdma-core under /usr/lib/siwx); see Documentation/install.md
deb: stage
	@$(TOP)/tools/deb/build-debs.sh $(BUILD) $(BUILD)/deb/out $(SIWX_VERSION)

install: install-modules install-userspace install-wireshark

install-modules: siwx
	install -D -m 0644 $(BUILD)/siwx/siw.ko $(DESTDIR)/lib/modules/$(KVER)/updates/siw.ko
	test -n "$(DESTDIR)" || /sbin/depmod -a $(KVER)

install-userspace: $(DEPS_OK)
	@$(TOP)/tools/build-rdma-core.sh $(BUILD)/rdma-core-install $(PREFIX) "$(DESTDIR)"

# The Lua dissector (Documentation/wireshark.md) into the folder Wireshark
# loads global Lua plugins from: what tshark reports, else Debian's.
WIRESHARK_LUA_DIR ?= $(or $(shell tshark -G folders 2>/dev/null | \
	sed -n 's/^Global Lua Plugins:[[:space:]]*//p'),/usr/lib/$(shell \
	gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/wireshark/plugins)

install-wireshark:
	@$(TOP)/tools/wireshark/wire-lua.py --check >/dev/null
	install -D -m 0644 $(TOP)/tools/wireshark/siwx.lua $(DESTDIR)$(WIRESHARK_LUA_DIR)/siwx.lua

clean:
	rm -rf $(BUILD)/siwx $(BUILD)/upstream $(BUILD)/selftests $(BUILD)/vm $(BUILD)/tools

distclean:
	rm -rf $(BUILD)
