# Licensed under the Apache License, Version 2.0; see LICENSE.
#
# apxs.mk builds the httpd module, mod_proxy_beacon.so, from src/ with
# apxs, and installs it. It is apart from CMakeLists.txt because only apxs
# knows httpd's compiler flags, its libtool and its install layout. The
# top-level Makefile calls it after cmake has built libbeacon (-fPIC),
# which is linked into the DSO:
#
#   make -f apxs.mk BUILD=build BEACON_LIB=build/libbeacon.a [WERROR=ON]
#   make -f apxs.mk BUILD=build install     (apxs -i -a: copies the DSO and
#                                             adds the LoadModule line)
#
# Paths are relative to the directory make runs in, which holds src/,
# include/ and apxs.mk (`make check-asan-module` runs it in a tree of
# symlinks). Every src/*.c is part of the module: a file added or renamed
# there needs no edit here.

APXS       ?= apxs
BUILD      ?= build
BEACON_LIB ?= $(BUILD)/libbeacon.a

MODULE_SRC = $(sort $(wildcard src/*.c))
MODULE_HDR = $(sort $(wildcard src/*.h include/*.h))
MODULE_LA  = $(BUILD)/mod_proxy_beacon.la
MODULE_SO  = $(BUILD)/.libs/mod_proxy_beacon.so

WARN   = -Wc,-std=c11 -Wc,-Wall -Wc,-Wextra
ifeq ($(WERROR),ON)
WARN  += -Wc,-Werror
endif
# Only the module record is exported; libbeacon stays private to the DSO.
LINK   = -Wl,-export-symbols-regex -Wl,'^proxy_beacon_module$$'

.PHONY: all install clean

all: $(MODULE_SO)

$(MODULE_SO): $(MODULE_SRC) $(MODULE_HDR) $(BEACON_LIB) apxs.mk
	$(APXS) -c -o $(MODULE_LA) -I include -I src $(WARN) $(LINK) $(MODULE_SRC) \
		$(BEACON_LIB) -laprutil-1 -lapr-1

install: $(MODULE_SO)
	$(APXS) -i -a -n proxy_beacon $(MODULE_LA)

clean:
	rm -rf src/*.lo src/*.slo src/*.o src/.libs $(MODULE_LA) $(BUILD)/.libs
