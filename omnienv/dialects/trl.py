"""TRL: any omnienv environment as ``GRPOTrainer(environment_factory=...)``, in-process or served.

::

    from omnienv.dialects.trl import dataset, environment_factory
    trainer = GRPOTrainer(model=..., args=GRPOConfig(max_tool_calling_iterations=6),
                          train_dataset=dataset("wordle", "train"),
                          environment_factory=environment_factory("wordle"))  # or "http://host:port"

TRL (1.16) builds one instance per rollout, reuses it across batches, calls ``reset(**row)`` with
every dataset column, and offers the model every public function of the class as a tool, its
schema read from the type hints and the Google-style docstring. So the generated class has one
real method per tool and nothing else public: its helpers are ``_``-prefixed.

``get_reward()`` is the episode's reward, rubric included, or None when infrastructure failed:
TRL turns None into NaN, and a rollout no reward function scores gets a zero advantage, so a
timeout or a crashed sandbox is masked instead of trained on as a reward of 0 (docs/trl.md).

A generated class pickles as its recipe, ``environment_factory`` and its arguments, so TRL's
``AsyncGRPOTrainer``, which hands it to a spawned process, needs nothing more: the child builds the
class again (a URL is probed again there). A subclass of it pickles by reference, as any class.
"""

from __future__ import annotations

import copyreg
import inspect
import keyword
import logging
import re
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from io import BytesIO
from typing import Any, ClassVar, Literal

from omnienv.core import (
    ActionError,
    EnvironmentBase,
    EnvironmentDefinitionError,
    EpisodeLedger,
    Failure,
    Observation,
    OmniEnvError,
    StepResult,
    TaskError,
    ToolCall,
    UsageError,
    as_sync,
    load_environment,
)
from omnienv.core.content import ImageBlock

__all__ = ["TRLEnvironment", "dataset", "environment_factory"]

logger = logging.getLogger("omnienv.trl")
_URL = re.compile(r"^(https?|wss?)://")
_JSON_TYPES: dict[Any, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}
_UNION = type(int | None)
_VOID = "The environment failed; this episode is void and will not be scored."
_OVER = "The episode is over; no more actions are taken."


class _Recipe(type):
    """The metaclass of every generated class: the key that ``copyreg`` finds its reducer by.

    A generated class is made by ``type(...)`` and lives in no module, so pickle's by-reference
    lookup cannot find it; registering a reducer for all of ``type`` would change every class.
    """


def _reduce_class(cls: _Recipe) -> str | tuple[Any, ...]:
    """How a class pickles: a generated one as its recipe; a subclass by reference.

    A subclass (an author's ``class Printing(factory)``) adds behaviour that the recipe does not
    rebuild: by reference, it unpickles as itself or fails loudly, never as its base.
    """
    recipe = cls.__dict__.get("_omnienv_recipe")
    return cls.__qualname__ if recipe is None else (_rebuild, recipe)


def _rebuild(
    env: str | type[EnvironmentBase], name: str | None, options: dict[str, Any] | None
) -> type[TRLEnvironment]:
    return environment_factory(env, name=name, options=options)


copyreg.pickle(_Recipe, _reduce_class)


class TRLEnvironment(metaclass=_Recipe):
    """What every generated class shares: ``reset``, ``get_reward``, and private helpers only."""

    _open: ClassVar[Callable[[], Any]]

    def __init__(self) -> None:
        self._env = type(self)._open()
        self._ledger: EpisodeLedger | None = None

    def reset(self, **row: Any) -> str | list[dict[str, Any]]:
        """Start the row's episode (``task_id`` and ``seed`` columns); returns the prompt for TRL to append."""
        seed = row.get("seed")
        self._ledger = EpisodeLedger(seed=None if seed is None else int(seed))
        try:
            prompt = _content(self._env.reset(row.get("task_id"), self._ledger.seed))
        except TaskError:  # a task_id the environment lacks: the dataset is wrong, say so at once
            raise
        except Exception as exc:
            return self._fail("reset", exc)
        last = (row.get("prompt") or [{}])[-1]
        if isinstance(prompt, str) and isinstance(last, dict) and last.get("content"):
            prompt = "\n\n" + prompt  # TRL appends it to the user's own text: keep the two apart
        return prompt

    def get_reward(self) -> float | None:
        """The episode's reward, rubric included; None (masked by TRL) when infrastructure failed.

        An episode still running when TRL asks (its tool-call budget ran out) is ended and scored
        first, the same way in-process and served.
        """
        ledger = self._ledger
        if ledger is None:
            return None
        if not ledger.over:
            try:
                ledger.record(self._env.end(), step=False)
            except Exception as exc:
                self._fail("end", exc)
        return ledger.final_reward

    @property
    def failure(self) -> Failure | None:
        """The infrastructure failure that voided the current episode, if any."""
        return self._ledger.failure if self._ledger is not None else None

    def _call(self, name: str, arguments: dict[str, Any]) -> str | list[dict[str, Any]]:
        ledger = self._ledger
        if ledger is not None and ledger.over:
            return _VOID if ledger.failure is not None else _OVER
        try:
            result: StepResult = self._env.step(ToolCall(name, arguments))
        except (UsageError, ActionError) as exc:  # the model's mistake: answer it, the episode goes on
            return str(exc)
        except Exception as exc:  # timeouts, lost sessions, crashes: infrastructure, so mask the episode
            return self._fail(f"tool '{name}'", exc)
        if ledger is not None:
            ledger.record(result)
        if result.failure is not None:
            logger.warning("%s: episode failed: %s", type(self).__name__, result.failure.message)
        return _content(result.observation)

    def _fail(self, where: str, exc: BaseException) -> str:
        logger.warning(
            "%s: %s failed; the episode is masked: %s",
            type(self).__name__,
            where,
            exc,
            exc_info=None if isinstance(exc, OmniEnvError) else exc,
        )  # a traceback for crashes only
        if self._ledger is None:
            self._ledger = EpisodeLedger()
        self._ledger.fail(Failure.from_exception(where, exc))
        return _VOID

    def _close(self) -> None:
        """Release the environment or the server session; TRL never closes its instances itself."""
        self._env.close()


def environment_factory(
    env: str | type[EnvironmentBase], *, name: str | None = None, options: Mapping[str, Any] | None = None
) -> type[TRLEnvironment]:
    """A class for ``GRPOTrainer(environment_factory=...)`` whose public methods are ``env``'s tools.

    Args:
        env: An environment class, its registered name, ``"module:Class"``, or the URL of an
            omnienv server (``http://host:port``), which then runs the episodes.
        name: The class name; TRL logs ``get_reward`` as ``rewards/<name>``. Default: from the env.
        options: Keyword arguments for the environment's constructor or, for a URL, for
            :class:`~omnienv.client.WebSocketClient` (e.g. ``timeout``). They must pickle for the
            class to pickle: it pickles as this call, its arguments included.
    """
    kwargs = dict(options or {})
    tools: list[tuple[Any, Callable[..., Any] | None]]
    if isinstance(env, str) and _URL.match(env):
        from omnienv.client import WebSocketClient

        url = env
        with WebSocketClient(url, **kwargs) as probe:  # reads the tool list, then ends the session
            tools, env_name = [(t, None) for t in probe.tools.values()], probe.name
        opener: Callable[[], Any] = lambda: WebSocketClient(url, **kwargs)  # noqa: E731
    else:
        cls = load_environment(env) if isinstance(env, str) else env
        if not (isinstance(cls, type) and issubclass(cls, EnvironmentBase)):
            raise TypeError(
                f"environment_factory takes an environment class, its registered name or a server "
                f"URL, got {type(env).__name__}: TRL needs a fresh instance per rollout"
            )
        tools, env_name = [(t, t.function) for t in cls.tools.values()], cls.name
        opener = lambda: as_sync(cls(**kwargs))  # noqa: E731
    namespace: dict[str, Any] = {
        "_open": staticmethod(opener),
        "_omnienv_recipe": (env, name, None if options is None else dict(options)),
        "__module__": __name__,
    }
    for spec, function in tools:
        if (
            not spec.name.isidentifier()
            or keyword.iskeyword(spec.name)
            or spec.name.startswith("_")
            or hasattr(TRLEnvironment, spec.name)
        ):
            raise EnvironmentDefinitionError(
                f"tool '{spec.name}' of {env_name} cannot be a TRL method: TRL needs public Python names and "
                "reserves reset, get_reward and failure; rename the tool with @tool(name=...)"
            )
        namespace[spec.name] = _tool_method(spec.name, spec.description, spec.parameters, function)
    return type(name or _class_name(env_name), (TRLEnvironment,), namespace)


def _tool_method(
    tool: str, description: str, schema: Mapping[str, Any], function: Callable[..., Any] | None
) -> Callable[..., Any]:
    """A real method with the tool's signature and an ``Args:`` docstring, as TRL's schema reader wants."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if function is not None:  # in-process: the author's own hints, wherever they read as JSON
        hints = typing.get_type_hints(function)
        params = [
            p.replace(annotation=hints[p.name] if _plain(hints[p.name]) else _hint(properties.get(p.name, {})))
            for p in list(inspect.signature(function).parameters.values())[1:]
        ]
    else:
        required = set(schema.get("required") or ())
        params = [
            inspect.Parameter(
                key,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=_hint(prop),
                default=inspect.Parameter.empty if key in required else prop.get("default"),
            )
            for key, prop in properties.items()
        ]
    lines = [" ".join(str(properties.get(p.name, {}).get("description") or f"The {p.name}.").split()) for p in params]

    def method(self: TRLEnvironment, *positional: Any, **arguments: Any) -> Any:
        if len(positional) > len(params):
            raise TypeError(f"{tool}() takes {len(params)} arguments, got {len(positional)}")
        arguments.update(zip((p.name for p in params), positional, strict=False))
        return self._call(tool, arguments)

    method.__name__ = method.__qualname__ = tool
    args = "\n".join(f"    {p.name}: {line}" for p, line in zip(params, lines, strict=True))
    method.__doc__ = f"{description}\n\nArgs:\n{args}" if params else description
    method.__annotations__ = {p.name: p.annotation for p in params}
    receiver = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = inspect.Signature([receiver, *params])  # type: ignore[attr-defined]
    return method


def _plain(hint: Any) -> bool:
    """Whether TRL's schema reader (transformers' ``get_json_schema``) understands ``hint``."""
    if hint in (Any, type(None)) or (isinstance(hint, type) and issubclass(hint, str | int | float | Enum)):
        return True
    origin = typing.get_origin(hint)
    return origin is Literal or (
        origin in (list, tuple, dict, typing.Union, _UNION)
        and all(arg is ... or _plain(arg) for arg in typing.get_args(hint))
    )


def _hint(prop: Mapping[str, Any]) -> Any:
    """A type hint from one JSON Schema property, for tools known by their schema alone."""
    if "enum" in prop:
        return Literal[tuple(prop["enum"])]
    if "$ref" in prop or "properties" in prop:
        return dict  # a structured object: TRL's hints have no finer shape for it
    options, kind = prop.get("anyOf") or prop.get("oneOf"), prop.get("type")
    if options or isinstance(kind, list):
        members = tuple(_hint(o) for o in options) if options else tuple(_JSON_TYPES.get(k, Any) for k in kind or ())
        return typing.Union[members]  # noqa: UP007
    if kind == "array" and isinstance(prop.get("items"), dict):
        return list[_hint(prop["items"])]  # type: ignore[misc]
    return _JSON_TYPES.get(kind, Any)


def _class_name(env_name: str) -> str:
    name = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", env_name) if part)
    return name if name[:1].isalpha() else f"Env{name}"


def _content(observation: Observation) -> str | list[dict[str, Any]]:
    """Text as a string; with images, TRL's content parts (PIL images, for vision models)."""
    if not any(isinstance(block, ImageBlock) for block in observation.content):
        return observation.text
    from PIL import Image

    return [
        {"type": "image", "image": Image.open(BytesIO(block.data))}
        if isinstance(block, ImageBlock)
        else {"type": "text", "text": block.text}
        for block in observation.content
    ]


def dataset(
    env: str | type[EnvironmentBase],
    split: str = "train",
    *,
    limit: int | None = None,
    environment: str | None = None,
) -> Any:
    """The prompt dataset of one split: a ``datasets.Dataset`` with ``prompt`` and ``task_id`` columns.

    Each ``prompt`` is one empty user message: ``reset`` returns the task's prompt and TRL appends
    it there, so the model reads the environment's own words, whatever the task.

    Args:
        env: An environment class, its registered name, or the URL of an omnienv server.
        split: The split whose tasks become rows.
        limit: Keep the first ``limit`` tasks only.
        environment: Add an ``environment`` column with this name on every row: the key of this
            environment's factory in a dict ``environment_factory`` (several environments in one
            run; ``datasets.interleave_datasets`` mixes their rows).
    """
    from datasets import Dataset

    if isinstance(env, str) and _URL.match(env):
        import httpx

        base = re.sub(r"^ws", "http", env.rstrip("/")).removesuffix("/ws")
        reply = httpx.get(f"{base}/splits/{split}/tasks", params={"limit": limit or 1 << 30}, timeout=60.0)
        if reply.status_code != 200:
            raise TaskError(f"{base} cannot list split '{split}': {reply.text[:300]}")
        task_ids = [task["id"] for task in reply.json()["tasks"]]
    else:
        cls = load_environment(env) if isinstance(env, str) else env
        task_ids = [task.id for task in cls.task_index().page(split, 0, limit)]
    if not task_ids:
        raise TaskError(f"split '{split}' of {env} has no tasks to train on")
    rows = [{"prompt": [{"role": "user", "content": ""}], "task_id": i} for i in task_ids]
    if environment is not None:
        rows = [{**row, "environment": environment} for row in rows]
    return Dataset.from_list(rows)
