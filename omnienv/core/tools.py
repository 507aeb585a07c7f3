"""``@tool``: turn a typed, documented method into an action the agent can call.

The JSON Schema is built once, when the environment class is created, from the signature's type
hints and the Google-style docstring, so a wrong tool definition fails at import, not
mid-episode. A step costs one type check (arguments that are already plain strings, numbers and
booleans) or one pydantic validation.

Tools whose parameters are all bare ``str``/``int``/``float``/``bool`` get their schema without
pydantic and their validator on first use: a server of such an environment (Wordle) starts
without building a pydantic model, and a program that only imports it never imports pydantic.
``tests/core/test_tools.py`` holds that schema to the one pydantic builds.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, overload

import docstring_parser

from omnienv.core.errors import EnvironmentDefinitionError, InvalidArgumentsError, UnknownToolError

if TYPE_CHECKING:
    import pydantic
    from pydantic import BaseModel

__all__ = ["ToolSpec", "collect_tools", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__omnienv_tool__"
_MISSING = object()
_PLAIN_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True, slots=True)
class Parameter:
    """One parameter of a tool, as its arguments model declares it (``...``: required)."""

    name: str
    hint: Any
    default: Any
    description: str | None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as agents see it (name, description, JSON Schema) plus its bound validator.

    ``arguments_model`` is given, or built from ``declared`` on first need (see the module's
    docstring).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    is_async: bool
    arguments_model: type[BaseModel] | None = field(default=None, compare=False)
    renamed: tuple[tuple[str, str], ...] = ()
    plain_types: tuple[tuple[str, type, bool], ...] | None = None
    """(name, type, required) when every parameter is a bare str/int/float/bool: such arguments
    that already have exactly those types need no conversion, so pydantic is skipped for them."""
    declared: tuple[Parameter, ...] = field(default=(), repr=False)
    """The parameters as the method declares them: what ``arguments_model`` is built from."""
    owner: str = ""
    """The environment class's name (it names the model)."""
    invoke: Callable[[Any, Any], Any] = field(init=False, repr=False, compare=False)
    """``invoke(env, arguments)``: the tool run on the agent's arguments, validated first; the one
    way every step calls a tool. Built per spec, so that a tool of one or no plain parameter given
    exactly that costs a type check and a plain call."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "invoke", _invoker(self))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled without what is built again on need: ``invoke`` (a closure) and a model made
        from ``declared`` (a class made at run time, which pickle cannot name)."""
        rebuilt = ("arguments_model", "renamed") if self.declared else ()
        fields = [f for f in dataclasses.fields(self) if f.init]
        return (ToolSpec, tuple(f.default if f.name in rebuilt else getattr(self, f.name) for f in fields))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check the agent's arguments; the error names each bad field and what it expected."""
        if not _is_text(arguments):
            raise InvalidArgumentsError(
                f"the arguments for tool '{self.name}' hold a lone UTF-16 surrogate (such as \\ud800), which is "
                "not text: send valid Unicode"
            )
        plain = self.plain_types
        if plain is not None and type(arguments) is dict and _already_valid(plain, arguments):
            return arguments
        if not isinstance(arguments, Mapping):
            raise InvalidArgumentsError(
                f"arguments for tool '{self.name}' must be a JSON object, got {type(arguments).__name__}"
            )
        import pydantic

        model_class = self.arguments_model or self._build_model()
        try:
            model = model_class.__pydantic_validator__.validate_python(arguments)
        except pydantic.ValidationError as exc:
            raise InvalidArgumentsError(self._explain(exc, arguments)) from None
        values: dict[str, Any] = model.__dict__  # a fresh instance: its dict is ours to hand on
        for field_name, parameter in self.renamed:
            values[parameter] = values.pop(field_name)
        return values

    def _build_model(self) -> type[BaseModel]:
        model, renamed = _arguments_model(f"{self.owner}_{self.name}_arguments", self.declared)
        object.__setattr__(self, "renamed", renamed)  # a cache: the spec means the same before and after
        object.__setattr__(self, "arguments_model", model)
        return model

    def _explain(self, exc: pydantic.ValidationError, arguments: Mapping[str, Any]) -> str:
        known = list(self.parameters.get("properties", {}))
        problems = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(part) for part in error["loc"]) or "arguments"
            problem = f"'{where}': {error['msg']}"
            if error["type"] == "extra_forbidden":
                close = difflib.get_close_matches(str(error["loc"][0]), known, n=1)
                problem += f" (did you mean '{close[0]}'?)" if close else ""
            elif error["type"] != "missing":
                problem += f" (got {error['input']!r})"
            problems.append(problem)
        expected = ", ".join(known) or "no arguments"
        return f"invalid arguments for tool '{self.name}': {'; '.join(problems)}. Expected: {expected}."


def _invoker(spec: ToolSpec) -> Callable[[Any, Any], Any]:
    function, validate = spec.function, spec.validate

    def checked(env: Any, arguments: Any) -> Any:
        return function(env, **validate(arguments))

    plain = spec.plain_types
    if plain == ():

        def without_arguments(env: Any, arguments: Any) -> Any:
            return function(env) if type(arguments) is dict and not arguments else checked(env, arguments)

        return without_arguments
    if plain is None or len(plain) != 1 or not _second_is_positional(function):
        return checked
    ((name, kind, _),) = plain

    def with_one_argument(env: Any, arguments: Any) -> Any:
        # a missing argument reads as None, which is never of a plain type; text that is not ASCII
        # is checked for lone surrogates first
        if type(arguments) is dict and len(arguments) == 1 and type(value := arguments.get(name)) is kind:
            if type(value) is not str or value.isascii():
                return function(env, value)
        return checked(env, arguments)

    return with_one_argument


def _is_text(value: Any) -> bool:
    """Whether every string in the agent's arguments is Unicode text a tool can encode.

    Python's ``json`` (and so a framework parsing a model's tool call) reads ``"\\ud800"`` as a lone
    surrogate, which no UTF-8 encoder accepts: a tool that writes the string to a shell, a kernel
    or a display would crash, and the crash would void the episode, a way for the agent to erase
    a losing one. Refused here, it is an error the agent reads instead."""
    if type(value) is str:
        if value.isascii():
            return True
        try:
            value.encode()
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, Mapping):
        return all(_is_text(key) and _is_text(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return all(_is_text(item) for item in value)
    return True


def _second_is_positional(function: Callable[..., Any]) -> bool:
    """Whether the parameter after ``self`` may be passed by position (not keyword-only)."""
    parameters = list(inspect.signature(function).parameters.values())
    return len(parameters) == 2 and parameters[1].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD


def _already_valid(plain: tuple[tuple[str, type, bool], ...], arguments: dict[str, Any]) -> bool:
    matched = 0
    for name, kind, required in plain:
        value = arguments.get(name, _MISSING)
        if value is _MISSING:
            if required:
                return False
        elif type(value) is not kind:
            return False
        else:
            matched += 1
    return matched == len(arguments)


@overload
def tool(function: F, /) -> F: ...
@overload
def tool(*, name: str | None = None) -> Callable[[F], F]: ...
def tool(function: F | None = None, /, *, name: str | None = None) -> F | Callable[[F], F]:
    """Mark a method as a tool. Its docstring's first paragraph is the description the model reads."""

    def mark(func: F) -> F:
        if isinstance(func, str):  # @tool("guess"): the name given where the method goes
            raise EnvironmentDefinitionError(f"@tool takes the tool's name as a keyword: write @tool(name={func!r})")
        if not callable(func) and not isinstance(func, classmethod):  # a classmethod is refused naming the fix
            raise EnvironmentDefinitionError(f"@tool marks a method, got {type(func).__name__} {func!r:.80}")
        setattr(func, _MARK, name or func.__name__)
        return func

    return mark(function) if function is not None else mark


def collect_tools(cls: type) -> dict[str, ToolSpec]:
    """Every ``@tool`` of ``cls`` and its bases.

    A subclass that overrides a tool method keeps it a tool (no need to repeat ``@tool``), and
    inherits its docstring when it has none.
    """
    found: dict[str, tuple[Callable[..., Any], str]] = {}
    tool_of_attribute: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        named_here: dict[str, str] = {}
        for attribute_name, attribute in vars(klass).items():
            if isinstance(attribute, staticmethod | classmethod) and (
                getattr(attribute, _MARK, None) or getattr(attribute.__func__, _MARK, None)
            ):
                kind = type(attribute).__name__
                raise EnvironmentDefinitionError(
                    f"tool {klass.__name__}.{attribute_name} is a {kind}: a tool acts on its episode, so it "
                    f"is a plain method taking self; remove @{kind}"
                )
            tool_name = getattr(attribute, _MARK, None) or tool_of_attribute.get(attribute_name)
            if tool_name is None or not callable(attribute):
                continue
            if named_here.setdefault(tool_name, attribute_name) != attribute_name:
                raise EnvironmentDefinitionError(
                    f"{klass.__name__}.{named_here[tool_name]} and .{attribute_name} are both the tool '{tool_name}': "
                    "give each tool its own name"
                )
            inherited_doc = found[tool_name][1] if tool_name in found else ""
            found[tool_name] = (attribute, inspect.getdoc(attribute) or inherited_doc)
            tool_of_attribute[attribute_name] = tool_name
    return {name: _build_spec(cls, name, func, doc) for name, (func, doc) in found.items()}


def unknown_tool(name: str, tools: Mapping[str, ToolSpec]) -> UnknownToolError:
    close = difflib.get_close_matches(name, list(tools), n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return UnknownToolError(f"unknown tool '{name}'.{hint} Available tools: {', '.join(tools)}.")


def _build_spec(cls: type, tool_name: str, func: Callable[..., Any], docstring: str) -> ToolSpec:
    where = f"{cls.__name__}.{func.__name__}"
    doc = docstring_parser.parse(docstring)
    description = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
    if not description:
        raise EnvironmentDefinitionError(
            f"tool {where} needs a docstring: its first line is the description the model reads"
        )
    arg_docs = {param.arg_name: param.description for param in doc.params}
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except NameError as exc:
        raise EnvironmentDefinitionError(f"tool {where}: cannot resolve a type hint ({exc})") from exc
    declared: list[Parameter] = []
    for position, param in enumerate(inspect.signature(func).parameters.values()):
        if position == 0:
            continue  # self
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise EnvironmentDefinitionError(f"tool {where}: parameter '{param.name}' must be a plain named parameter")
        if param.name not in hints:
            raise EnvironmentDefinitionError(
                f"tool {where}: parameter '{param.name}' needs a type hint, e.g. '{param.name}: str'"
            )
        default = ... if param.default is param.empty else param.default
        declared.append(Parameter(param.name, hints[param.name], default, arg_docs.get(param.name)))
    strays = [name for name in arg_docs if name not in {parameter.name for parameter in declared}]
    if strays:  # a typo there leaves the real parameter undescribed, and nothing says so
        names = ", ".join(f"'{parameter.name}'" for parameter in declared) or "none"
        raise EnvironmentDefinitionError(
            f"tool {where}: its docstring's Args: describes '{strays[0]}', which is no parameter of it "
            f"(its parameters: {names}); name the parameter it means, or remove the entry"
        )
    spec = ToolSpec(
        name=tool_name,
        description=description,
        parameters={},
        function=func,
        is_async=inspect.iscoroutinefunction(func),
        declared=tuple(declared),
        owner=cls.__name__,
    )
    plain = None
    if all(parameter.hint in _PLAIN_JSON_TYPES for parameter in declared):
        plain = tuple((parameter.name, parameter.hint, parameter.default is ...) for parameter in declared)
        if all(_is_plain(parameter) for parameter in declared):
            return dataclasses.replace(spec, parameters=_plain_schema(declared), plain_types=plain)
    import pydantic

    _check_defaults(where, declared)
    try:
        model, renamed = _arguments_model(f"{cls.__name__}_{tool_name}_arguments", spec.declared)
        schema = model.model_json_schema(by_alias=True)
    except (pydantic.PydanticUserError, NameError) as exc:  # NameError: pydantic refuses a leading underscore
        raise EnvironmentDefinitionError(f"tool {where}: {exc}") from exc
    return dataclasses.replace(
        spec, parameters=_clean(schema), arguments_model=model, renamed=renamed, plain_types=plain
    )


def _check_defaults(where: str, declared: typing.Sequence[Parameter]) -> None:
    """Refuse a default its own type hint refuses: the schema would offer the model a default it
    could not send itself, and the tool would get it unchecked whenever the argument is left out."""
    import pydantic

    for parameter in declared:
        if parameter.default is ...:
            continue
        try:
            pydantic.TypeAdapter(parameter.hint).validate_python(parameter.default, strict=True)
        except pydantic.ValidationError:
            hint = getattr(parameter.hint, "__name__", None) or str(parameter.hint)
            raise EnvironmentDefinitionError(
                f"tool {where}: the default of '{parameter.name}' is {parameter.default!r:.60}, not of type "
                f"{hint}; fix the default, or hint '{parameter.name}: {hint} | None' for an optional argument"
            ) from None
        except pydantic.PydanticUserError:  # the hint itself is refused, with its own message, below
            return


def _is_plain(parameter: Parameter) -> bool:
    """A schema pydantic would accept and write as :func:`_plain_schema` does: a name pydantic
    takes, a default (if any) of exactly the hinted type, and finite."""
    if parameter.name.startswith("_"):
        return False
    default = parameter.default
    if default is ...:
        return True
    return type(default) is parameter.hint and not (type(default) is float and not math.isfinite(default))


def _plain_schema(declared: typing.Sequence[Parameter]) -> dict[str, Any]:
    """The JSON Schema pydantic gives such parameters (keys sorted as pydantic sorts them)."""
    properties: dict[str, Any] = {}
    for parameter in declared:
        prop: dict[str, Any] = {}
        if parameter.default is not ...:
            prop["default"] = parameter.default
        if parameter.description is not None:
            prop["description"] = parameter.description
        prop["type"] = _PLAIN_JSON_TYPES[parameter.hint]
        properties[parameter.name] = prop
    schema: dict[str, Any] = {"additionalProperties": False, "properties": properties}
    required = [parameter.name for parameter in declared if parameter.default is ...]
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema


def _arguments_model(
    model_name: str, declared: typing.Sequence[Parameter]
) -> tuple[type[BaseModel], tuple[tuple[str, str], ...]]:
    """The pydantic model that validates a tool's arguments, and the fields renamed for it (a
    parameter named like a ``BaseModel`` attribute gets a trailing underscore)."""
    from pydantic import BaseModel, ConfigDict, Field, create_model

    fields: dict[str, Any] = {}
    renamed: list[tuple[str, str]] = []
    for parameter in declared:
        field_name = parameter.name
        if field_name.startswith("model_") or hasattr(BaseModel, field_name):
            field_name = f"{field_name}_"
            renamed.append((field_name, parameter.name))
        fields[field_name] = (
            parameter.hint,
            Field(parameter.default, alias=parameter.name, description=parameter.description),
        )
    model = create_model(model_name, __config__=ConfigDict(extra="forbid", populate_by_name=False), **fields)
    return model, tuple(renamed)


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles: noise in every prompt that lists the tools."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema
