# hermes-mcp build. Plain GNU Make; dependencies come from pkg-config (see deps.apt).
PREFIX  ?= /usr/local
PKGS    := libmicrohttpd libcurl jansson yaml-0.1 libcrypto
WERROR  ?= -Werror

ifeq ($(SANITIZE),1)
  BUILD  ?= build/asan
  CFLAGS ?= -O1 -g3
  SAN    := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else
  BUILD  ?= build/release
  CFLAGS ?= -O2 -g
  SAN    :=
endif

WARN := -std=c11 -Wall -Wextra $(WERROR) -Wshadow -Wformat=2 -Wvla -Wstrict-prototypes \
        -Wmissing-prototypes -Wpointer-arith -Wcast-qual -Wwrite-strings -Wundef
CPPFLAGS += -D_GNU_SOURCE -Isrc $(shell pkg-config --cflags $(PKGS))
LDLIBS   += $(shell pkg-config --libs $(PKGS)) -lm -pthread

LIB_SRC := $(filter-out src/main.c,$(wildcard src/*.c))
LIB_OBJ := $(patsubst src/%.c,$(BUILD)/%.o,$(LIB_SRC))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNITS   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
CONF_SRC := $(wildcard tests/conformance/*.c)
CONF_OBJ := $(patsubst tests/conformance/%.c,$(BUILD)/conformance/%.o,$(CONF_SRC))

all: build/hermes-mcp

FORCE:
.PHONY: FORCE all check unit integration valgrind conformance conformance-server install headers clean distclean bench

# build/hermes-mcp is the stable path; it points at the flavour built last.
build/hermes-mcp: $(BUILD)/hermes-mcp FORCE
	@ln -sf $(notdir $(BUILD))/hermes-mcp $@

build/conformance-server: $(BUILD)/conformance-server FORCE
	@ln -sf $(notdir $(BUILD))/conformance-server $@

conformance-server: build/conformance-server

$(BUILD)/hermes-mcp: $(BUILD)/main.o $(LIB_OBJ)
	$(CC) $(LDFLAGS) $(SAN) -o $@ $^ $(LDLIBS)

$(BUILD)/conformance-server: $(CONF_OBJ) $(LIB_OBJ)
	$(CC) $(LDFLAGS) $(SAN) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: src/%.c | $(BUILD)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -MMD -MP -c -o $@ $<

$(BUILD)/conformance/%.o: tests/conformance/%.c | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJ) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) -Wno-missing-prototypes $(CFLAGS) $(SAN) -MMD -MP -o $@ $< $(LIB_OBJ) \
	    $(LDLIBS) -lcmocka

$(BUILD):
	@mkdir -p $@

unit: $(UNITS)
	tests/run.sh $(UNITS)

integration: build/hermes-mcp build/conformance-server fakes
	tests/integration/run.sh

check: unit integration

# The integration tests with our binaries under valgrind (memcheck, definite leaks fail).
valgrind: build/hermes-mcp build/conformance-server fakes
	HM_VALGRIND=1 tests/integration/run.sh $(VALGRIND_TESTS)

conformance: build/conformance-server
	scripts/conformance.sh

bench:
	bench/run.sh

install: $(BUILD)/hermes-mcp
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $< $(DESTDIR)$(PREFIX)/bin/hermes-mcp

# Every header must compile on its own.
headers:
	@for h in src/*.h; do \
	    echo "#include \"$$(basename $$h)\"" | $(CC) $(CPPFLAGS) $(WARN) -fsyntax-only -x c - || exit 1; \
	done; echo "headers: ok"

clean:
	rm -rf build

distclean: clean
	rm -rf tools .dev

include mk/fuzz.mk
include mk/fakes.mk

-include $(LIB_OBJ:.o=.d) $(BUILD)/main.d $(CONF_OBJ:.o=.d) $(UNITS:=.d)
