# hermes-mcp build. Plain GNU Make; dependencies come from pkg-config (see deps.apt).
PREFIX  ?= /usr/local
PKGS    := libmicrohttpd libcurl jansson yaml-0.1 nettle libcrypto libpq
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
CPPFLAGS += -D_GNU_SOURCE $(shell pkg-config --cflags $(PKGS))
# libcurl and libpq are compiled against but not linked: src/http/curlrt.c and src/store/pgrt.c
# load them on first use.
LDLIBS   += $(shell pkg-config --libs $(filter-out libcurl libpq,$(PKGS))) -lm -pthread

# The layers, lowest first; each is a folder of src/ and a static library. A layer's code sees
# only its own headers and those of the layers below it (LAYER_INC), so an upward include fails
# to compile: base < http < otel < mcp < bridge < app < ops < main.c (otel: OpenTelemetry
# tracing, spans and their exporter, which the engine and the providers record into); gateway sits beside bridge (a
# provider on the engine, unseen by app); auth (principals, scopes) sits beside mcp on http,
# seen by app, not by mcp or bridge; approvals (the operator's approval queue, which both
# providers fill and app's control socket answers) sits on base, seen by the providers and app;
# store (durable state: files, or PostgreSQL through libpq on the loop) sits on base, seen by
# the bridge, the gateway, auth (its OAuth state in PostgreSQL) and app.
LAYERS := base store http otel mcp approvals bridge gateway auth app ops
LAYER_INC_base   := base
LAYER_INC_store  := base store
LAYER_INC_http   := $(LAYER_INC_base) http
LAYER_INC_otel   := $(LAYER_INC_http) otel
LAYER_INC_mcp    := $(LAYER_INC_otel) mcp
LAYER_INC_approvals := $(LAYER_INC_base) approvals
LAYER_INC_bridge := $(LAYER_INC_mcp) store approvals bridge
LAYER_INC_gateway := $(LAYER_INC_mcp) store approvals gateway
LAYER_INC_auth   := $(LAYER_INC_http) store auth
LAYER_INC_app    := $(LAYER_INC_mcp) store auth approvals app
LAYER_INC_ops    := $(LAYERS)
ALL_INC  := $(addprefix -Isrc/,$(LAYERS))
# Linked top layer first, so each library resolves against the ones after it.
LAYER_LIBS := $(foreach l,ops app auth gateway bridge approvals mcp otel http store base,$(BUILD)/lib/lib$(l).a)

layer_src = $(wildcard src/$(1)/*.c)
layer_obj = $(patsubst src/%.c,$(BUILD)/%.o,$(call layer_src,$(1)))
LIB_OBJ := $(foreach l,$(LAYERS),$(call layer_obj,$(l)))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNITS   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
CONF_SRC := $(wildcard tests/conformance/*.c)
CONF_OBJ := $(patsubst tests/conformance/%.c,$(BUILD)/conformance/%.o,$(CONF_SRC))

all: build/hermes-mcp

FORCE:
.PHONY: FORCE all check symbols check-globals format format-check unit hermes-tools-check integration valgrind conformance conformance-server install headers clean distclean bench bench-store bench-jwt bench-oidc

# Build flavours: build/release/ (the default) and build/asan/ (SANITIZE=1). build/<program> is
# the release program, the stable path for users and the README; SANITIZE=1 builds
# build/asan/<program> and leaves build/<program> alone. The tests are told which flavour to
# run by HM_BUILD (make passes $(BUILD); tests/integration/run.sh defaults to build/release).
define STABLE_PATH
ifeq ($(BUILD),build/release)
build/$(1): build/release/$(1) FORCE
	@ln -sfn release/$(1) $$@
else
.PHONY: build/$(1)
build/$(1): $(BUILD)/$(1)
endif
endef
$(foreach p,hermes-mcp conformance-server,$(eval $(call STABLE_PATH,$(p))))

conformance-server: build/conformance-server

$(BUILD)/hermes-mcp: $(BUILD)/main.o $(LAYER_LIBS)
	$(CC) $(LDFLAGS) $(SAN) -o $@ $^ $(LDLIBS)

$(BUILD)/conformance-server: $(CONF_OBJ) $(LAYER_LIBS)
	$(CC) $(LDFLAGS) $(SAN) -o $@ $^ $(LDLIBS)

define LAYER_RULES
$(BUILD)/$(1)/%.o: src/$(1)/%.c | $(BUILD)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CPPFLAGS) $(addprefix -Isrc/,$(LAYER_INC_$(1))) $$(WARN) $$(CFLAGS) $$(SAN) -MMD -MP -c -o $$@ $$<

$(BUILD)/lib/lib$(1).a: $(call layer_obj,$(1))
	@mkdir -p $$(dir $$@)
	rm -f $$@ && $$(AR) rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call LAYER_RULES,$(l))))

$(BUILD)/main.o: src/main.c | $(BUILD)
	$(CC) $(CPPFLAGS) $(ALL_INC) $(WARN) $(CFLAGS) $(SAN) -MMD -MP -c -o $@ $<

$(BUILD)/conformance/%.o: tests/conformance/%.c | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(addprefix -Isrc/,$(LAYER_INC_app)) $(WARN) $(CFLAGS) $(SAN) -MMD -MP -c -o $@ $<

# Unit tests link the layer libraries: the linker takes only the modules a test uses.
$(BUILD)/tests/%: tests/unit/%.c $(LAYER_LIBS) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_INC) $(WARN) -Wno-missing-prototypes $(CFLAGS) $(SAN) -MMD -MP -o $@ $< \
	    $(LAYER_LIBS) $(LDLIBS) -lcmocka

$(BUILD):
	@mkdir -p $@

unit: $(UNITS)
	tests/run.sh $(UNITS)

# contrib/hermes-tools (the stdio MCP server that runs inside Hermes' venv; Python, standard
# library only): its unit tests against the fake Hermes of tests/fakes/hermes/.
hermes-tools-check:
	cd contrib/hermes-tools && PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=.:../../tests/fakes/hermes \
	    python3 -m unittest discover -s tests

integration: all build/conformance-server fakes
	HM_BUILD=$(BUILD) tests/integration/run.sh

# The per-push tier, of the flavour SANITIZE picks: everything built first (one job per core),
# then the static checks (exported names, file-scope state: release objects only, as the
# sanitizers add symbols of their own), the fuzz corpora replayed, the unit programs and the
# hermes-tools' Python tests and the integration files (in parallel, then the ones marked
# serial); docs/internals/testing.md.
NPROC := $(shell nproc 2>/dev/null || echo 2)
STATIC_CHECKS := $(if $(filter build/release,$(BUILD)),symbols check-globals format-check)
check:
	@$(MAKE) -j$(NPROC) --no-print-directory all build/conformance-server fakes \
	    $(UNITS) fuzz-build $(STATIC_CHECKS)
	FUZZ_BUILD='$(FUZZ_BUILD)' tests/fuzz/run.sh --replay $(FUZZ_TARGETS)
	tests/run.sh $(UNITS)
	@$(MAKE) --no-print-directory hermes-tools-check
	HM_BUILD=$(BUILD) tests/integration/run.sh

# No mutable file-scope state but the process-wide kind, each allowed with its reason.
check-globals: $(BUILD)/hermes-mcp
	scripts/check-globals.sh $(BUILD)

# The C sources as .clang-format lays them out: `make format` rewrites them, `make check` fails
# on a file it would change.
FORMAT_SRC = $(shell git ls-files 'src/*.[ch]' 'tests/unit/*.[ch]' 'tests/fuzz/*.c' \
                 'tests/fakes/*.[ch]' 'bench/*.c' 2>/dev/null)
format:
	@test -n "$(FORMAT_SRC)" || { echo "format: not a git checkout" >&2; exit 1; }
	clang-format -i $(FORMAT_SRC)
format-check:
	@test -n "$(FORMAT_SRC)" || { echo "format-check: not a git checkout" >&2; exit 1; }
	@clang-format --dry-run -Werror $(FORMAT_SRC) && echo "format: ok ($(words $(FORMAT_SRC)) files)"

# Exported names carry their layer's or module's prefix (scripts/check-symbols.sh says which).
symbols: $(LAYER_LIBS)
	scripts/check-symbols.sh $(BUILD)

# The integration tests with our binaries under valgrind (memcheck, definite leaks fail).
valgrind: build/hermes-mcp build/conformance-server fakes
	HM_BUILD=$(BUILD) HM_VALGRIND=1 tests/integration/run.sh $(VALGRIND_TESTS)

conformance: build/conformance-server
	HM_BUILD=$(BUILD) scripts/conformance.sh

bench:
	bench/run.sh

# The PostgreSQL store beside the file store, one replica and two behind nginx (bench/store.mjs):
# its section of bench/RESULTS.md, printed and kept in bench/.work/store.md.
bench-store: all fakes
	@ln -sfn ../tools/sdk/node_modules tests/node_modules
	@mkdir -p bench/.work
	HM_BUILD=$(BUILD) $$(scripts/node-tools.sh node22 sdk | tail -1) bench/store.mjs > bench/.work/store.md && cat bench/.work/store.md

# What a JWT access token's verification costs with a cached key (bench/jwt.c; bench/RESULTS.md).
$(BUILD)/bench-jwt: bench/jwt.c $(LAYER_LIBS) | $(BUILD)
	$(CC) $(CPPFLAGS) $(ALL_INC) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(LAYER_LIBS) $(LDLIBS)
bench-jwt: $(BUILD)/bench-jwt
	$(BUILD)/bench-jwt

# And on a client's next requests: the verified token remembered (bench/oidc.c).
$(BUILD)/bench-oidc: bench/oidc.c $(LAYER_LIBS) | $(BUILD)
	$(CC) $(CPPFLAGS) $(ALL_INC) $(WARN) $(CFLAGS) $(SAN) -o $@ $< $(LAYER_LIBS) $(LDLIBS)
bench-oidc: $(BUILD)/bench-oidc
	$(BUILD)/bench-oidc

install: $(BUILD)/hermes-mcp
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $< $(DESTDIR)$(PREFIX)/bin/hermes-mcp

# Every header must compile on its own.
headers:
	@for h in src/*/*.h; do \
	    echo "#include \"$$(basename $$h)\"" | $(CC) $(CPPFLAGS) $(ALL_INC) $(WARN) -fsyntax-only -x c - || exit 1; \
	done; echo "headers: ok"

clean:
	rm -rf build

distclean: clean
	rm -rf tools .dev

include mk/fuzz.mk
include mk/fakes.mk
include mk/deb.mk

-include $(LIB_OBJ:.o=.d) $(BUILD)/main.d $(CONF_OBJ:.o=.d) $(UNITS:=.d)
