# Fuzzing rules (libFuzzer, clang, ASan+UBSan); included by the Makefile.
#   make fuzz-build                  builds build/fuzz/fuzz_<target> for each target
#   make fuzz [FUZZ_SECONDS=10]      builds, then runs each target that long on a scratch copy of
#                                    tests/fuzz/corpus/<target>/ (tests/fuzz/run.sh); fails if any
#                                    target crashes. Crash inputs go to build/fuzz/artifacts/, each
#                                    run's libFuzzer output to build/fuzz/<target>.log.
#   make fuzz FUZZ_TARGETS='sse registry'   builds and runs only those targets.
#   make fuzz-replay                 builds, then runs every input of each target's seed corpus
#                                    once (no fuzzing; part of make check).
# Targets run FUZZ_JOBS at a time (default: the number of cores).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 10
FUZZ_BUILD   := build/fuzz
FUZZ_TARGETS := jrpc dotenv hdr sse registry taskpath contract chatchunk gwfile tokens form \
                clientdoc clientmeta gwsecret jscan jwt jwks jsonparse
FUZZ_SAN     := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer -g -O1
FUZZ_BINS    := $(addprefix $(FUZZ_BUILD)/fuzz_,$(FUZZ_TARGETS))

# The pure modules each target links (with what they use: buf.c needs mem.c), and its libraries
# (agentsyaml.c: libyaml and jansson).
FUZZ_SRC_jrpc     := src/mcp/jrpc.c src/mcp/metacache.c src/base/utf8.c src/base/mem.c
FUZZ_SRC_dotenv   := src/base/dotenv.c src/base/buf.c src/base/mem.c
FUZZ_SRC_hdr      := src/http/hdr.c
FUZZ_SRC_sse      := src/http/sse.c src/base/buf.c src/base/mem.c
FUZZ_SRC_registry := src/bridge/agentsyaml.c src/base/yamljson.c src/base/mem.c src/base/utf8.c
FUZZ_SRC_taskpath := src/bridge/taskpath.c
FUZZ_SRC_contract := src/bridge/contract.c src/base/buf.c src/base/mem.c src/base/utf8.c
FUZZ_SRC_chatchunk := src/bridge/chatchunk.c src/base/buf.c src/base/mem.c
FUZZ_SRC_gwfile   := src/gateway/gwfile.c src/gateway/gwrules.c src/gateway/gwinterp.c src/base/jspec.c \
                     src/base/yamljson.c \
                     src/base/buf.c src/base/mem.c src/base/utf8.c
FUZZ_SRC_tokens   := src/auth/tokensfile.c src/auth/claimmap.c src/http/scopes.c src/base/yamljson.c src/base/mem.c src/base/utf8.c src/base/hex.c
FUZZ_SRC_form     := src/auth/form.c src/base/crypto.c src/base/hex.c
FUZZ_SRC_clientdoc := src/auth/clientdoc.c src/auth/clientmeta.c src/base/mem.c
FUZZ_SRC_clientmeta := src/auth/clientmeta.c
FUZZ_SRC_gwsecret := src/gateway/gwsecret.c
FUZZ_SRC_jscan    := src/gateway/jscan.c
FUZZ_SRC_jwt      := src/auth/jwt.c src/base/jsonparse.c src/base/utf8.c src/base/mem.c
FUZZ_SRC_jwks     := $(FUZZ_SRC_jwt)
FUZZ_SRC_jsonparse := src/base/jsonparse.c src/base/utf8.c
FUZZ_LIB_jrpc     := $(shell pkg-config --libs jansson)
FUZZ_LIB_dotenv   := $(FUZZ_LIB_jrpc)
FUZZ_LIB_hdr      :=
FUZZ_LIB_sse      :=
FUZZ_LIB_registry := $(shell pkg-config --libs yaml-0.1 jansson)
FUZZ_LIB_taskpath :=
FUZZ_LIB_contract := $(FUZZ_LIB_jrpc)
FUZZ_LIB_chatchunk := $(FUZZ_LIB_jrpc)
FUZZ_LIB_gwfile   := $(FUZZ_LIB_registry)
FUZZ_LIB_tokens   := $(FUZZ_LIB_registry)
FUZZ_LIB_form     := $(shell pkg-config --libs nettle)
FUZZ_LIB_clientdoc := $(FUZZ_LIB_jrpc)
FUZZ_LIB_clientmeta := $(FUZZ_LIB_jrpc)
FUZZ_LIB_gwsecret := -lm
FUZZ_LIB_jscan    := $(FUZZ_LIB_jrpc)
FUZZ_LIB_jwt      := $(shell pkg-config --libs jansson libcrypto) -lm
FUZZ_LIB_jwks     := $(FUZZ_LIB_jwt)
FUZZ_LIB_jsonparse := $(FUZZ_LIB_jrpc) -lm

.PHONY: fuzz fuzz-build fuzz-replay
fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	FUZZ_SECONDS='$(FUZZ_SECONDS)' FUZZ_BUILD='$(FUZZ_BUILD)' FUZZ_JOBS='$(FUZZ_JOBS)' \
	    tests/fuzz/run.sh $(FUZZ_TARGETS)

fuzz-replay: fuzz-build
	FUZZ_BUILD='$(FUZZ_BUILD)' FUZZ_JOBS='$(FUZZ_JOBS)' tests/fuzz/run.sh --replay $(FUZZ_TARGETS)

# One link per target from its sources (few and small, so no objects); any header change rebuilds.
define FUZZ_RULE
$(FUZZ_BUILD)/fuzz_$(1): tests/fuzz/fuzz_$(1).c $(FUZZ_SRC_$(1)) $(wildcard src/*/*.h tests/fuzz/*.h) mk/fuzz.mk
	@mkdir -p $$(dir $$@)
	$$(FUZZ_CC) $$(CPPFLAGS) $$(ALL_INC) $$(WARN) $$(FUZZ_SAN) -o $$@ $$(filter %.c,$$^) $$(FUZZ_LIB_$(1))
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_RULE,$(t))))
