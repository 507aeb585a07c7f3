"""Every public method of openreward 0.1.167's ``Environment`` and ``Session`` on an omnienv server.

OMNIENV_URL is the server (Wordle). ``OPENREWARD_API_URL`` points the SDK's platform client at
it too, for ``list_required_secrets`` and ``get_task_difficulty``. Prints one JSON line per
method: ``{"kind": "method", "owner", "name", "value"}`` or ``"error"`` with the exception.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

URL = os.environ["OMNIENV_URL"]
os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"  # no PyPI query at import
os.environ["OPENREWARD_API_URL"] = URL

from openreward import OpenReward  # noqa: E402
from openreward.api.environments.client import Environment, Session  # noqa: E402
from openreward.api.environments.types import Message, TextBlock  # noqa: E402


def public(cls: type) -> list[str]:
    return sorted(name for name in vars(cls) if not name.startswith("_"))


def plain(value: Any) -> Any:
    """A JSON-able view of what a method returned."""
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if hasattr(value, "__dataclass_fields__"):
        return {"type": type(value).__name__, **{key: plain(getattr(value, key)) for key in value.__dataclass_fields__}}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return repr(value)


def emit(owner: str, name: str, call: Callable[[], Any]) -> Any:
    try:
        value = call()
    except Exception as exc:  # reported, the test decides what is expected
        print(json.dumps({"kind": "method", "owner": owner, "name": name, "error": f"{type(exc).__name__}: {exc}"}))
        return None
    shown = plain(value)
    if isinstance(shown, dict) and "data" in shown:
        shown["data"] = f"{len(shown['data'])} base64 chars"
    print(json.dumps({"kind": "method", "owner": owner, "name": name, "value": shown}, default=repr), flush=True)
    return value


def main() -> None:
    print(json.dumps({"kind": "public", "environment": public(Environment), "session": public(Session)}))
    client = OpenReward(api_key="local", base_url=URL)
    env = client.environments.get("local/wordle", variant="wordle", base_url=URL)
    for name in ("server", "namespace", "name", "variant", "deployment_name"):
        emit("environment", name, lambda name=name: getattr(env, name))
    emit("environment", "list_splits", env.list_splits)
    tasks = emit("environment", "list_tasks", lambda: env.list_tasks("test")[:2])
    emit("environment", "num_tasks", lambda: env.num_tasks("test"))
    emit("environment", "get_task", lambda: env.get_task("test", 3))
    emit("environment", "get_task_range", lambda: env.get_task_range("test", 1, 3))
    for form in (None, "openai", "openrouter", "anthropic", "google"):
        emit("environment", f"list_tools/{form}", lambda form=form: env.list_tools(format=form))
    emit("environment", "terminal_tool", env.terminal_tool)
    emit("environment", "is_assistant_message_final", env.is_assistant_message_final)
    emit("environment", "supports_score_group", env.supports_score_group)
    emit("environment", "get_prompt", lambda: env.get_prompt(tasks[0]))
    emit("environment", "list_required_secrets", env.list_required_secrets)
    emit("environment", "get_task_difficulty", lambda: env.get_task_difficulty(split="test"))

    with emit("environment", "session", lambda: env.session(task=tasks[0])) as session:
        for name in ("sid", "task"):
            emit("session", name, lambda name=name: getattr(session, name))
        emit("session", "version", session.version)
        emit("session", "get_prompt", session.get_prompt)
        for form in (None, "openai", "anthropic", "google"):
            emit("session", f"get_messages/{form}", lambda form=form: session.get_messages(format=form))
        for form in (None, "openai"):
            emit("session", f"list_tools/{form}", lambda form=form: session.list_tools(format=form))
        emit("session", "terminal_tool", session.terminal_tool)
        emit("session", "is_assistant_message_final", session.is_assistant_message_final)
        emit("session", "call_terminal_tool", lambda: session.call_terminal_tool("crane"))
        emit("session", "call_tool", lambda: session.call_tool("guess", {"word": "crane"}))
        emit("session", "supports_score_group", session.supports_score_group)
        candidate = [Message(role="assistant", blocks=[TextBlock(text="crane")])]
        emit("session", "score_group", lambda: session.score_group([candidate]))
    client.close() if hasattr(client, "close") else None


if __name__ == "__main__":
    main()
