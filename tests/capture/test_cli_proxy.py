"""``omnienv proxy``: the command serves the proxy and appends each finished call to ``--out``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from omnienv.capture import ModelCall
from omnienv.rollout.scripted_openai import create_app
from omnienv.server import running
from tests.capture.test_proxy import TURNS, assert_exact, chat_episode, responder

OMNIENV = str(Path(sys.executable).with_name("omnienv"))


def test_the_proxy_command_writes_each_call_as_a_json_line(tmp_path: Path) -> None:
    out = tmp_path / "calls.jsonl"
    app = create_app(responder)
    with running(app) as upstream:
        command = [OMNIENV, "proxy", "--upstream", f"{upstream}/v1", "--port", "0", "--out", str(out)]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # printed once the port is bound and listening
            assert "capture proxy for" in line, line
            base = line.split(" at ", 1)[1].split()[0]
            chat_episode(base.removesuffix("/v1") + "/episodes/cli/v1", stream=True)
            calls = [ModelCall.from_dict(json.loads(row)) for row in out.read_text().splitlines()]
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
    assert len(calls) == TURNS + 1 and all(c.episode == "cli" and c.streamed for c in calls)
    assert_exact(calls, app.state.produced)


def test_the_proxy_command_refuses_an_upstream_that_is_no_url() -> None:
    from typer.testing import CliRunner

    from omnienv.cli.main import app

    result = CliRunner().invoke(app, ["proxy", "--upstream", "localhost:8000"])
    assert result.exit_code == 2 and "must be an http(s) URL" in result.output
