"""A scripted model for harnesses: it replays a terminal task's ``solution/solve.sh`` as shell actions.

The scripted OpenAI-compatible endpoint (:mod:`omnienv.rollout.scripted_openai`) asks a responder
for each reply's tool calls. :func:`replay_responder` recognises the task by its instruction in the
conversation's first user message and answers turn N with the N-th action: first the sandbox
probes, then each complete command of the task's solution, then the harness's submit command, one
``bash`` tool call per turn (mini-swe-agent's reply format; the test CLI agent reads the same).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omnienv.rollout.scripted_openai import Reply, Responder

__all__ = ["checkout_probe", "listening_ports", "network_probe", "replay_responder", "shell_actions"]

_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
_SET_OPTIONS = re.compile(r"\s*set\s+[-+][a-z]+(\s+pipefail)?\s*")


def _complete(text: str) -> bool:
    """Whether ``text`` is whole commands: bash parses it with no error and no warning (an open
    heredoc is only a warning)."""
    checked = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, check=False)
    return checked.returncode == 0 and not checked.stderr.strip()


def shell_actions(script: str) -> list[str]:
    """``solve.sh`` as the commands an agent sends one per turn: each complete command (a heredoc or
    an ``if`` block whole), without the shebang, comments, blank lines and ``set -e`` lines (in the
    environment's persistent shell, ``-e`` would end the shell at the first failing command)."""
    actions: list[str] = []
    chunk: list[str] = []
    pending: list[str] = []
    for line in script.splitlines():
        if not chunk and (not line.strip() or line.lstrip().startswith("#") or _SET_OPTIONS.fullmatch(line)):
            continue
        chunk.append(line)
        if pending:
            if line.strip() == pending[0]:
                pending.pop(0)
            if pending:
                continue
        else:
            pending = _HEREDOC.findall(line)
            if pending:
                continue
        text = "\n".join(chunk)
        if not line.rstrip().endswith("\\") and _complete(text):
            actions.append(text)
            chunk = []
    if chunk:
        actions.append("\n".join(chunk))
    return actions


def listening_ports() -> list[int]:
    """The TCP ports listening on 127.0.0.1 on this machine now (the runner's server, the capture
    proxy, the shell relay, the model among them), from ``/proc/net/tcp``."""
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, port = local.split(":")
        if state == "0A" and address == "0100007F":
            ports.add(int(port, 16))
    return sorted(ports)


def network_probe(ports: Sequence[int]) -> str:
    """A command that tries each loopback port from inside the sandbox and says what happened."""
    code = (
        "import socket\n"
        f"for port in {list(ports)!r}:\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', port), timeout=2).close()\n"
        "        print('OPEN', port)\n"
        "    except OSError as exc:\n"
        "        print('CLOSED', port, type(exc).__name__)\n"
    )
    return f"python3 - <<'PROBE'\n{code}PROBE"


def checkout_probe(paths: Sequence[Path]) -> str:
    """A command that lists the project checkout and the virtualenv (it must find neither)."""
    return " ; ".join(f"ls {path}" for path in paths)


def _user_text(messages: list[dict[str, Any]]) -> str:
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


def replay_responder(
    scripts: dict[str, list[str]], probes: Callable[[], list[str]], submit: str, tool: str = "bash"
) -> Responder:
    """Answers turn N of the conversation about instruction I with ``[*probes(), *scripts[I], submit][N]``
    (probes are made when first asked: the ports listening then); plain text once all are sent."""
    made: dict[str, list[str]] = {}

    def respond(messages: list[dict[str, Any]]) -> Reply:
        text = _user_text(messages)
        instruction = next((known for known in scripts if known.strip() in text), None)
        if instruction is None:
            return []
        if instruction not in made:
            made[instruction] = [*probes(), *scripts[instruction], submit]
        turn = sum(message.get("role") == "assistant" for message in messages)
        actions = made[instruction]
        return [(tool, {"command": actions[turn]})] if turn < len(actions) else []

    return respond
