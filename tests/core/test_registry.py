"""Names: built-ins, installed packages' entry points, runtime registrations, and which one wins."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnienv.core import Environment, UnknownEnvironmentError, UsageError, load_environment, register, registered
from omnienv.core import registry as registry_module
from omnienv.envs.echo import Echo
from omnienv.envs.wordle import Wordle


class Impostor(Environment):
    """Claims a built-in's name."""

    name = "impostor"


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A real distribution on ``sys.path`` (its dist-info), whose entry points name one new
    environment and one built-in's name."""
    info = tmp_path / "omnienv_plugin_example-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: omnienv-plugin-example\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[omnienv.environments]\nplugin-echo = omnienv.envs.echo:Echo\nwordle = {__name__}:Impostor\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield


def test_an_installed_package_adds_names_but_cannot_take_a_built_in(installed: None) -> None:
    known = registered()
    assert known["plugin-echo"] == "omnienv.envs.echo:Echo"
    assert load_environment("plugin-echo") is Echo
    assert known["wordle"] == "omnienv.envs.wordle:Wordle"
    assert load_environment("wordle") is Wordle


def test_register_takes_any_name_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "_registered", {})
    register("wordle", Impostor)
    register("by-path", "omnienv.envs.echo:Echo")
    assert load_environment("wordle") is Impostor
    assert load_environment("by-path") is Echo
    assert registered()["wordle"] is Impostor


def test_an_unknown_name_suggests_the_closest_among_every_source(installed: None) -> None:
    with pytest.raises(UnknownEnvironmentError, match="Did you mean 'plugin-echo'"):
        load_environment("plugin-ech")


def test_a_built_in_loads_without_reading_installed_packages() -> None:
    # reading every installed distribution's entry points takes about 10 ms of `omnienv serve`'s start-up
    code = (
        "import sys\n"
        "from omnienv.core import load_environment\n"
        "load_environment('wordle')\n"
        "print('importlib.metadata' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", [None, 123, ["wordle"]])
def test_a_name_that_is_not_a_string_is_refused_naming_what_to_pass(name: object) -> None:
    with pytest.raises(UsageError, match="load_environment takes a name such as 'wordle'"):
        load_environment(name)  # type: ignore[arg-type]


def test_a_harbor_task_directory_may_be_a_path(tmp_path: Path) -> None:
    with pytest.raises(UnknownEnvironmentError, match="no environment named"):
        load_environment(tmp_path / "missing")


def test_a_server_url_is_named_as_one_with_the_client_to_use() -> None:
    with pytest.raises(
        UnknownEnvironmentError, match=r"'http://127\.0\.0\.1:9' is a server's URL.*WebSocketClient\(url\)"
    ):
        load_environment("http://127.0.0.1:9")
