"""The Verifiers importer's own parts, in the main virtualenv (which has no verifiers): names, a
missing library's message, and how Verifiers' chat messages read as blocks.
tests/peers/test_catalog_verifiers.py runs the importer with verifiers' real packages."""

from __future__ import annotations

import base64
import importlib.util
import sys

import pytest
from typer.testing import CliRunner

from omnienv.catalog import MissingLibraryError
from omnienv.catalog._verifiers_messages import after_last_reply, blocks
from omnienv.catalog.verifiers import is_verifiers_name
from omnienv.cli.main import app
from omnienv.core import ImageBlock, TextBlock, load_environment

runner = CliRunner(env={"COLUMNS": "200"})
no_verifiers = pytest.mark.skipif(importlib.util.find_spec("verifiers") is not None, reason="verifiers is here")


def test_names_are_told_apart() -> None:
    assert is_verifiers_name("verifiers/my_env") and is_verifiers_name("verifiers/pkg.sub_env")
    assert (
        not is_verifiers_name("verifiers/my-env")
        and not is_verifiers_name("verifiers/")
        and not is_verifiers_name("my_env")
    )


@no_verifiers
def test_without_verifiers_loading_and_importing_name_the_extra() -> None:
    with pytest.raises(MissingLibraryError, match=r"pip install 'omnienv\[verifiers\]'"):
        load_environment("verifiers/tests.catalog.vf_single")
    result = runner.invoke(app, ["import", "verifiers", "tests.catalog.vf_single", "--name", "single"])
    assert result.exit_code == 2 and "pip install 'omnienv[verifiers]'" in " ".join(result.output.split())
    assert runner.invoke(app, ["import", "verifiers", "no-such module", "--name", "x"]).exit_code == 2


def test_without_httpx_an_ors_url_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)  # importing it now fails, as where it is not installed
    monkeypatch.delitem(sys.modules, "omnienv.catalog._ors_client", raising=False)
    from omnienv.catalog.ors import server_info

    with pytest.raises(MissingLibraryError, match=r"pip install 'omnienv\[ors\]'"):
        server_info("ors+http://127.0.0.1:9")


def test_messages_read_as_blocks() -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}]},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "content": [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}]},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
    ]
    assert blocks(messages[:2]) == (TextBlock("Be brief.\n\nWhat is this?"),)
    assert after_last_reply(messages) == messages[3:]
    image, link = blocks(after_last_reply(messages))
    assert image == ImageBlock(b"\x89PNG fake", "image/png")
    assert link == TextBlock("[image: https://example.com/a.png]")
