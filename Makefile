# Licensed under the Apache License, Version 2.0; see LICENSE.
#
# Entry point for building and testing (GNU make):
#
#   make                 install missing Debian packages, build into build/
#   make check           build, unit tests (ctest), integration tests (pytest)
#   make check-sanitize  the unit tests again under ASan+UBSan, in build-asan/
#   make bench           run the benchmarks, table also in bench/results/
#   make demo            a live cluster on 127.0.0.1, about 30 s
#   make install         apxs -i -a, beaconctl, Debian's a2enmod files
#   make clean
#
# cmake builds libbeacon, its tests and the benchmark; apxs builds the httpd
# module (see "httpd module" below). Overrides: make WERROR=OFF, JOBS=n.

BUILD      ?= build
ASAN_BUILD ?= build-asan
CMAKE      ?= cmake
CTEST      ?= ctest
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# Our own code is kept warning-free, so warnings fail the build here; the
# cmake option itself defaults to OFF for builds with other compilers.
WERROR     ?= ON
# Debian's interpreter, by full path: python3-pytest installs pytest for it,
# and a python3 earlier on PATH (pyenv on the dev machines) has no pytest.
PYTHON     ?= /usr/bin/python3

CMAKE_ARGS = -DBEACON_WERROR=$(WERROR)
# --no-tests=error: a build that silently lost its tests must not pass.
CTEST_ARGS = --output-on-failure --no-tests=error

# cmake --build runs make again; its "Entering directory" lines are noise.
MAKEFLAGS += --no-print-directory

.PHONY: all deps build module install check check-sanitize bench demo clean

all: build module

deps:
	@sh scripts/ensure-deps

# cmake is re-run on every build: it is quick when nothing changed, and it
# picks up test files that appeared since (CMakeLists.txt adds tests only
# if their source exists).
build: deps
	$(CMAKE) -S . -B $(BUILD) $(CMAKE_ARGS)
	$(CMAKE) --build $(BUILD) --parallel $(JOBS)

# ---- httpd module ---------------------------------------------------------
# The module is built by apxs, which knows httpd's compiler flags and layout.
# Its rules belong in apxs.mk, called with BUILD, WERROR and BEACON_LIB (the
# static library to link into the DSO). Until apxs.mk exists this target does
# nothing, so the library and its tests build on their own.
APXS_MK    := $(wildcard apxs.mk)
BEACON_LIB  = $(BUILD)/libbeacon.a

module: build
ifneq ($(APXS_MK),)
	$(MAKE) -f apxs.mk BUILD=$(BUILD) BEACON_LIB=$(BEACON_LIB) WERROR=$(WERROR)
endif
# ---------------------------------------------------------------------------

# Unit tests first, then the integration tests, which start private httpd
# instances with the module loaded. pytest fails when it collects nothing,
# so it runs only once tests/integration/test_*.py exist.
INTEGRATION_TESTS = $(wildcard tests/integration/test_*.py)

check: build module
	$(CTEST) --test-dir $(BUILD) $(CTEST_ARGS)
ifneq ($(INTEGRATION_TESTS),)
	$(PYTHON) -m pytest -q tests/integration
else
	@echo "check: no tests/integration/test_*.py yet, integration skipped"
endif

# Debug (-O0, no NDEBUG): the library's assert()s stay live under the
# sanitizers, and reports point at the exact line.
check-sanitize: deps
	$(CMAKE) -S . -B $(ASAN_BUILD) $(CMAKE_ARGS) -DBEACON_SANITIZE=ON \
		-DCMAKE_BUILD_TYPE=Debug
	$(CMAKE) --build $(ASAN_BUILD) --parallel $(JOBS)
	$(CTEST) --test-dir $(ASAN_BUILD) $(CTEST_ARGS)

# End-to-end benchmarks, about 5 minutes (bench/run_bench.py): the request
# path through the proxy (wrk), the receiver under a datagram flood
# (bench/flood.c), join and eviction latency against HAProxy, memory and
# CPU, and bench_datagram. They report and never fail on a missed goal;
# wrk and haproxy are installed on first use (as root, via ensure-deps).
# The table goes to stdout and bench/results/latest.txt (raw figures:
# latest.json), each through a temporary file so a failed run keeps the
# last result. BENCH_ARGS=--quick is a smoke run of about a minute;
# BENCH_ARGS="--only control,library" picks sections.
BENCH_ARGS ?=
bench: build module
	$(PYTHON) bench/run_bench.py --build $(BUILD) $(BENCH_ARGS)

# Live demo, about 30 s: a private proxy apache2 and three backend apache2s
# on 127.0.0.1 that join its balancer with the module, one stopped and
# restarted. Options: make demo DEMO_ARGS="--hold" (see demo/beacon-demo.py).
demo: all
	$(PYTHON) demo/beacon-demo.py $(DEMO_ARGS)

# apxs -i -a copies the DSO and enables it (Debian's apxs writes
# mods-available/proxy_beacon.load and runs a2enmod). On Debian ours then
# replaces that .load, naming the modules a receiver needs so a2enmod
# enables them too, and adds the commented .conf.
APXS       ?= apxs
PREFIX     ?= /usr/local
APACHE_ETC ?= /etc/apache2

install: all
	$(MAKE) -f apxs.mk BUILD=$(BUILD) install
	install -D -m 755 $(BUILD)/beaconctl $(DESTDIR)$(PREFIX)/bin/beaconctl
	@if [ -d $(APACHE_ETC)/mods-available ]; then \
		install -m 644 contrib/debian/proxy_beacon.load contrib/debian/proxy_beacon.conf \
			$(APACHE_ETC)/mods-available/ && a2enmod -q proxy_beacon && \
		echo "install: enabled proxy_beacon; apachectl configtest, then reload"; \
	else \
		echo "install: add after mod_proxy's LoadModule line:"; \
		echo "  LoadModule proxy_beacon_module $$($(APXS) -q LIBEXECDIR)/mod_proxy_beacon.so"; \
	fi

clean:
ifneq ($(APXS_MK),)
	$(MAKE) -f apxs.mk BUILD=$(BUILD) clean
endif
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz

# ---- hardening: fuzzing, sanitizers inside httpd, static analysis ---------
#   make fuzz               libFuzzer targets (fuzz/), FUZZ_SECONDS each
#   make fuzz-replay        the seed corpus and fuzz/regressions through each
#                           target once: a few seconds
#   make lint               cppcheck + clang-tidy (.clang-tidy, tools/lint);
#                           fails on any finding not in tools/lint-suppressions
#   make check-asan-module  the integration tests against the module built
#                           with ASan + UBSan, in stock apache2 (tools/README.md)
FUZZ_SECONDS ?= 30

.PHONY: fuzz fuzz-replay lint check-asan-module

fuzz: deps
	fuzz/run $(FUZZ_SECONDS)

fuzz-replay: deps
	fuzz/run --replay

lint: deps
	$(PYTHON) tools/lint -j $(JOBS)

# libbeacon comes from the check-sanitize tree (same cmake options: Debug,
# BEACON_SANITIZE=ON, -fPIC); apxs.mk builds the module in $(ASAN_MOD), whose
# src/, include/ and apxs.mk are symlinks to ours, so the instrumented
# objects never mix with the normal build's src/*.lo. WERROR=OFF: warnings
# are the normal build's business. The tests get tools/asan-apache2 as
# APACHE2: the runtimes are preloaded into httpd only. Reports are files in
# $(SAN_REPORTS) (asan.<pid>, ubsan.<pid>); any file there fails the target,
# after the tests, whether they passed or not. PYTEST_ARGS narrows the run,
# e.g. PYTEST_ARGS="-k receiver".
ASAN_MOD    = $(ASAN_BUILD)/mod
ASAN_SO     = $(ASAN_MOD)/out/.libs/mod_proxy_beacon.so
SAN_REPORTS = $(ASAN_MOD)/reports
SAN_FLAGS   = -fsanitize=address,undefined
ASAN_APXS   = $(APXS) -Wc,$(SAN_FLAGS) -Wc,-fno-omit-frame-pointer -Wl,$(SAN_FLAGS)
PYTEST_ARGS ?=

check-asan-module: deps
	$(CMAKE) -S . -B $(ASAN_BUILD) $(CMAKE_ARGS) -DBEACON_SANITIZE=ON \
		-DCMAKE_BUILD_TYPE=Debug
	$(CMAKE) --build $(ASAN_BUILD) --target beacon --parallel $(JOBS)
	@mkdir -p $(ASAN_MOD)/src
	@for f in src/*.c src/*.h; do ln -sf $(CURDIR)/$$f $(ASAN_MOD)/$$f; done
	@ln -sfn $(CURDIR)/include $(ASAN_MOD)/include
	@ln -sf $(CURDIR)/apxs.mk $(ASAN_MOD)/apxs.mk
	$(MAKE) -C $(ASAN_MOD) -f apxs.mk BUILD=out WERROR=OFF \
		BEACON_LIB=$(abspath $(ASAN_BUILD))/libbeacon.a APXS="$(ASAN_APXS)"
	@rm -rf $(SAN_REPORTS) && mkdir -p $(SAN_REPORTS) && chmod 1777 $(SAN_REPORTS)
	@rc=0; \
	APACHE2=$(CURDIR)/tools/asan-apache2 \
	BEACON_MODULE=$(abspath $(ASAN_SO)) \
	BEACON_SAN_LOG_DIR=$(abspath $(SAN_REPORTS)) \
	BEACON_SAN_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
		$(PYTHON) -m pytest -q tests/integration $(PYTEST_ARGS) || rc=$$?; \
	if [ -n "$$(ls -A $(SAN_REPORTS))" ]; then \
		for f in $(SAN_REPORTS)/*; do echo "==== $$f"; cat "$$f"; done; \
		echo "check-asan-module: sanitizer reports in $(SAN_REPORTS)" >&2; \
		exit 1; \
	fi; \
	[ $$rc -eq 0 ] && echo "check-asan-module: no ASan or UBSan report"; \
	exit $$rc
