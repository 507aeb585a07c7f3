"""Joining Ray from here: which addresses are kept on loopback, and a private instance's own token."""

from __future__ import annotations

import os

import pytest

from omnienv.ray.cluster import is_loopback_address


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1:6379", True),
        ("localhost:6379", True),
        ("[::1]:6379", True),
        ("10.0.0.1:6379", False),
        ("head.example:6379", False),
        ("127.0.0.2:6379", False),  # Ray rewrites only the three names above
        ("auto", False),  # Ray reads that address itself
        ("ray://127.0.0.1:10001", False),  # a Ray client dials it itself
        ("local", False),
        (None, False),
    ],
)
def test_which_addresses_pin_the_driver_to_loopback(address: str | None, loopback: bool) -> None:
    assert is_loopback_address(address) is loopback


def test_a_private_instance_has_a_token_of_its_own(ray_local: None) -> None:
    # Ray 2.60 turns token authentication on for the instances it starts; the token is handed to
    # the instance's processes by environment instead of being read from (or written to) ~/.ray.
    assert os.environ["RAY_AUTH_MODE"] == "token"
    assert os.environ.get("RAY_AUTH_TOKEN")
