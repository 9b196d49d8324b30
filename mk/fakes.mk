# Test fakes (tests/fakes/); included by the Makefile.
.PHONY: fakes
fakes:
