from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any, Literal

import pytest

from omnienv.core import (
    AsyncEnvironment,
    Environment,
    EnvironmentDefinitionError,
    InvalidArgumentsError,
    tool,
)


class Calculator(Environment):
    """Adds numbers."""

    @tool
    def add(self, a: int, b: int = 2, mode: Literal["exact", "round"] = "exact") -> str:
        """Add two numbers.

        Longer explanation for the model.

        Args:
            a: The first number.
            b: The second number.
            mode: How to present the sum.
        """
        return str(a + b)

    @tool(name="json")
    def json_tool(self, copy: str) -> str:
        """Parameters may shadow pydantic's own names.

        Args:
            copy: Any text.
        """
        return copy


def test_schema_comes_from_hints_and_docstring() -> None:
    spec = Calculator.tools["add"]
    assert spec.description == "Add two numbers.\n\nLonger explanation for the model."
    assert spec.parameters == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {"type": "integer", "description": "The second number.", "default": 2},
            "mode": {
                "type": "string",
                "enum": ["exact", "round"],
                "description": "How to present the sum.",
                "default": "exact",
            },
        },
        "required": ["a"],
    }


def test_validation_fills_defaults_and_coerces_json_values() -> None:
    assert Calculator.tools["add"].validate({"a": "3"}) == {"a": 3, "b": 2, "mode": "exact"}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "'a': Field required"),
        ({"a": "three"}, "'a': Input should be a valid integer"),
        ({"a": 1, "bb": 2}, "did you mean 'b'?"),
        ({"a": 1, "mode": "fuzzy"}, "'mode': Input should be 'exact' or 'round'"),
        (["a"], "must be a JSON object"),
    ],
)
def test_invalid_arguments_name_the_field(arguments: object, expected: str) -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        Calculator.tools["add"].validate(arguments)  # type: ignore[arg-type]
    assert expected in caught.value.message
    assert "Expected: a, b, mode" in caught.value.message or "JSON object" in caught.value.message


def test_renamed_tool_and_shadowing_parameter() -> None:
    spec = Calculator.tools["json"]
    assert list(spec.parameters["properties"]) == ["copy"]
    assert spec.validate({"copy": "x"}) == {"copy": "x"}


def test_missing_type_hint_fails_at_class_creation() -> None:
    with pytest.raises(EnvironmentDefinitionError, match="'word' needs a type hint"):

        class Bad(Environment):
            @tool
            def guess(self, word) -> str:  # type: ignore[no-untyped-def]
                """Guess."""
                return word


def test_missing_docstring_fails_at_class_creation() -> None:
    with pytest.raises(EnvironmentDefinitionError, match="needs a docstring"):

        class Bad(Environment):
            @tool
            def guess(self, word: str) -> str:
                return word


def test_async_tool_needs_async_environment() -> None:
    with pytest.raises(EnvironmentDefinitionError, match="subclass AsyncEnvironment"):

        class Bad(Environment):
            @tool
            async def guess(self, word: str) -> str:
                """Guess."""
                return word

    class Good(AsyncEnvironment):
        @tool
        async def guess(self, word: str) -> str:
            """Guess."""
            return word

    assert Good.tools["guess"].is_async


def test_subclass_inherits_and_overrides_tools() -> None:
    class Child(Calculator):
        @tool
        def add(self, a: int) -> str:
            """Add nothing.

            Args:
                a: A number.
            """
            return str(a)

    assert set(Child.tools) == {"add", "json"}
    assert list(Child.tools["add"].parameters["properties"]) == ["a"]


class Plain(Environment):
    """Tools whose parameters are all bare str/int/float/bool."""

    @tool
    def tune(self, word: str, count: int = 3, scale: float = 0.5, loud: bool = True, note: str = "hi") -> str:
        """Every plain type, with and without defaults and docs.

        Args:
            word: A word.
            count: How many.
            loud: Shout it.
        """
        return f"{word} {count} {scale} {loud} {note}"

    @tool
    def nothing(self) -> str:
        """No arguments at all."""
        return "ok"

    @tool
    def shadow(self, copy: str, model_name: str = "m", schema: int = 1) -> str:
        """Names pydantic's models use themselves.

        Args:
            copy: Any text.
        """
        return f"{copy} {model_name} {schema}"


class NotQuitePlain(Environment):
    """Plain hints whose defaults pydantic must describe itself."""

    @tool
    def odd(self, n: float = 1, x: float = float("inf")) -> str:
        """A default of another type than the hint (an int for a float), and a float JSON cannot hold.

        Args:
            n: A number.
        """
        return f"{n} {x}"


def _pydantic_schema(spec: Any) -> str:
    from omnienv.core.tools import _arguments_model, _clean

    model, _ = _arguments_model("check", spec.declared)
    return json.dumps(_clean(model.model_json_schema(by_alias=True)))


def _builtin_tools() -> list[Any]:
    from omnienv.core.registry import _BUILTIN, load_environment

    return [spec for name in _BUILTIN for spec in load_environment(name).tools.values()]


@pytest.mark.parametrize("spec", [*Plain.tools.values(), *NotQuitePlain.tools.values()], ids=lambda s: s.name)
def test_a_schema_built_without_pydantic_is_the_one_pydantic_builds(spec: Any) -> None:
    assert json.dumps(spec.parameters) == _pydantic_schema(spec)  # the same keys, values and order


def test_every_reference_environment_describes_its_tools_as_pydantic_would() -> None:
    specs = [spec for spec in _builtin_tools() if spec.declared]
    assert {spec.name for spec in specs} >= {"guess", "add_and_execute_code_cell", "left_click", "run", "open_door"}
    for spec in specs:
        assert json.dumps(spec.parameters) == _pydantic_schema(spec), spec.name


def test_plain_tools_validate_without_a_model_until_one_is_needed() -> None:
    spec = Plain.tools["shadow"]
    assert spec.plain_types is not None and Plain.tools["tune"].arguments_model is None
    assert spec.validate({"copy": "x"}) == {"copy": "x"}  # exact types: no model
    assert spec.arguments_model is None
    assert spec.validate({"copy": "x", "schema": "7"}) == {"copy": "x", "model_name": "m", "schema": 7}
    assert spec.arguments_model is not None  # built on first need, with its renamed fields
    with pytest.raises(InvalidArgumentsError, match="did you mean 'copy'"):
        spec.validate({"cpy": "x"})
    with pytest.raises(InvalidArgumentsError, match="'count': Input should be a valid integer"):
        Plain.tools["tune"].validate({"word": "w", "count": "many"})
    assert NotQuitePlain.tools["odd"].arguments_model is not None  # built at class creation


class Shapes(Environment):
    """A tool of each shape ``invoke`` has a path for."""

    @tool
    def one(self, word: str) -> str:
        """One plain parameter.

        Args:
            word: A word.
        """
        return f"one {word!r}"

    @tool
    def keyword_only(self, *, word: str) -> str:
        """One plain parameter that must be named.

        Args:
            word: A word.
        """
        return f"keyword_only {word!r}"

    @tool
    def optional(self, count: int = 3) -> str:
        """One plain parameter with a default.

        Args:
            count: How many.
        """
        return f"optional {count!r}"


@pytest.mark.parametrize(
    ("tool_name", "arguments", "expected"),
    [
        ("one", {"word": "w"}, "one 'w'"),
        ("keyword_only", {"word": "w"}, "keyword_only 'w'"),
        ("optional", {"count": 5}, "optional 5"),
        ("optional", {}, "optional 3"),  # the default, through validation
        ("optional", {"count": "5"}, "optional 5"),  # coerced, as validate() does
        ("nothing", {}, "ok"),
        ("tune", {"word": "w", "count": 1}, "w 1 0.5 True hi"),
    ],
)
def test_invoke_runs_the_tool_on_its_validated_arguments(tool_name: str, arguments: Any, expected: str) -> None:
    env_class = Plain if tool_name in Plain.tools else Shapes
    assert env_class.tools[tool_name].invoke(env_class(), arguments) == expected


@pytest.mark.parametrize(
    ("tool_name", "arguments", "expected"),
    [
        ("one", {"word": 5}, "'word': Input should be a valid string"),
        ("one", {"wrd": "w"}, "did you mean 'word'?"),
        ("one", {"word": "w", "extra": 1}, "'extra': Extra inputs are not permitted"),
        ("one", ["w"], "must be a JSON object"),
        ("nothing", {"word": "w"}, "'word': Extra inputs are not permitted"),
        ("nothing", [], "must be a JSON object"),
        ("one", {"word": "caf\u00e9 \ud800"}, "lone UTF-16 surrogate"),
        ("tune", {"word": "\udc80", "count": 1}, "lone UTF-16 surrogate"),
    ],
)
def test_invoke_refuses_what_validate_refuses(tool_name: str, arguments: Any, expected: str) -> None:
    env_class = Plain if tool_name in Plain.tools else Shapes
    with pytest.raises(InvalidArgumentsError) as caught:
        env_class.tools[tool_name].invoke(env_class(), arguments)
    assert expected in caught.value.message


def test_a_lone_surrogate_is_the_agents_error_not_a_crash_that_voids_the_episode() -> None:
    """Python's json reads ``"\\ud800"`` as a lone surrogate, which no tool can encode: anywhere in the
    arguments it is refused as invalid arguments, the episode goes on, and no failure is flagged."""
    from omnienv.core import ToolCall

    class Writes(Environment):
        @tool
        def write(self, text: str) -> str:
            """Write text, as a shell or a kernel would.

            Args:
                text: The text.
            """
            return text.encode().decode()

        @tool
        def write_all(self, lines: list[str], tags: dict[str, str]) -> str:
            """Write lines.

            Args:
                lines: The lines.
                tags: Named tags.
            """
            return "\n".join(lines).encode().decode()

    env = Writes()
    env.reset()
    for call in (
        ToolCall("write", json.loads('{"text": "caf\\u00e9 \\ud800"}')),
        ToolCall("write_all", {"lines": ["ok", "\udfff"], "tags": {}}),
        ToolCall("write_all", {"lines": [], "tags": {"\ud800": "key"}}),
    ):
        result = env.step(call)
        assert result.failure is None and result.observation.is_error and not result.over, result
        assert "lone UTF-16 surrogate" in result.observation.text
    assert env.step(ToolCall("write", {"text": "café ✓"})).observation.text == "café ✓"
    assert env.failure is None


def test_a_spec_survives_pickling_with_its_invoke() -> None:
    import pickle

    Shapes.tools["one"].validate({"word": b"w"})  # builds its model, a class pickle cannot name
    spec = pickle.loads(pickle.dumps(Shapes.tools["one"]))
    assert spec == Shapes.tools["one"] and spec.invoke(Shapes(), {"word": "w"}) == "one 'w'"
    assert spec.invoke(Shapes(), {"word": b"w"}) == "one 'w'"  # the model built again


def test_a_parameter_pydantic_refuses_fails_at_class_creation() -> None:
    with pytest.raises(EnvironmentDefinitionError, match="leading underscore"):

        class Bad(Environment):
            @tool
            def guess(self, _word: str) -> str:
                """Guess."""
                return _word


def test_a_program_that_plays_wordle_never_imports_pydantic() -> None:
    program = (
        "import sys\n"
        "from omnienv.core import ToolCall\n"
        "from omnienv.envs.wordle import Wordle\n"
        "env = Wordle()\n"
        "env.reset(seed=1)\n"
        "print(env.step(ToolCall('guess', {'word': 'crane'})).observation.text)\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "CRANE" in done.stdout


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        ("self, word: int = 'crane'", "the default of 'word' is 'crane', not of type int"),
        ("self, word: str = None", "hint 'word: str | None' for an optional argument"),
        ("self, word: list[int] = ('a',)", "the default of 'word'"),
    ],
)
def test_a_default_its_own_hint_refuses_fails_at_class_creation(signature: str, expected: str) -> None:
    source = f"class Bad(Environment):\n    @tool\n    def guess({signature}) -> str:\n        '''Guess.'''\n"
    with pytest.raises(EnvironmentDefinitionError, match=re.escape(expected)):
        exec(source + "        return str(word)\n", {"Environment": Environment, "tool": tool})


def test_two_methods_claiming_one_tool_name_fail_at_class_creation() -> None:
    with pytest.raises(EnvironmentDefinitionError, match=re.escape("Bad.first and .second are both the tool 'go'")):

        class Bad(Environment):
            @tool(name="go")
            def first(self) -> str:
                """Go one way."""
                return "first"

            @tool(name="go")
            def second(self) -> str:
                """Go the other way."""
                return "second"


@pytest.mark.parametrize(
    ("decorators", "kind"),
    [
        ("@tool\n    @staticmethod", "staticmethod"),  # its first parameter was read as self and lost
        ("@staticmethod\n    @tool", "staticmethod"),  # the tool silently vanished
        ("@classmethod\n    @tool", "classmethod"),
        ("@tool\n    @classmethod", "classmethod"),
    ],
)
def test_a_static_or_class_method_tool_fails_at_class_creation_naming_the_fix(decorators: str, kind: str) -> None:
    first = "cls, " if kind == "classmethod" else ""
    source = (
        f"class Bad(Environment):\n    {decorators}\n    def add({first}a: int, b: int) -> str:\n"
        "        '''Add.'''\n        return str(a + b)\n"
    )
    with pytest.raises(EnvironmentDefinitionError, match=re.escape(f"Bad.add is a {kind}") + ".*remove @" + kind):
        exec(source, {"Environment": Environment, "tool": tool})


def test_an_args_entry_naming_no_parameter_fails_at_class_creation() -> None:
    """A typo there left the real parameter with no description the model reads, silently."""
    with pytest.raises(EnvironmentDefinitionError, match=re.escape("Args: describes 'wrod', which is no parameter")):

        class Bad(Environment):
            @tool
            def guess(self, word: str) -> str:
                """Guess.

                Args:
                    wrod: A five-letter word.
                """
                return word


@pytest.mark.parametrize(
    ("argument", "said"),
    [("guess", "@tool takes the tool's name as a keyword: write @tool(name='guess')"), (5, "@tool marks a method")],
)
def test_tool_given_what_is_not_a_method_names_the_fix(argument: object, said: str) -> None:
    with pytest.raises(EnvironmentDefinitionError, match=re.escape(said)):
        tool(argument)  # type: ignore[call-overload]
