"""Fixtures of the upstream tests: the fake llama-server (`faults` in test_upstream.py)."""

from tests.fakes import fixtures

fake_llama = fixtures.fake_llama  # shared with tests/link and tests/security
