# Test fakes (tests/fakes/); included by the Makefile.
# build/fake-agent: a fake Hermes Agent API server (tests/fakes/README.md). Objects go to
# $(BUILD)/fakes/, the binary to $(BUILD)/fake-agent; build/fake-agent points at the flavour built
# last (SANITIZE=1: build/asan), like build/hermes-mcp. It links nothing from src/.
FAKE_PKGS       := libmicrohttpd jansson libcrypto
FAKE_AGENT_SRC  := tests/fakes/fake_agent.c tests/fakes/fake_plan.c
FAKE_AGENT_OBJ  := $(patsubst tests/fakes/%.c,$(BUILD)/fakes/%.o,$(FAKE_AGENT_SRC))
FAKE_LDLIBS     := $(shell pkg-config --libs $(FAKE_PKGS)) -lm -pthread

.PHONY: fakes fakes-check
fakes: build/fake-agent

build/fake-agent: $(BUILD)/fake-agent FORCE
	@ln -sf $(notdir $(BUILD))/fake-agent $@

$(BUILD)/fake-agent: $(FAKE_AGENT_OBJ)
	$(CC) $(LDFLAGS) $(SAN) -o $@ $^ $(FAKE_LDLIBS)

$(BUILD)/fakes/%.o: tests/fakes/%.c | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -MMD -MP -c -o $@ $<

# Builds the fake (same flavour) and checks it end to end with curl.
fakes-check:
	SANITIZE=$(SANITIZE) tests/fakes/selftest.sh

-include $(FAKE_AGENT_OBJ:.o=.d)
