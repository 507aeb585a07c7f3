"""Attack 1: the agent's key names must never become commands on the host.

xdotool chains commands (``key a exec sh -c ...``), so key text that reached its argv ran as
the server's user. Keys are validated against real keysyms and sent through XTEST instead.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from omnienv.core import ToolError
from omnienv.sandboxes.desktop import key_combo
from tests.security._desktop import act, agent, host_marker, needs_x, served_desktop

pytestmark = needs_x


def test_key_text_cannot_run_commands_on_the_host() -> None:
    marker = host_marker()
    payloads = [
        ("key", {"keys": f"a exec touch {marker}"}),
        ("key", {"keys": f"ctrl+a exec --sync touch {marker}"}),
        ("key", {"keys": f"Return type x exec touch {marker}"}),
        ("hold_key", {"keys": f"shift exec touch {marker}", "duration": 0.1}),
        ("hold_key", {"keys": f"a sleep 0 exec touch {marker}", "duration": 0.1}),
        ("left_click", {"coordinate": [900, 700], "text": f"shift exec touch {marker}"}),
        (
            "scroll",
            {
                "coordinate": [900, 700],
                "scroll_direction": "down",
                "scroll_amount": 1,
                "text": f"ctrl exec touch {marker}",
            },
        ),
    ]
    results, controls = [], []
    with served_desktop() as (url, _):

        async def run() -> None:
            async with agent(url) as client:
                await client.reset(task="train/terminal-echo")
                for tool, arguments in payloads:
                    results.append((tool, arguments, await act(client, tool, **arguments)))
                # The same words typed as text are only text, and real keys still work.
                controls.append(("type", await act(client, "type", text=f"exec touch {marker}")))
                for keys in ("ctrl+u", "Escape", "a", "F5", "shift+Tab", "KP_Enter", "enter", "@"):
                    controls.append((keys, await act(client, "key", keys=keys)))

        asyncio.run(run())
    assert not os.path.exists(marker), "agent key text ran a command on the host"
    for tool, arguments, result in results:
        text = result.observation.text
        assert result.observation.is_error, (tool, arguments, text)
        assert result.failure is None and not result.done, (tool, text)
        assert any(f"'{word}'" in text for word in ("exec", "type", "sleep")), text  # names the word it refused
        assert "Return" in text and "ctrl+s" in text, text  # and valid examples
    for what, result in controls:
        assert not result.observation.is_error, (what, result.observation.text)


@pytest.mark.parametrize("keys", ["NoSuchKey", "ctrl+", "hyper+a", "exec", "x" * 300])
def test_bad_key_names_are_a_clear_tool_error(keys: str) -> None:
    with pytest.raises(ToolError) as caught:
        key_combo(keys)
    message = str(caught.value)
    assert "Return" in message and "ctrl+s" in message, message  # valid examples named
