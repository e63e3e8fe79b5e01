# Licensed under the Apache License, Version 2.0; see LICENSE.
#
# The httpd module, built by apxs so that it gets httpd's own compiler
# flags and install layout. Called from the top-level Makefile with BUILD
# and BEACON_LIB (libbeacon, built by cmake with -fPIC, linked into the DSO).
#
#   make -f apxs.mk BUILD=build BEACON_LIB=build/libbeacon.a
#   make -f apxs.mk BUILD=build install     (apxs -i -a: copies the DSO and
#                                             adds the LoadModule line)

APXS       ?= apxs
BUILD      ?= build
BEACON_LIB ?= $(BUILD)/libbeacon.a

MODULE_SRC = src/mod_proxy_beacon.c src/beacon_receiver.c src/beacon_proxy.c \
             src/beacon_sender.c src/beacon_status.c
MODULE_HDR = src/mod_proxy_beacon.h include/beacon.h
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
	$(APXS) -c -o $(MODULE_LA) -I include $(WARN) $(LINK) $(MODULE_SRC) \
		$(BEACON_LIB) -laprutil-1 -lapr-1

install: $(MODULE_SO)
	$(APXS) -i -a -n proxy_beacon $(MODULE_LA)

clean:
	rm -rf src/*.lo src/*.slo src/*.o src/.libs $(MODULE_LA) $(BUILD)/.libs
