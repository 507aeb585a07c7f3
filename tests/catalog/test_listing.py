"""``omnienv list`` and catalog names: fast, offline, no foreign import, helpful errors.

The manifest is checked against the live Gymnasium here; the reasoning-gym and GEM sections are
checked in those libraries' own virtualenvs (tests/peers/test_catalog_*.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from omnienv.catalog import SOURCES, MissingLibraryError, entries, find, load
from omnienv.catalog.build import check_source
from omnienv.cli.main import app
from omnienv.core import UnknownEnvironmentError, load_environment

runner = CliRunner(env={"COLUMNS": "200"})
FOREIGN = ("reasoning_gym", "gem", "gymnasium", "textarena")

LISTING = f"""
import json, sys, time
import omnienv, rich, typer  # the contract and the CLI's own start-up, paid by every command
start = time.perf_counter()
from omnienv.cli.listing import catalog_rows
rows = catalog_rows()
took = time.perf_counter() - start
print(json.dumps({{"rows": len(rows), "seconds": took, "imported": [m for m in {FOREIGN!r} if m in sys.modules]}}))
"""


def test_the_catalog_lists_without_importing_any_library_in_under_a_second() -> None:
    out = subprocess.run([sys.executable, "-c", LISTING], capture_output=True, text=True, check=True)
    listed = json.loads(out.stdout)
    assert listed["imported"] == []
    assert listed["rows"] >= 150
    assert listed["seconds"] < 1.0, listed


def test_list_json_prints_every_environment_with_source_kind_tools_splits_offline() -> None:
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    names = [row["name"] for row in rows]
    assert len(names) == len(set(names)) and {"wordle", "gymnasium/FrozenLake-v1"} <= set(names)
    assert {"reasoning-gym/leg_counting", "gem/game:Sudoku-v0-easy"} <= set(names)
    for row in rows:
        assert {"name", "source", "version", "kind", "tools", "splits", "offline"} <= set(row), row
        assert row["source"] == "omnienv" or row["name"].startswith(f"{row['source']}/")
        assert row["tools"] and isinstance(row["offline"], bool)
    frozen = rows[names.index("gymnasium/FrozenLake-v1")]
    assert frozen["tools"] == ["move"] and frozen["splits"] == {"train": 1000, "test": 200}


def test_list_as_a_table_and_by_source() -> None:
    result = runner.invoke(app, ["list", "--source", "gymnasium"])
    assert result.exit_code == 0, result.output
    assert "gymnasium/Taxi-v4" in result.output and "move, pickup, dropoff" in result.output
    assert "wordle" not in result.output
    unknown = runner.invoke(app, ["list", "--source", "nosuchsource"])
    assert unknown.exit_code == 2 and "no source 'nosuchsource'" in unknown.output


def test_every_catalog_name_is_namespaced_by_a_known_source() -> None:
    for entry in entries():
        assert entry.source in SOURCES and entry.name == f"{entry.source}/{entry.target}"
        assert entry.splits and entry.tools and entry.version


def test_unknown_catalog_names_get_a_did_you_mean() -> None:
    with pytest.raises(UnknownEnvironmentError, match="Did you mean 'reasoning-gym/leg_counting'"):
        load_environment("reasoning-gym/leg_countin")
    with pytest.raises(UnknownEnvironmentError, match="Did you mean 'gymnasium/FrozenLake-v1'"):
        load_environment("FrozenLake-v1")
    result = runner.invoke(app, ["check", "gem/game:Sudoku-v0-eas"])
    assert result.exit_code == 2 and "gem/game:Sudoku-v0-easy" in result.output


def test_a_missing_library_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)  # import reasoning_gym now fails, installed or not
    load.cache_clear()
    with pytest.raises(MissingLibraryError, match=r"pip install 'omnienv\[reasoning-gym\]'") as caught:
        load_environment("reasoning-gym/leg_counting")
    assert isinstance(caught.value, UnknownEnvironmentError)
    load.cache_clear()


def test_the_manifest_matches_the_live_gymnasium() -> None:
    assert check_source("gymnasium") == []
    assert find("gymnasium/Taxi-v4").max_turns == 200
