"""Any OpenEnv ``Environment`` class, in-process, as an omnienv environment: ``openenv/<module>:<Class>``.

An ``MCPEnvironment``'s MCP tools become omnienv tools (their names, descriptions and input
schemas, read once with ``step(ListToolsAction())`` when the class is made), and a call is
``step(CallToolAction(...))``. A plain environment gets one tool, ``act``, whose arguments are its
Action model's fields (the model is read from ``step``'s type hint or the class's generic
parameters). Each omnienv instance builds its own OpenEnv instance, so sessions never share one.

openenv is imported only when such a name is loaded; without it, loading names the extra.
"""

from __future__ import annotations

import importlib
import typing
from functools import cache
from typing import Any, ClassVar

import pydantic
from pydantic_core import PydanticSerializationError

from omnienv.catalog._foreign import class_name
from omnienv.catalog._openenv_shared import OpenEnvBase, Payload, tool_specs
from omnienv.catalog.manifest import MissingLibraryError, Source
from omnienv.core import ToolError, UnknownEnvironmentError

__all__ = ["PREFIX", "InProcessOpenEnv", "environment", "is_openenv_name"]

PREFIX = "openenv/"
SOURCE = Source("openenv", "openenv", "openenv", "openenv", "omnienv.catalog.openenv")


def is_openenv_name(name: str) -> bool:
    """``openenv/<module>:<Class>``, known or not."""
    return name.startswith(PREFIX) and ":" in name


class InProcessOpenEnv(OpenEnvBase):
    """An OpenEnv environment class run in this process."""

    extras = ("openenv",)
    openenv_class: ClassVar[type[Any]]
    action_class: ClassVar[type[Any] | None] = None
    _env: Any = None

    def open_backend(self) -> None:
        if self._env is None:
            self._env = self.openenv_class()

    def send_reset(self, seed: int) -> Payload:
        return _payload(self._env.reset(seed=seed))

    def send_step(self, action: dict[str, Any]) -> Payload:
        if self.mcp:
            mcp_types = importlib.import_module("openenv.core.env_server.mcp_types")
            typed = mcp_types.CallToolAction(tool_name=action["tool_name"], arguments=action["arguments"])
        else:
            assert self.action_class is not None
            try:
                typed = self.action_class.model_validate(action)
            except pydantic.ValidationError as exc:  # a rule the schema could not say: the agent's mistake
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'action'}: {e['msg']}" for e in exc.errors())
                raise ToolError(f"invalid action: {problems}") from None
        return _payload(self._env.step(typed))

    def teardown(self) -> None:
        env, self._env = self._env, None
        if env is not None:
            env.close()


def _payload(observation: Any) -> Payload:
    """An OpenEnv Observation in wire shape, as its server would send it."""
    try:
        fields = observation.model_dump(mode="json")
    except PydanticSerializationError:  # a field JSON cannot hold (bytes, arrays): rendered as text
        fields = observation.model_dump()
    reward, done = fields.pop("reward", None), fields.pop("done", False)
    return {"observation": fields, "reward": reward, "done": done}


def _action_class(cls: type[Any], base: type[Any]) -> type[Any] | None:
    """The Action model of a plain OpenEnv environment: ``step``'s hint, else the generic argument."""
    try:
        hint = typing.get_type_hints(cls.step).get("action")
    except Exception:  # unresolvable hints: fall back to the generic parameters
        hint = None
    if isinstance(hint, type) and issubclass(hint, pydantic.BaseModel) and hint is not base:
        return hint
    for klass in cls.__mro__:
        for generic in getattr(klass, "__orig_bases__", ()):
            args = typing.get_args(generic)
            if args and isinstance(args[0], type) and issubclass(args[0], base):
                return args[0]
    return None


@cache
def environment(name: str) -> type[InProcessOpenEnv]:
    """The omnienv class for ``openenv/<module>:<Class>``, importing openenv and the module now."""
    target = name.removeprefix(PREFIX)
    module_name, _, attribute = target.partition(":")
    try:
        server = importlib.import_module("openenv.core.env_server")
    except ImportError as exc:
        raise MissingLibraryError(name, SOURCE, exc) from exc
    try:
        foreign = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise UnknownEnvironmentError(f"cannot load OpenEnv environment '{target}': {exc}") from exc
    if not (isinstance(foreign, type) and issubclass(foreign, server.Environment)):
        raise UnknownEnvironmentError(
            f"'{target}' is not an OpenEnv Environment class (openenv.core.env_server.Environment)"
        )
    mcp = issubclass(foreign, server.MCPEnvironment)
    action_class = None if mcp else _action_class(foreign, server.Action)
    if not mcp and action_class is None:
        raise UnknownEnvironmentError(
            f"cannot tell the Action model of '{target}': annotate step(self, action: MyAction) "
            "or subclass Environment[MyAction, MyObservation, MyState]"
        )
    try:
        mcp_tools = _list_tools(foreign) if mcp else None
    except UnknownEnvironmentError:
        raise
    except Exception as exc:  # the foreign constructor or tool listing broke: say which class
        raise UnknownEnvironmentError(f"cannot list the tools of '{target}': {type(exc).__name__}: {exc}") from exc
    schema = None if action_class is None else action_class.model_json_schema()
    namespace = {
        "name": class_name(name),
        "description": (foreign.__doc__ or f"OpenEnv's {attribute}").strip().split("\n\n")[0],
        "target": target,
        "mcp": mcp,
        "openenv_class": foreign,
        "action_class": action_class,
        "__module__": __name__,
        "__doc__": f"OpenEnv's {target}, in-process.",
    }
    cls: type[InProcessOpenEnv] = type(f"OpenEnv_{attribute}", (InProcessOpenEnv,), namespace)
    cls.tools = tool_specs(mcp_tools, schema)
    return cls


def _list_tools(foreign: type[Any]) -> list[dict[str, Any]]:
    """The MCP tools, from one throw-away instance: ``step(ListToolsAction())``."""
    mcp_types = importlib.import_module("openenv.core.env_server.mcp_types")
    env = foreign()
    try:
        observation = env.step(mcp_types.ListToolsAction())
    finally:
        env.close()
    listed: list[dict[str, Any]] = [tool.model_dump(mode="json") for tool in observation.tools]
    if not listed:
        error = (observation.metadata or {}).get("error", "no tools")
        raise UnknownEnvironmentError(f"OpenEnv environment '{foreign.__name__}' lists no MCP tools ({error})")
    return listed
