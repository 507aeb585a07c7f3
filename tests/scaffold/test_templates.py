"""Every archetype renders to a complete, importable, lint-clean package, whatever the name."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from omnienv.scaffold import ARCHETYPES, CreatedEnvironment
from omnienv.scaffold.render import render_archetype

LONGEST = "x-abcdefghijklmnopqrstuvwxyz0123"  # 32 characters: the most that names allow
COMMON_FILES = {
    "pyproject.toml",
    "README.md",
    "Makefile",
    ".gitignore",
    "tests/test_contract.py",
    "tests/test_env.py",
    "{package}/__init__.py",
    "{package}/env.py",
    "{package}/policy.py",
}


def ruff() -> list[str]:
    return [str(Path(sys.executable).with_name("ruff"))]


@pytest.mark.parametrize("archetype", ARCHETYPES)
def test_every_template_renders_completely(archetype: str) -> None:
    variables = {
        key: f"<{key}>"
        for key in ("name", "class_name", "title", "archetype", "archetype_summary", "omnienv_requirement", "init_all")
    }
    files = render_archetype(archetype, {**variables, "package": "pkg"})
    names = {str(path) for path in files}
    assert {f.format(package="pkg") for f in COMMON_FILES} <= names
    for path, text in files.items():
        assert "%%" not in text, f"{path} has an unfilled placeholder"
        assert not path.name.endswith(".tmpl")


@pytest.mark.parametrize("archetype", ARCHETYPES)
def test_generated_package_is_lint_clean_with_the_longest_name(
    archetype: str, generated: Callable[[str, str], CreatedEnvironment]
) -> None:
    created = generated(LONGEST, archetype)
    for path in created.files:
        if path.suffix == ".py":
            compile(path.read_text(), str(path), "exec")
    result = subprocess.run(
        [*ruff(), "check", "--no-cache", "."], cwd=created.root, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("archetype", ARCHETYPES)
def test_pyproject_declares_the_entry_point_omnienv_finds(
    archetype: str, generated: Callable[[str, str], CreatedEnvironment]
) -> None:
    created = generated("my-env", archetype)
    project = tomllib.loads((created.root / "pyproject.toml").read_text())["project"]
    assert project["name"] == "my-env"
    assert project["entry-points"]["omnienv.environments"] == {"my-env": "my_env.env:MyEnv"}
    assert any(dep.startswith("omnienv") for dep in project["dependencies"])
    assert created.target == "my_env.env:MyEnv"
    makefile = (created.root / "Makefile").read_text()
    assert "\ntest:" in makefile and "my_env.env:MyEnv" in makefile
