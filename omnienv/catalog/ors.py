"""Any ORS (Open Reward Standard) server, by URL, as an omnienv environment: ``ors+http://host:port``.

ORS is the REST + SSE protocol of OpenReward's ``openreward`` SDK, which omnienv also serves
(:mod:`omnienv.dialects.ors`). Everything an ORS server says about an environment maps onto the
contract, read once when the class is made (:func:`environment`):

- **tools**: the server's tool listing (``GET /{env}/tools``), each a tool with its input schema,
  its arguments checked here before they reach the server;
- **tasks and splits**: ORS lists tasks per split; task ``i`` of split ``s`` is an omnienv task
  whose data is its index (``/create`` is sent ``{split, index}``), named by the server's own task
  id when every task of the split has one (an omnienv server's), else ``s/0000i``. The task specs
  themselves stay on the server: ORS specs often hold the answer;
- **reward and end**: each tool result's ``reward`` (``null`` counts 0) and ``finished`` (truncation
  where an omnienv server's ``metadata`` says the episode was cut short); a reward that is no
  finite number (NaN, a string) is the server's failure, never scored;
- **failures**: a server that cannot be reached, a 5xx, a reply outside the protocol, a tool that
  raised on the server (an SSE ``error`` event) or a step an omnienv server voided is
  :class:`~omnienv.catalog._ors_client.OrsServerError`, an infrastructure failure: the step is
  flagged ``env_error`` (never a reward of 0), a failed reset raises. ORS's own refusals of a call
  (``input_validation``, ``not_found``...) and an omnienv server's error observations are the
  agent's mistakes, answered as error observations.

One ORS session per omnienv instance, opened by ``reset`` and deleted by the next reset or
``close``. A server with several environments serves each under its name: ``ors+URL#name``
(default: the first it lists). ORS servers reap a session idle for 15 minutes (no call, no
ping); an episode left that long fails at its next step. httpx is imported only when such a name
is loaded; without it, loading names the extra.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from omnienv.catalog._foreign import class_name, foreign_reward
from omnienv.catalog._schema_tool import add_tool, schema_tool
from omnienv.catalog._wire import public
from omnienv.catalog.manifest import MissingLibraryError, Source
from omnienv.core import (
    Block,
    Environment,
    EnvironmentDefinitionError,
    ImageBlock,
    StepResult,
    Task,
    TextBlock,
    ToolCall,
    ToolError,
    ToolResult,
    ToolSpec,
    UnknownEnvironmentError,
)

if TYPE_CHECKING:
    from omnienv.catalog._ors_client import OrsConnection, SessionClient

__all__ = ["SCHEME", "OrsEnvironment", "environment", "is_ors_url", "server_info"]

SCHEME = "ors+"
SOURCE = Source("ors", "httpx", "httpx", "ors", "omnienv.catalog.ors")
_URL = re.compile(r"^ors\+(https?)://[^/\s#]+(/[^\s#]*)?(#[A-Za-z0-9_.-]+)?$")
DEFAULT_MAX_TURNS = 50
"""ORS environments end themselves (``finished``); the contract still wants a limit."""
AGENT_REASONS = frozenset({"input_validation", "not_found", "bad_input_shape", "name_collision"})
"""ORS refusals caused by the call itself: the agent reads them and goes on."""


def is_ors_url(name: str) -> bool:
    """``ors+http://host:port[/path][#env]`` (or https)."""
    return bool(_URL.match(name))


def _parts(url: str) -> tuple[str, str | None]:
    """The server's base URL and the environment named after ``#`` (None: the server's first)."""
    base, _, env = url.removeprefix(SCHEME).partition("#")
    return base.rstrip("/"), env or None


def _blocks(raw: Sequence[Any]) -> tuple[Block, ...]:
    """ORS content blocks as ours: text and images (base64 ``data``, ``mimeType``); others skipped."""
    out: list[Block] = []
    for block in raw:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            out.append(TextBlock(str(block.get("text", ""))))
        elif block.get("type") == "image":
            try:
                data = base64.b64decode(str(block.get("data", "")), validate=True)
            except (binascii.Error, ValueError):
                continue
            out.append(ImageBlock(data, str(block.get("mimeType") or "image/png")))
    return tuple(out)


def _client(name: str = "ors+URL") -> Any:
    """The wire module, imported on first use: it needs httpx (the ors extra)."""
    try:
        return importlib.import_module("omnienv.catalog._ors_client")
    except ImportError as exc:
        raise MissingLibraryError(name, SOURCE, exc) from exc


def outcome(reply: Mapping[str, Any]) -> tuple[ToolResult, bool]:
    """One ``/call`` reply as the step's result, and whether the server cut the episode short (an
    omnienv server says so in ``metadata``; to ORS it is just ``finished``); raises for the agent's
    mistakes and for failures."""
    failure = _client().OrsServerError
    if not reply["ok"]:
        reason, error = reply.get("reason"), str(reply.get("error") or reply.get("reason"))
        if reason in AGENT_REASONS:
            raise ToolError(error)
        raise failure(f"the ORS server refused the call ({reason}): {error}")
    output = reply.get("output")
    if not isinstance(output, Mapping) or not isinstance(output.get("blocks"), list):
        raise failure(f"a tool output without blocks: {output!r:.200}")
    content = _blocks(output["blocks"])
    raw_metadata = output.get("metadata")
    metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
    voided = metadata.get("failure")  # an omnienv server's flagged step: void, not scored
    if isinstance(voided, Mapping):
        raise failure(f"the environment failed on the server: {voided.get('message', voided)}")
    finished = output.get("finished", False)
    if not isinstance(finished, bool):
        raise failure(f"a tool output whose 'finished' is not true or false: {finished!r:.100}")
    text = "\n".join(block.text for block in content if isinstance(block, TextBlock))
    if metadata.get("is_error") is True and not finished:  # an omnienv server's error observation
        raise ToolError(text or "the tool reported an error")
    value = foreign_reward(output.get("reward"), "the ORS server's tool output")
    truncated = finished and metadata.get("truncated") is True and metadata.get("done") is not True
    return ToolResult(content or (TextBlock("(no output)"),), value, finished and not truncated, {}), truncated


class OrsEnvironment(Environment):
    """One environment of an ORS server, reached over HTTP; subclasses are made per server."""

    extras = ("ors",)
    max_turns = DEFAULT_MAX_TURNS
    base_url: ClassVar[str] = ""
    env_name: ClassVar[str] = ""
    server_version: ClassVar[str | None] = None
    split_tasks: ClassVar[dict[str, tuple[Task, ...]]] = {}
    _connection: OrsConnection | None = None
    _session: SessionClient | None = None
    _truncated: bool = False

    @classmethod
    def tasks(cls, split: str) -> Sequence[Task]:
        return cls.split_tasks.get(split, ())

    def setup(self, task: Task | None, rng: random.Random) -> Sequence[Block] | str:
        self._end_session()
        if task is None:  # ORS servers always have splits; only a class without tasks gets here
            raise UnknownEnvironmentError(f"{self.name}: the ORS server lists no tasks to start an episode on")
        wire = _client()
        if self._connection is None:
            self._connection = wire.OrsConnection(self.base_url)
        self._session = wire.SessionClient(self._connection, self.env_name)
        prompt = _blocks(self._session.open(task.split, int(task.data["index"])))
        return prompt or f"{self.description} The episode has started."

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the server's tool ``name`` in this session."""
        if self._session is None:
            raise _client().OrsServerError(f"{self.name}: the ORS session is closed")
        result, self._truncated = outcome(self._session.call(name, arguments))
        return result

    def step(self, call: ToolCall) -> StepResult:
        """A step; one the server cut short (its turn limit) ends as truncation, not as done."""
        self._truncated = False
        result = super().step(call)
        if self._truncated and result.failure is None and not result.done:
            result.truncated = True
            if self.episode is not None:
                self.episode.truncated = True
        return result

    def _end_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.delete()

    def teardown(self) -> None:
        self._end_session()
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


def _tasks(connection: OrsConnection, env: str, split: str) -> tuple[Task, ...]:
    """Split ``split``'s tasks: ``/tasks``, or ``/num_tasks`` where the server only indexes them."""
    try:
        listing = connection.json("POST", f"/{env}/tasks", {"split": split})
        specs = listing.get("tasks") if isinstance(listing, Mapping) else None
    except _client().OrsServerError:
        specs = None
    if not isinstance(specs, list):
        counted = connection.json("POST", f"/{env}/num_tasks", {"split": split})
        count = counted.get("num_tasks") if isinstance(counted, Mapping) else None
        if not isinstance(count, int):
            raise UnknownEnvironmentError(f"the ORS server at {connection.base_url} lists no tasks of split '{split}'")
        specs = [None] * count
    ids = [spec.get("id") if isinstance(spec, Mapping) else None for spec in specs]
    if not all(isinstance(task_id, str) and task_id for task_id in ids) or len(set(ids)) != len(ids):
        ids = [f"{split}/{i:05d}" for i in range(len(specs))]
    return tuple(Task(str(task_id), split, {"index": i}) for i, task_id in enumerate(ids))


def _distinct_across_splits(tasks: dict[str, tuple[Task, ...]]) -> dict[str, tuple[Task, ...]]:
    """The tasks, each id named by its split (``test/7``) where a server gives one id in two splits.

    ORS ids need only be unique within a split, but an omnienv task id names one task (``reset(task=
    "7")`` must know which), and ``check_env`` fails an id filed under two splits, as it would be
    for a task leaking from train into test; the server still opens each by split and index."""
    counts = Counter(task.id for listed in tasks.values() for task in listed)  # unique within each split
    if all(count == 1 for count in counts.values()):
        return tasks
    return {
        split: tuple(Task(f"{split}/{task.id}", split, task.data, task.answer) for task in listed)
        for split, listed in tasks.items()
    }


def _discover(connection: OrsConnection, wanted: str | None) -> dict[str, Any]:
    """What the server says about one of its environments: name, tools, tasks, version."""
    names = connection.json("GET", "/list_environments")
    if not isinstance(names, list) or not names:
        raise UnknownEnvironmentError(f"the ORS server at {connection.base_url} lists no environments")
    env = wanted or str(names[0])
    if env not in names:
        raise UnknownEnvironmentError(f"the ORS server at {connection.base_url} serves {names}, not '{env}'")
    listing = connection.json("GET", f"/{env}/tools")
    tools = listing.get("tools") if isinstance(listing, Mapping) else None
    if not isinstance(tools, list) or not tools:
        raise UnknownEnvironmentError(f"the ORS environment '{env}' at {connection.base_url} lists no tools")
    listed = connection.json("GET", f"/{env}/splits")
    if not isinstance(listed, list) or not listed:
        raise UnknownEnvironmentError(f"the ORS environment '{env}' at {connection.base_url} lists no splits")
    splits = [s.get("name") if isinstance(s, Mapping) else s for s in listed]
    try:
        about = connection.json("GET", "/version")
        version = about.get("version") if isinstance(about, Mapping) else None
    except _client().OrsServerError:  # optional: older servers have no /version
        version = None
    return {
        "env": env,
        "tools": tools,
        "tasks": _distinct_across_splits({str(split): _tasks(connection, env, str(split)) for split in splits}),
        "version": str(version) if version is not None else None,
    }


def _tool_specs(tools: Sequence[Any], where: str) -> dict[str, ToolSpec]:
    specs: dict[str, ToolSpec] = {}
    for item in tools:
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str):
            raise EnvironmentDefinitionError(f"{where} lists a tool without a name: {item!r:.100}")

        def call(env: OrsEnvironment, arguments: dict[str, Any], _name: str = name) -> ToolResult:
            return env.call(_name, arguments)

        add_tool(specs, schema_tool(name, str(item.get("description") or ""), item.get("input_schema"), call), where)
    return specs


def server_info(url: str) -> dict[str, Any]:
    """The server's account of its environment (``env``, ``tools``, ``tasks``, ``version``), read now."""
    if not is_ors_url(url):
        raise UnknownEnvironmentError(f"'{url}' is not an ORS server URL: write ors+http://host:port")
    base, wanted = _parts(url)
    connection = _client(url).OrsConnection(base)
    try:
        found: dict[str, Any] = _discover(connection, wanted)
    except _client().OrsServerError as exc:
        raise UnknownEnvironmentError(f"cannot read the ORS server at {public(base)}: {exc.message}") from exc
    finally:
        connection.close()
    return found


@cache
def environment(url: str) -> type[OrsEnvironment]:
    """The omnienv class for the ORS environment at ``url``, its tools and tasks read from the server now."""
    found = server_info(url)
    base, env = _parts(url)[0], found["env"]
    shown = public(base)  # names and descriptions never carry the URL's credentials
    where = shown.split("://", 1)[1]
    namespace = {
        "name": class_name(f"ors/{where}.{env}"),
        "description": f"The ORS environment '{env}' at {shown}.",
        "base_url": base,
        "env_name": env,
        "server_version": found["version"],
        "splits": tuple(found["tasks"]),
        "split_tasks": found["tasks"],
        "__module__": __name__,
        "__doc__": f"The ORS environment '{env}' at {shown}, over HTTP.",
    }
    cls: type[OrsEnvironment] = type("Ors_" + re.sub(r"\W", "_", f"{where}_{env}"), (OrsEnvironment,), namespace)
    cls.tools = _tool_specs(found["tools"], f"the ORS environment '{env}' at {shown}")
    return cls
