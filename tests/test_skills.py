"""The agent skills in skills/ follow the open SKILL.md specification (agentskills.io).

Front matter: YAML between two ``---`` lines at the very top, only the spec's fields; ``name``
1-64 characters of lowercase letters, digits and single hyphens, not at either end, equal to the
folder's name; ``description`` 1-1024 characters; ``compatibility`` at most 500; ``metadata`` a
map of strings; ``allowed-tools`` a string or a list of strings. The body is kept under the
spec's 500 lines, and what it links and the ``omnienv`` commands it runs must exist.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from omnienv.cli.main import app
from omnienv.scaffold import ARCHETYPES

SKILLS = Path(__file__).resolve().parents[1] / "skills"
ALLOWED_FIELDS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SKILL_DIRS = sorted(path.parent for path in SKILLS.glob("*/SKILL.md"))


def split_skill(text: str) -> tuple[dict[str, Any], str]:
    match = re.match(r"\A---\n(.*?)\n---\n(.*)\Z", text, re.DOTALL)
    assert match, "SKILL.md must start with YAML front matter between two '---' lines"
    front = yaml.safe_load(match.group(1))
    assert isinstance(front, dict), "the front matter must be a YAML mapping"
    return front, match.group(2)


def spec_errors(front: dict[str, Any], folder: str) -> list[str]:
    errors = [f"unexpected field '{key}'" for key in sorted(set(front) - ALLOWED_FIELDS)]
    name = front.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 64 or not NAME.match(name):
        errors.append(f"bad name {name!r}: 1-64 lowercase letters, digits, single inner hyphens")
    elif name != folder:
        errors.append(f"name '{name}' must equal the folder name '{folder}'")
    description = front.get("description")
    if not isinstance(description, str) or not description.strip() or len(description) > 1024:
        errors.append("description must be a non-empty string of at most 1024 characters")
    compatibility = front.get("compatibility")
    if compatibility is not None and (not isinstance(compatibility, str) or not 1 <= len(compatibility) <= 500):
        errors.append("compatibility must be a string of 1-500 characters")
    metadata = front.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        errors.append("metadata must map strings to strings")
    tools = front.get("allowed-tools")
    if tools is not None and not (
        isinstance(tools, str) or (isinstance(tools, list) and all(isinstance(t, str) for t in tools))
    ):
        errors.append("allowed-tools must be a string or a list of strings")
    return errors


def test_the_two_skills_exist() -> None:
    assert {path.name for path in SKILL_DIRS} >= {"omnienv-new-environment", "omnienv-port-environment"}


@pytest.mark.parametrize("folder", SKILL_DIRS, ids=lambda path: path.name)
def test_skill_front_matter_follows_the_spec(folder: Path) -> None:
    front, body = split_skill((folder / "SKILL.md").read_text(encoding="utf-8"))
    assert spec_errors(front, folder.name) == []
    assert body.strip() and len(body.splitlines()) < 500


@pytest.mark.parametrize("folder", SKILL_DIRS, ids=lambda path: path.name)
def test_skill_links_and_commands_exist(folder: Path) -> None:
    _, body = split_skill((folder / "SKILL.md").read_text(encoding="utf-8"))
    for target in re.findall(r"\]\(([^)#]+)\)", body):
        if "://" not in target:
            assert (folder / target).is_file(), f"{folder.name} links to missing {target}"
    commands = {command.name or command.callback.__name__ for command in app.registered_commands}
    code = re.findall(r"```[a-z]*\n(.*?)```", body, re.DOTALL) + re.findall(r"`([^`\n]+)`", body)
    used = {command for snippet in code for command in re.findall(r"(?:^|[\s;&(])omnienv ([a-z]+)", snippet)}
    assert used, "the skill shows no omnienv command"
    assert used <= commands, f"{folder.name} runs omnienv commands that do not exist: {used - commands}"
    for archetype in re.findall(r"--archetype ([a-z-]+)", body):
        assert archetype in ARCHETYPES or archetype == "ARCHETYPE", archetype


@pytest.mark.parametrize(
    ("front", "problem"),
    [
        ({"name": "Bad-Name", "description": "x"}, "bad name"),
        ({"name": "a--b", "description": "x"}, "bad name"),
        ({"name": "-a", "description": "x"}, "bad name"),
        ({"name": "other", "description": "x"}, "folder name"),
        ({"name": "skill", "description": "x" * 1025}, "description"),
        ({"name": "skill", "description": ""}, "description"),
        ({"name": "skill", "description": "x", "version": "1"}, "unexpected field"),
        ({"name": "skill", "description": "x", "metadata": {"v": 1}}, "metadata"),
        ({"name": "skill", "description": "x", "compatibility": "x" * 501}, "compatibility"),
    ],
)
def test_the_validator_rejects_what_the_spec_forbids(front: dict[str, Any], problem: str) -> None:
    assert any(problem in error for error in spec_errors(front, "skill"))
