# Generated documentation (.env.example, docs/reference/env.md, man/) and the Debian package.
# build/<flavour>/gendocs prints each generated file from the code's own tables; `make docs`
# writes them and tests/integration/docs/gendocs.test.mjs fails when a committed copy differs.
GENDOCS   := $(BUILD)/gendocs
MAN1      := man/hermes-mcp.1
MAN5      := man/hermes-mcp.env.5 man/hermes-mcp-gateway.yaml.5

.PHONY: docs install-man deb

all: $(GENDOCS)

$(GENDOCS): src/tools/gendocs.c $(LAYER_LIBS) | $(BUILD)
	$(CC) $(CPPFLAGS) $(ALL_INC) $(WARN) $(CFLAGS) $(SAN) $(LDFLAGS) -MMD -MP -o $@ $< \
	    $(LAYER_LIBS) $(LDLIBS)

# Each file is written whole or not at all.
gen = $(1) > $(2).tmp && mv $(2).tmp $(2)

docs: $(GENDOCS) $(BUILD)/hermes-mcp
	@mkdir -p man docs/reference
	$(call gen,$(GENDOCS) env-example,.env.example)
	$(call gen,$(GENDOCS) env-md,docs/reference/env.md)
	$(call gen,$(GENDOCS) env-man,man/hermes-mcp.env.5)
	$(call gen,$(GENDOCS) errors-md,docs/reference/errors.md)
	$(call gen,$(GENDOCS) scopes-md,docs/reference/scopes.md)
	$(call gen,$(GENDOCS) events-md,docs/reference/log-events.md)
	$(call gen,$(GENDOCS) cli-man $(BUILD)/hermes-mcp,man/hermes-mcp.1)
	$(call gen,$(GENDOCS) md-man hermes-mcp-gateway.yaml 5 "File Formats" \
	    < docs/reference/gateway-file.md,man/hermes-mcp-gateway.yaml.5)

install: install-man

install-man:
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 0644 $(MAN1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 $(MAN5) $(DESTDIR)$(PREFIX)/share/man/man5/

# hermes-mcp_<version>_<arch>.deb in build/, built by dpkg-buildpackage from a clean copy of
# the tracked files (debian/ holds the packaging).
deb:
	scripts/deb.sh

-include $(GENDOCS).d
