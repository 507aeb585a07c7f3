"""The catalog tests use the server tests' fixtures: real servers on free ports of 127.0.0.1."""

from tests.server.conftest import serve

__all__ = ["serve"]
