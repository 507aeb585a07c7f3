"""`omnienv new` on the command line: what it writes, what it prints, how it refuses."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from omnienv.cli.main import app

runner = CliRunner(env={"COLUMNS": "200"})


def test_new_writes_the_package_and_says_what_to_run_next(tmp_path: Path) -> None:
    result = runner.invoke(app, ["new", "pixel-count", "--archetype", "vision", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "pixel-count"
    assert (root / "pixel_count" / "png.py").is_file() and (root / "Makefile").is_file()
    assert "make test" in result.output and "omnienv check pixel-count" in result.output


def test_new_defaults_to_the_multi_turn_archetype(tmp_path: Path) -> None:
    result = runner.invoke(app, ["new", "guess-code", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "multi-turn-tools" in (tmp_path / "guess-code" / "README.md").read_text()


def test_new_refuses_with_a_typed_error_and_writes_nothing(tmp_path: Path) -> None:
    bad_name = runner.invoke(app, ["new", "Bad Name", "--dir", str(tmp_path)])
    assert bad_name.exit_code == 2 and "lowercase letters" in bad_name.output
    bad_archetype = runner.invoke(app, ["new", "fine", "--archetype", "vison", "--dir", str(tmp_path)])
    assert bad_archetype.exit_code == 2 and "Did you mean 'vision'?" in bad_archetype.output
    assert not any(tmp_path.iterdir())


def test_help_lists_the_archetypes() -> None:
    result = runner.invoke(app, ["new", "--help"])
    assert result.exit_code == 0
    for archetype in ("single-turn", "multi-turn-tools", "sandboxed-code", "vision"):
        assert archetype in result.output
