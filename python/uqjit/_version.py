"""The package's version: the library's (meson.build's project version),
checked equal to uq_version_string() by tests/python/test_cpu.py."""
__version__ = "0.1.0"
