"""OpenEnv (0.10.0's own ``GenericEnvClient`` over ``/ws``, in OpenEnv's virtualenv) against our server.

OpenEnv's virtualenv stays free of omnienv: the peer tests prove OpenEnv's client works against
our server with nothing of ours installed, and that stays true only while nothing of ours is
there. So the scripted player runs here and OpenEnv's client runs in
``tests/matrix/drivers/openenv.py``, one process for all four environments, relaying each call
over stdin/stdout. Everything the player reads is what OpenEnv's client returned: the reward and
``done`` of its ``StepResult``, the MCP content blocks of its observation (screenshots as image
blocks), and its metadata. A crash must come back as OpenEnv marks a void step: ``done`` true,
``reward`` null, the failure in the observation's metadata; after it, steps are refused.
"""

from __future__ import annotations

import base64
import contextlib
import json
import queue
import subprocess
import tempfile
import threading
from typing import IO, Any

from omnienv.app import create_app
from omnienv.server import running
from tests.matrix.cells import CELLS, Cell, Player, cell_report, crash_report, image_report
from tests.peerenv import ROOT, peer_python

DRIVER = "tests.matrix.drivers.openenv"
ANSWER_TIMEOUT_S = 180.0
"""How long one relayed request may take (a desktop's reset starts a display and its apps)."""


class Relay:
    """OpenEnv's client in its own virtualenv, one request and one answer at a time."""

    def __init__(self) -> None:
        self.log: IO[str] = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            [str(peer_python("openenv")), "-m", DRIVER],  # as a module: a script named openenv.py shadows openenv
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            cwd=ROOT,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")  # the driver exited

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()
        try:
            line = self.lines.get(timeout=ANSWER_TIMEOUT_S)
        except queue.Empty:
            raise RuntimeError(f"OpenEnv's client did not answer '{op}' within {ANSWER_TIMEOUT_S:g} s") from None
        if not line:
            raise RuntimeError(f"the OpenEnv driver exited on '{op}':\n{self.stderr()}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def must(self, op: str, **fields: Any) -> dict[str, Any]:
        """The answer to a request that must succeed."""
        reply = self.ask(op, **fields)
        if "error" in reply:
            raise RuntimeError(f"OpenEnv's client failed on '{op}': {reply['error']}")
        return reply

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read()[-4000:]

    def close(self) -> None:
        try:
            with contextlib.suppress(OSError):  # a driver that died has closed its end already
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            self.log.close()


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": name, "arguments": arguments}


class Shown:
    """What one frame showed the agent: text and images of its MCP blocks, and everything else."""

    def __init__(self, reply: dict[str, Any]) -> None:
        observation = dict(reply["observation"])
        result = observation.pop("result", None) or {}
        blocks = observation.pop("content", None) or result.get("content") or []
        self.texts = [block["text"] for block in blocks if block.get("type") == "text"]
        if isinstance(result.get("data"), str):
            self.texts.append(result["data"])
        self.images = [
            image_report("MCP ImageContent in OpenEnv's observation", base64.b64decode(block["data"]))
            for block in blocks
            if block.get("type") == "image" and block.get("mimeType") == "image/png"
        ]
        self.text = "\n".join(block["text"] for block in blocks if block.get("type") == "text")
        self.rest = {"observation": observation, "metadata": reply.get("metadata")}
        """The observation's other fields (metadata, tool name, error) and the step's metadata."""


def play(relay: Relay, cell: Cell) -> dict[str, Any]:
    with running(create_app(cell.env_class)) as url:
        relay.must("connect", url=url)
        try:
            return _episodes(relay, cell)
        finally:
            with contextlib.suppress(RuntimeError, OSError):  # a dead driver: the error above says why
                relay.ask("close")


def _episodes(relay: Relay, cell: Cell) -> dict[str, Any]:
    reset = Shown(relay.must("reset", kwargs={"task_id": cell.task_id, "seed": 0}))
    tools = relay.must("step", action={"type": "list_tools"})
    opening = relay.must("state")["state"]  # before any guess: a state that told the answer would leak it
    seen: list[Any] = [reset.text, reset.rest, tools["observation"], opening]
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    player = Player(cell, reset.text)
    rewards: list[float] = []
    done = False
    while not done:
        call = player.act()
        reply = relay.must("step", action=_call(call.name, call.arguments))
        if not isinstance(reply["reward"], int | float):
            raise AssertionError(f"a step of the scripted episode had no reward: {reply}")
        shown = Shown(reply)
        rewards.append(float(reply["reward"]))
        done = bool(reply["done"])
        seen.append(shown.rest)
        texts.extend(shown.texts)
        images.extend(shown.images)
        player.saw(call, shown.text)
    state = relay.must("state")["state"]  # the trainer's view at the end: it holds the agent's own winning guess
    if not (state.get("step_count") == len(rewards) and state.get("done") is True):
        raise AssertionError(f"state() disagrees with the episode's {len(rewards)} steps: {state}")

    relay.must("reset", kwargs={"task_id": cell.task_id, "seed": 1})
    crashed = relay.must("step", action=_call(cell.crash.name, cell.crash.arguments))
    flagged = Shown(crashed).rest
    failure = (flagged["observation"].get("metadata") or {}).get("failure")
    seen.append(flagged)
    after = relay.ask("step", action=_call(call.name, call.arguments))
    refused = "EPISODE_OVER" in str(after.get("error"))
    masked = crashed["reward"] is None and crashed["done"] is True and bool(failure) and refused
    crash = crash_report(crashed["reward"], "reward=None, observation.metadata['failure']", masked)
    notes = f"state after the episode: {state}; after the crash: {after}"
    return cell_report(
        cell.env, rewards=rewards, total=sum(rewards), done=done, crash=crash, seen=seen, texts=texts,
        images=images, notes=notes[:2000],
    )  # fmt: skip


def collect() -> dict[str, dict[str, Any]]:
    relay = Relay()
    try:
        return {env: play(relay, cell) for env, cell in CELLS.items()}
    finally:
        relay.close()
