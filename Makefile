# Licensed under the Apache License, Version 2.0; see LICENSE.
#
# Entry point for building and testing (GNU make):
#
#   make                 install missing Debian packages, build into build/
#   make check           build, unit tests (ctest), integration tests (pytest)
#   make check-sanitize  the unit tests again under ASan+UBSan, in build-asan/
#   make bench           run the datagram benchmark, also into bench/results/
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

.PHONY: all deps build module check check-sanitize bench clean

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

# Written to a temporary file first so a failed run neither passes (a pipe
# into tee would hide its exit status under /bin/sh) nor replaces the last
# good result.
bench: build
	@mkdir -p bench/results
	$(BUILD)/bench_datagram > bench/results/latest.txt.tmp
	@mv bench/results/latest.txt.tmp bench/results/latest.txt
	@cat bench/results/latest.txt

clean:
ifneq ($(APXS_MK),)
	$(MAKE) -f apxs.mk BUILD=$(BUILD) clean
endif
	rm -rf $(BUILD) $(ASAN_BUILD)
