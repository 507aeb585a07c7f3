"""The client tests use the server tests' fixtures: real servers on free ports."""

from tests.server.conftest import serve

__all__ = ["serve"]
