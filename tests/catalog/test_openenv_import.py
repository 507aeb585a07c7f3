"""The OpenEnv importers' own parts, without OpenEnv: what the agent reads, tools from JSON Schemas,
the imports file, and how names resolve. tests/peers/test_catalog_openenv.py runs them against
OpenEnv's real package and server."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnienv.catalog import imports
from omnienv.catalog._openenv_shared import render, schema_tool
from omnienv.catalog.openenv import is_openenv_name
from omnienv.catalog.openenv_remote import is_openenv_url
from omnienv.core import InvalidArgumentsError, UnknownEnvironmentError, UsageError, load_environment

MCP_RESULT = {
    "content": [{"type": "text", "text": "hi", "annotations": None, "meta": None}],
    "structured_content": {"result": "hi"},
    "data": "hi",
    "is_error": False,
}


def test_an_mcp_observation_reads_as_the_tools_text() -> None:
    assert render({"metadata": {}, "tool_name": "echo", "result": MCP_RESULT, "error": None}) == ("hi", None)
    data_only = {**MCP_RESULT, "content": []}
    assert render({"tool_name": "echo", "result": data_only}) == ('{"result": "hi"}', None)
    error = {"error_type": "execution_error", "message": "boom"}
    assert render({"tool_name": "echo", "result": None, "error": error}) == ("", "boom")


def test_metadata_is_hidden_unless_the_observation_has_nothing_else() -> None:
    assert render({"hint": "higher", "metadata": {"answer": 7}}) == ("higher", None)
    assert render({"metadata": {"answer": 7, "message": "Make a move."}}) == ("Make a move.", None)
    assert render({"metadata": {"answer": 7}}) == ("", None)
    assert render({"board": [1, 2], "turn": "x", "metadata": {}}) == ("board: [1, 2]\nturn: x", None)


def test_a_schema_tool_checks_arguments_and_drops_the_ones_left_out() -> None:
    seen: list[dict[str, object]] = []
    schema = {
        "type": "object",
        "title": "noise",
        "properties": {
            "word": {"type": "string", "title": "Word"},
            "times": {"type": "integer", "minimum": 1},
            "model_name": {"type": "string", "default": "x"},
        },
        "required": ["word"],
    }
    spec = schema_tool("say", "Say it.", schema, lambda env, arguments: seen.append(arguments))
    assert "title" not in spec.parameters and "title" not in spec.parameters["properties"]["word"]
    spec.function(None, **spec.validate({"word": "hi"}))
    assert seen == [{"word": "hi", "model_name": "x"}]  # times left out; a schema default is sent
    with pytest.raises(InvalidArgumentsError, match="__bogus__"):
        spec.validate({"word": "hi", "__bogus__": 1})
    with pytest.raises(InvalidArgumentsError, match="minimum of 1"):
        spec.validate({"word": "hi", "times": 0})
    with pytest.raises(InvalidArgumentsError, match="word"):
        spec.validate({})
    assert [p for p in spec.function.__signature__.parameters][1:] == ["word", "times", "model_name"]  # type: ignore[attr-defined]


def test_imports_live_in_the_xdg_config_dir(config_home: Path) -> None:
    assert imports.config_path() == config_home / "omnienv" / "imports.json"
    assert imports.imported() == {}
    imports.add("mine", "openenv", "openenv+http://127.0.0.1:9")
    assert imports.imported() == {"mine": {"source": "openenv", "target": "openenv+http://127.0.0.1:9"}}
    assert imports.resolves("mine") and not imports.resolves("yours")
    assert imports.remove("mine") and not imports.remove("mine")
    imports.config_path().write_text("{not json")
    with pytest.raises(UnknownEnvironmentError, match="fix or delete it"):
        imports.imported()


@pytest.mark.parametrize("text", ['{"imports": {"x": 5}}', '{"imports": []}', "[1, 2]", '{"imports": {"x": {}}}'])
def test_an_imports_file_of_the_wrong_shape_is_named_with_the_fix(config_home: Path, text: str) -> None:
    imports.config_path().parent.mkdir(parents=True)
    imports.config_path().write_text(text)
    with pytest.raises(UnknownEnvironmentError, match=r"imports\.json: it must hold .*; fix or delete it"):
        imports.imported()


@pytest.mark.parametrize("name", ["", "bad name!", "a/b", "m:C", "-x", "é"])
def test_an_import_needs_a_name_every_command_can_take(config_home: Path, name: str) -> None:
    with pytest.raises(UsageError, match="use letters, digits, '-' and '_'"):
        imports.add(name, "openenv", "openenv+http://127.0.0.1:9")
    imports.add("Echo_game-2", "openenv", "openenv+http://127.0.0.1:9")
    assert list(imports.imported()) == ["Echo_game-2"]


def test_names_are_told_apart() -> None:
    assert is_openenv_name("openenv/pkg.server:Env") and not is_openenv_name("openenv/pkg")
    assert is_openenv_url("openenv+http://127.0.0.1:8001") and is_openenv_url("openenv+https://h/echo")
    assert not is_openenv_url("http://127.0.0.1:8001") and not is_openenv_url("openenv+ftp://h")
    with pytest.raises(UnknownEnvironmentError):
        load_environment("openenv+ftp://h")
