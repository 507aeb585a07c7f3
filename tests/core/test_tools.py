from __future__ import annotations

from typing import Literal

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
