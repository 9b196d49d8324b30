"""Fake Hermes tool modules: each defines TOOLS, a list of dicts (see ../README.md)."""
