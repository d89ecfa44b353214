"""Stand-in package for uqjit.vllm tests (tests/python/test_vllm.py)."""
