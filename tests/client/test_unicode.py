"""Text an environment returns with a lone UTF-16 surrogate (a program the agent ran printed one)
reaches the client with U+FFFD in its place, and the session goes on."""

from __future__ import annotations

import random

import pytest

from omnienv.client import HTTPClient, WebSocketClient
from omnienv.core import Environment, Task, ToolCall, tool
from tests.server.conftest import Served


class Surrogates(Environment):
    """Echoes what it is told, with a lone surrogate of its own added."""

    name = "surrogates"

    def setup(self, task: Task | None, rng: random.Random) -> str:
        return "ready \ud800"

    @tool
    def say(self, text: str) -> str:
        """Echo ``text``."""
        return f"{text} \udfff"


@pytest.mark.parametrize("client_class", [WebSocketClient, HTTPClient])
def test_a_lone_surrogate_from_the_environment_never_drops_the_session(serve, client_class) -> None:  # type: ignore[no-untyped-def]
    served: Served = serve(Surrogates)
    with client_class.connect(served.url) as client:
        assert client.reset().text == "ready \ufffd"
        for word in ("one", "two"):
            result = client.step(ToolCall("say", {"text": word}))
            assert result.failure is None and result.observation.text == f"{word} \ufffd"
        assert client.state().step_count == 2
