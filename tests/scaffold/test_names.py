"""Names are checked before anything is written, with errors that say what to pick instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnienv.scaffold import ScaffoldError, create_environment
from omnienv.scaffold.names import MAX_LENGTH, scaffold_names


def test_one_name_gives_package_class_and_title() -> None:
    names = scaffold_names("count-letters")
    assert (names.name, names.package, names.class_name, names.title) == (
        "count-letters",
        "count_letters",
        "CountLetters",
        "Count Letters",
    )
    assert scaffold_names("maze2d_v2").class_name == "Maze2dV2"


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("Count", "lowercase letters"),
        ("2048", "starting with a letter"),
        ("a--b", "single '-'"),
        ("trailing-", "single '-'"),
        ("x" * (MAX_LENGTH + 1), "shorter name"),
        ("class", "Python keyword"),
        ("json", "would shadow"),
        ("pytest", "would shadow"),
        ("omnienv", "would shadow"),
        ("task", "would clash"),
        ("code_game", "would clash"),
    ],
)
def test_unusable_names_are_refused_with_the_fix(name: str, fix: str) -> None:
    with pytest.raises(ScaffoldError, match=fix):
        scaffold_names(name)


def test_taken_environment_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="already exists"):
        create_environment("wordle", directory=tmp_path)
    assert not any(tmp_path.iterdir())


def test_unknown_archetype_suggests_the_closest(tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="Did you mean 'single-turn'"):
        create_environment("quiz", "single_turn", tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_folder_with_files_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "quiz").mkdir()
    (tmp_path / "quiz" / "notes.txt").write_text("mine")
    with pytest.raises(ScaffoldError, match="not empty"):
        create_environment("quiz", "single-turn", tmp_path)
    assert (tmp_path / "quiz" / "notes.txt").read_text() == "mine"
    assert [p.name for p in (tmp_path / "quiz").iterdir()] == ["notes.txt"]


def test_an_empty_folder_is_used(tmp_path: Path) -> None:
    (tmp_path / "quiz").mkdir()
    created = create_environment("quiz", "single-turn", tmp_path)
    assert (created.root / "quiz" / "env.py").is_file()


def test_an_unwritable_folder_is_a_scaffold_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ScaffoldError, match="cannot write"):
        create_environment("quiz", "single-turn", blocker)
