"""Tools known only by a JSON Schema: what every importer of a foreign environment needs.

OpenEnv's MCP tools, an ORS server's tool listing and a Verifiers environment's ``tool_defs``
describe their arguments as a JSON Schema, read when the class is made, not as a Python
signature. :func:`schema_tool` turns one into an omnienv tool: arguments are checked against the
schema itself (an unknown argument is named in the error the agent reads), optional arguments the
agent leaves out are dropped rather than sent as null, and the tool function carries a real
signature so dialects that read Python signatures (TRL, Verifiers) see typed parameters.

A foreign definition is checked when the class is made, not at the agent's first call: a tool
name model APIs reject (the checker's rule, :data:`~omnienv.core.checker.TOOL_NAME`), a schema that
is not a valid JSON Schema, or two tools of one name (:func:`add_tool`) is an
:class:`~omnienv.core.EnvironmentDefinitionError` naming the tool and the fix; left for later, it
would fail every episode's step as the environment's failure.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from omnienv.core import EnvironmentDefinitionError, ToolSpec
from omnienv.core.checker import TOOL_NAME

__all__ = ["ABSENT", "EMPTY_SCHEMA", "add_tool", "schema_tool"]

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
"""The arguments of a tool that takes none (ORS sends ``input_schema: null`` for those)."""
_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}


class _Absent:
    """An optional argument the agent left out: dropped before the call, never sent as null."""

    def __copy__(self) -> _Absent:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Absent:
        return self

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()


class _SchemaArguments(BaseModel):
    """Arguments checked against the tool's own JSON Schema, before pydantic forbids extras."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, arbitrary_types_allowed=True)
    json_validator: ClassVar[Any] = None

    @model_validator(mode="before")
    @classmethod
    def _against_schema(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and cls.json_validator is not None:
            error = jsonschema.exceptions.best_match(cls.json_validator.iter_errors(dict(data)))
            if error is not None and error.validator != "additionalProperties":
                where = ".".join(str(part) for part in error.absolute_path)
                raise ValueError(f"{where}: {error.message}" if where else error.message)
        return data


def _hint(prop: Mapping[str, Any]) -> Any:
    kind = prop.get("type")
    if kind == "array":
        return list
    if kind == "object":
        return dict
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def _checked(name: str, schema: Any) -> dict[str, Any]:
    """``schema`` as the tool's parameters, or the error naming what to fix in the definition."""
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise EnvironmentDefinitionError(
            f"tool name {name!r:.80} must match {TOOL_NAME.pattern} (model APIs reject it): rename the tool"
        )
    if schema is None:
        schema = EMPTY_SCHEMA
    if not isinstance(schema, Mapping):
        raise EnvironmentDefinitionError(f"tool '{name}': its input schema must be a JSON object, got {schema!r:.80}")
    parameters = {k: copy.deepcopy(v) for k, v in schema.items() if k not in ("title", "$schema")}
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    try:
        jsonschema.Draft202012Validator.check_schema(parameters)
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path) or "(top level)"
        raise EnvironmentDefinitionError(
            f"tool '{name}': its input schema is not a valid JSON Schema at {where}: {exc.message[:200]}; fix the "
            "tool's schema"
        ) from None
    return parameters


def add_tool(specs: dict[str, ToolSpec], spec: ToolSpec, where: str) -> None:
    """Add ``spec`` to ``specs``; a second tool of the same name would silently replace the first."""
    if spec.name in specs:
        raise EnvironmentDefinitionError(f"{where} defines two tools named '{spec.name}': rename one of them")
    specs[spec.name] = spec


def schema_tool(
    name: str,
    description: str,
    schema: Mapping[str, Any] | None,
    handler: Callable[[Any, dict[str, Any]], Any],
    *,
    is_async: bool = False,
) -> ToolSpec:
    """A tool named ``name`` whose arguments follow ``schema``; a call runs ``handler(env, arguments)``
    (a coroutine function when ``is_async``, for async environments). Raises
    :class:`EnvironmentDefinitionError` for a name or schema no model API would take."""
    parameters = _checked(name, schema)
    properties: dict[str, Any] = parameters["properties"]
    for prop in properties.values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    required = set(parameters.get("required") or ())
    fields: dict[str, Any] = {}
    renamed: list[tuple[str, str]] = []
    params: list[inspect.Parameter] = []
    for position, (key, prop) in enumerate(properties.items()):
        prop = prop if isinstance(prop, Mapping) else {}
        default = ... if key in required else copy.deepcopy(prop.get("default", ABSENT))
        field_name = f"argument_{position}"
        renamed.append((field_name, key))
        fields[field_name] = (Any, Field(default, alias=key))
        if key.isidentifier():
            params.append(
                inspect.Parameter(
                    key,
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=_hint(prop),
                    default=inspect.Parameter.empty if default is ... else prop.get("default"),
                )
            )
    model = create_model(f"Schema_{name}_arguments", __base__=_SchemaArguments, **fields)
    model.json_validator = jsonschema.Draft202012Validator(parameters)

    def call(self: Any, **arguments: Any) -> Any:
        return handler(self, {k: v for k, v in arguments.items() if v is not ABSENT})

    call.__name__ = call.__qualname__ = name
    call.__doc__ = description
    call.__annotations__ = {p.name: p.annotation for p in params}
    receiver = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    call.__signature__ = inspect.Signature([receiver, *params])  # type: ignore[attr-defined]
    spec = ToolSpec(
        name=name,
        description=description or f"Call the environment's '{name}' tool.",
        parameters=parameters,
        function=call,
        is_async=False,
        arguments_model=model,
        renamed=tuple(renamed),
    )
    return dataclasses.replace(spec, is_async=True) if is_async else spec
