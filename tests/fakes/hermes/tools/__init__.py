"""Fake of Hermes' `tools` package: only the registry (tools/registry.py) is mirrored."""
