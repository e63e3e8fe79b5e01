# Licensed under the Apache License, Version 2.0; see LICENSE.
#
# The entry point (GNU make): the commands README and docs/development.md
# name, the Debian packages they need (scripts/ensure-deps), and the order
# of the two builds below. It compiles nothing itself.
#
#   CMakeLists.txt  libbeacon, its unit tests, beaconctl and the benchmark
#                   programs, with a normal C toolchain, into build/
#   apxs.mk         the httpd module, with apxs: only apxs knows httpd's
#                   compiler flags, libtool and install layout
#
#   make                 build everything into build/
#   make check           build, unit and CLI tests (ctest), integration
#                        and packaging tests (pytest)
#   make check-sanitize  the unit tests again under ASan+UBSan, in build-asan/
#   make bench           run the benchmarks, table also in bench/results/
#   make demo            a live cluster on 127.0.0.1, about 30 s
#   make install         apxs -i -a, beaconctl, Debian's a2enmod files,
#                        the Tomcat Listener's jar (and its link in Tomcat)
#   make uninstall       undo make install (scripts/uninstall); idempotent
#   make deb             Debian packages libapache2-mod-proxy-beacon,
#                        beacon-tools and beacon-tomcat (debian/), linted,
#                        into build-deb/
#   make deps            install the Debian packages all targets need, as
#                        root (BENCH=1: also make bench's)
#   make clean
#   (lint, fuzz, fuzz-replay, check-asan-module: "hardening" below)
#
# Only deps, check and demo install packages; every other target checks
# for them and stops with the apt-get line when one is missing.
# Overrides: make WERROR=OFF, JOBS=n.

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

.PHONY: all deps build module install uninstall deb check check-sanitize bench \
	demo clean

all: build module

# Every target starts from deps. It installs what is missing (as root) only
# when the command line names deps, check, demo or bench; otherwise it runs
# `ensure-deps --check`, which never installs and fails with the apt-get
# line. make bench's packages (wrk, haproxy) come with bench, or with
# BENCH=1.
BENCH_DEPS = $(if $(BENCH)$(filter bench,$(MAKECMDGOALS)),--bench)
ifneq ($(filter deps check demo bench,$(MAKECMDGOALS)),)
DEPS_ARGS = $(BENCH_DEPS)
else
DEPS_ARGS = --check $(BENCH_DEPS)
endif

deps:
	@sh scripts/ensure-deps $(DEPS_ARGS)

# cmake is re-run on every build: it is quick when nothing changed. The
# default target builds everything CMakeLists.txt defines (bench_flood and
# bench_datagram too).
build: deps
	$(CMAKE) -S . -B $(BUILD) $(CMAKE_ARGS)
	$(CMAKE) --build $(BUILD) --parallel $(JOBS)

# ---- httpd module ---------------------------------------------------------
# apxs.mk builds it from every src/*.c, linking in the static libbeacon.
BEACON_LIB  = $(BUILD)/libbeacon.a

module: build
	$(MAKE) -f apxs.mk BUILD=$(BUILD) BEACON_LIB=$(BEACON_LIB) WERROR=$(WERROR)
# ---------------------------------------------------------------------------

# Unit and CLI tests first, then the integration tests, which start private
# httpd instances with the module loaded (pytest fails if it collects none),
# then the benchmarks' figure extraction on recorded output (tests/bench,
# a second, no httpd: a changed log line or ?json field fails there, not
# silently in make bench), then the packaging tests
# (tests/packaging/conftest.py, about a minute): make uninstall, the man
# pages, make install and make deb with the packages installed and purged,
# the last two into this machine, as root only.
check: build module
	$(CTEST) --test-dir $(BUILD) $(CTEST_ARGS)
	$(PYTHON) -m pytest -q tests/integration
	$(PYTHON) -m pytest -q tests/bench
	BEACON_BUILD=$(BUILD) $(PYTHON) -m pytest -q tests/packaging

# Debug (-O0, no NDEBUG): the library's assert()s stay live under the
# sanitizers, and reports point at the exact line.
check-sanitize: deps
	$(CMAKE) -S . -B $(ASAN_BUILD) $(CMAKE_ARGS) -DBEACON_SANITIZE=ON \
		-DCMAKE_BUILD_TYPE=Debug
	$(CMAKE) --build $(ASAN_BUILD) --parallel $(JOBS)
	$(CTEST) --test-dir $(ASAN_BUILD) $(CTEST_ARGS)

# End-to-end benchmarks, about 20 minutes (bench/run_bench.py): the request
# path through the proxy (wrk), the receiver under a datagram flood
# (build/bench_flood), join and eviction latency against HAProxy, memory
# and CPU, build/bench_datagram, and 1,000 members in one balancer. They
# report and never fail on a missed goal. As root, deps installs what they
# need (wrk and haproxy too), as check and demo do; as anyone else it
# prints the apt-get line.
# The table goes to stdout and bench/results/latest.txt (raw figures:
# latest.json), each through a temporary file so a failed run keeps the
# last result. BENCH_ARGS=--quick is a smoke run of about two minutes;
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
# enables them too, and adds the commented .conf. The Tomcat Listener's
# jar (contrib/tomcat, built by CMakeLists.txt) goes to
# $(PREFIX)/share/java, with a link to it in $(CATALINA_HOME)/lib when
# that directory exists: Debian's tomcat10 loads every jar there (its
# common loader reads $${catalina.home}/lib/*.jar). The Debian packages
# (make deb) install to the same paths: with one of them installed,
# make install stops rather than overwrite its files.
APXS       ?= apxs
PREFIX     ?= /usr/local
APACHE_ETC ?= /etc/apache2
CATALINA_HOME ?= /usr/share/tomcat10
TOMCAT_JAR  = beacon-tomcat.jar
DEB_PACKAGES = libapache2-mod-proxy-beacon beacon-tools beacon-tomcat

install: all
	@for p in $(DEB_PACKAGES); do \
		if dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q ' installed$$'; then \
			echo "install: the Debian package $$p is installed, at the same paths:" \
				"apt-get purge $$p first" >&2; \
			exit 1; \
		fi; \
	done
	$(MAKE) -f apxs.mk BUILD=$(BUILD) install
	install -D -m 755 $(BUILD)/beaconctl $(DESTDIR)$(PREFIX)/bin/beaconctl
	install -D -m 644 $(BUILD)/$(TOMCAT_JAR) $(DESTDIR)$(PREFIX)/share/java/$(TOMCAT_JAR)
	@if [ -d $(DESTDIR)$(CATALINA_HOME)/lib ]; then \
		ln -sfn $(PREFIX)/share/java/$(TOMCAT_JAR) $(DESTDIR)$(CATALINA_HOME)/lib/$(TOMCAT_JAR) && \
		echo "install: Tomcat loads $(CATALINA_HOME)/lib/$(TOMCAT_JAR); add the Listener" \
			"to its server.xml (docs/tomcat.md)"; \
	else \
		echo "install: no $(CATALINA_HOME)/lib: copy or link" \
			"$(PREFIX)/share/java/$(TOMCAT_JAR) into your Tomcat's lib/ (docs/tomcat.md)"; \
	fi
	@if [ -d $(APACHE_ETC)/mods-available ]; then \
		install -m 644 contrib/debian/proxy_beacon.load contrib/debian/proxy_beacon.conf \
			$(APACHE_ETC)/mods-available/ && a2enmod -q proxy_beacon && \
		echo "install: enabled proxy_beacon; apachectl configtest, then reload"; \
	else \
		echo "install: add after mod_proxy's LoadModule line:"; \
		echo "  LoadModule proxy_beacon_module $$($(APXS) -q LIBEXECDIR)/mod_proxy_beacon.so"; \
	fi

# The reverse of install, in scripts/uninstall (what it removes, and what
# it leaves: the modules a2enmod enabled for ours, files a package owns).
# Same overrides as install (APXS, PREFIX, DESTDIR, APACHE_ETC,
# CATALINA_HOME). It builds nothing and checks for no package: it needs
# only apxs, to find the DSO.
uninstall:
	@APXS='$(APXS)' PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' \
		APACHE_ETC='$(APACHE_ETC)' CATALINA_HOME='$(CATALINA_HOME)' \
		sh scripts/uninstall

# ---- Debian packages ------------------------------------------------------
# libapache2-mod-proxy-beacon (the module, its .load/.conf for a2enmod,
# mod_proxy_beacon(5)), beacon-tools (beaconctl, beaconctl(1), the
# systemd unit for beaconctl send) and beacon-tomcat (Architecture: all,
# the Tomcat Listener's jar in /usr/share/java, linked into Debian's
# tomcat10's lib/), built by debian/rules with the
# project's own build (cmake, apxs.mk), into $(DEB_BUILD)/: the .debs, the
# .changes and .buildinfo. dpkg-buildpackage writes its results next to
# the tree it builds, so it builds a copy of this one made in
# $(DEB_BUILD)/, without the build trees and objects .gitignore names; a
# build that fails leaves that copy there to look into. debian/rules runs
# the unit and CLI tests unless DEB_BUILD_OPTIONS=nocheck (about 30 s
# more). dpkg-buildpackage gets a make environment of its own, as on a
# build machine, not this make's MAKEFLAGS. lintian then checks the
# .changes and the .debs and fails the target on an error; warnings are
# printed (LINTIAN= skips it).
DEB_BUILD   ?= build-deb
LINTIAN     ?= lintian --fail-on error
DEB_VERSION  = $(shell dpkg-parsechangelog -l debian/changelog -S Version)
DEB_TREE     = $(DEB_BUILD)/libapache2-mod-proxy-beacon-$(DEB_VERSION)
DEB_EXCLUDES = --exclude-vcs --exclude=./build --exclude='./build-*' \
	--exclude=./$(DEB_BUILD) --exclude='*.o' --exclude='*.lo' --exclude='*.la' \
	--exclude='*.slo' --exclude=.libs --exclude=__pycache__ \
	--exclude=.pytest_cache --exclude=./bench/results

deb: deps
	rm -rf $(DEB_TREE) $(DEB_BUILD)/*_$(DEB_VERSION)_*
	mkdir -p $(DEB_TREE)
	tar -c $(DEB_EXCLUDES) -f - . | tar -x -C $(DEB_TREE)
	cd $(DEB_TREE) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		dpkg-buildpackage -b --no-sign -J$(JOBS)
	rm -rf $(DEB_TREE)
	$(if $(LINTIAN),$(LINTIAN) $(DEB_BUILD)/libapache2-mod-proxy-beacon_$(DEB_VERSION)_*.changes)
	@ls -1 $(DEB_BUILD)/*_$(DEB_VERSION)_*.deb

# build-asan/ also holds check-asan-module's tree (build-asan/mod); the
# module's objects are next to its sources, hence apxs.mk's clean.
clean:
	$(MAKE) -f apxs.mk BUILD=$(BUILD) clean
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz $(DEB_BUILD)

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
# include/ and apxs.mk are symlinks to ours and whose src/ holds a symlink to
# each src/*.c and src/*.h, so the instrumented objects never mix with the
# normal build's src/*.lo. That src/ is made afresh on each run, so a file
# renamed or removed in ours leaves no stale link. WERROR=OFF: warnings are
# the normal build's business. The tests get tools/asan-apache2 as APACHE2:
# the runtimes are preloaded into httpd only. Reports are files in
# $(SAN_REPORTS) (asan.<pid>, ubsan.<pid>), and errorlog.<test>.<pid>: the
# sanitizer lines (runtime error:, AddressSanitizer, LeakSanitizer,
# UndefinedBehaviorSanitizer) that reached an instance's error log or its
# apache2 -t/-k start output instead, copied there by the tests' conftest
# before the logs go with the test's directory. Any file there fails the
# target, after the tests, whether they passed or not. The recycling and soak tests
# run shorter there (20 renames, 60 s). PYTEST_ARGS narrows the run,
# e.g. PYTEST_ARGS="-k receiver". `make clean` removes it all with build-asan/.
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
	@rm -rf $(ASAN_MOD)/src && mkdir -p $(ASAN_MOD)/src
	@for f in $(wildcard src/*.c src/*.h); do ln -s $(CURDIR)/$$f $(ASAN_MOD)/$$f; done
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
	BEACON_RECYCLE_CYCLES=20 BEACON_SOAK_SECONDS=60 \
		$(PYTHON) -m pytest -q tests/integration $(PYTEST_ARGS) || rc=$$?; \
	if [ -n "$$(ls -A $(SAN_REPORTS))" ]; then \
		for f in $(SAN_REPORTS)/*; do echo "==== $$f"; cat "$$f"; done; \
		echo "check-asan-module: sanitizer reports in $(SAN_REPORTS)" >&2; \
		exit 1; \
	fi; \
	[ $$rc -eq 0 ] && echo "check-asan-module: no ASan or UBSan report, in files or logs"; \
	exit $$rc
