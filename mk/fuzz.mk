# Fuzzing rules (libFuzzer, clang, ASan+UBSan); included by the Makefile.
.PHONY: fuzz
fuzz:
	@echo "fuzz: no targets yet"
