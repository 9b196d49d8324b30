# Test fakes (tests/fakes/); included by the Makefile.
# build/fake-agent: a fake Hermes Agent API server (tests/fakes/README.md). Objects go to
# $(BUILD)/fakes/, the binary to $(BUILD)/fake-agent; build/fake-agent is the release one, like
# build/hermes-mcp (STABLE_PATH in the Makefile). It links nothing from src/.
# build/notify-sink (a fake systemd notify socket) and build/listen-exec (socket activation
# without systemd) are single-file helpers for tests/integration/ops/service.test.mjs, built the same
# way; so is build/sandbox-exec (a unit's sandbox applied as systemd does, sandbox.test.mjs).
FAKE_PKGS       := libmicrohttpd jansson libcrypto
FAKE_AGENT_SRC  := tests/fakes/fake_agent.c tests/fakes/fake_plan.c
FAKE_AGENT_OBJ  := $(patsubst tests/fakes/%.c,$(BUILD)/fakes/%.o,$(FAKE_AGENT_SRC))
FAKE_LDLIBS     := $(shell pkg-config --libs $(FAKE_PKGS)) -lm -pthread

FAKE_TOOLS      := notify-sink listen-exec sandbox-exec pgconn-drive

.PHONY: fakes fakes-check
fakes: build/fake-agent $(addprefix build/,$(FAKE_TOOLS)) build/failsync.so

$(foreach p,fake-agent $(FAKE_TOOLS) failsync.so,$(eval $(call STABLE_PATH,$(p))))

$(BUILD)/notify-sink: $(BUILD)/fakes/notify_sink.o
	$(CC) $(LDFLAGS) $(SAN) -o $@ $^

$(BUILD)/listen-exec: $(BUILD)/fakes/listen_exec.o
	$(CC) $(LDFLAGS) $(SAN) -o $@ $^

# libseccomp: SystemCallFilter= applied as systemd does; only this test helper links it.
$(BUILD)/sandbox-exec: $(BUILD)/fakes/sandbox_exec.o
	$(CC) $(LDFLAGS) $(SAN) -o $@ $^ -lseccomp

# tests/drivers/: programs that drive one module of src/ against a real service (PostgreSQL),
# for the integration tests; they link the layer libraries they need.
$(BUILD)/pgconn-drive: tests/drivers/pgconn_drive.c $(BUILD)/lib/libstore.a $(BUILD)/lib/libbase.a
	$(CC) $(CPPFLAGS) -Isrc/base -Isrc/store $(WARN) -Wno-missing-prototypes $(CFLAGS) $(SAN) -o $@ $^ \
	    $(LDLIBS)

# An LD_PRELOAD shim (a flush that fails once): no sanitizer, whatever the flavour.
$(BUILD)/failsync.so: tests/fakes/failsync.c | $(BUILD)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) -shared -fPIC -o $@ $< -ldl

$(BUILD)/fake-agent: $(FAKE_AGENT_OBJ)
	$(CC) $(LDFLAGS) $(SAN) -o $@ $^ $(FAKE_LDLIBS)

$(BUILD)/fakes/%.o: tests/fakes/%.c | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(SAN) -MMD -MP -c -o $@ $<

# Builds the fake (same flavour) and checks it end to end with curl.
fakes-check:
	SANITIZE=$(SANITIZE) tests/fakes/selftest.sh

-include $(FAKE_AGENT_OBJ:.o=.d) $(BUILD)/fakes/notify_sink.d $(BUILD)/fakes/listen_exec.d $(BUILD)/fakes/sandbox_exec.d
