"""`/api/summary` over a real server, the landing page per kind of file, and the viewer's guard:
foreign Host and Origin headers refused, a content security policy on every page."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from omnienv.cli.main import app as main_app
from omnienv.server import running
from omnienv.ui.viewer import CONTENT_SECURITY_POLICY, create_viewer_app
from tests.ui.viewing import write_eval_file, write_train_log


@pytest.fixture(scope="module")
def eval_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_eval_file(tmp_path_factory.mktemp("api") / "eval.jsonl")


def test_summary_api_and_landing_page(eval_file: Path, tmp_path: Path) -> None:
    app = create_viewer_app(eval_file)
    with running(app) as url, httpx.Client(base_url=url) as http:
        reply = http.get("/api/summary")
        assert reply.headers["content-type"] == "application/json"
        served = reply.json()
        assert served == orjson.loads(orjson.dumps(app.state.index.summary())) | {
            "path": "eval.jsonl",
            "skipped": 0,
            "problems": [],
        }
        assert served["kind"] == "trajectories" and served["failures"] == 3
        assert http.get("/", follow_redirects=False).headers["location"] == "/ui/view.html?source=server"
        assert http.get("/api/trajectory").json()["kind"] == "trajectories"
    with running(create_viewer_app(write_train_log(tmp_path / "train.jsonl", steps=5))) as url:
        landing = httpx.get(f"{url}/", follow_redirects=False)
        assert landing.status_code == 307 and landing.headers["location"] == "/ui/summary.html?source=server"
        served = httpx.get(f"{url}/api/summary").json()
        assert served["kind"] == "training" and served["steps"] == 5 and len(served["reward"]["points"]) == 5


def test_the_viewer_answers_only_loopback_hosts_and_origins(eval_file: Path) -> None:
    with running(create_viewer_app(eval_file)) as url, httpx.Client(base_url=url) as http:
        for path in ("/api/summary", "/api/episodes/0", "/ui/summary.html"):
            rebound = http.get(path, headers={"Host": "attacker.example"})  # DNS rebinding
            assert rebound.status_code == 403 and rebound.json()["data"]["code"] == "ORIGIN_REFUSED", path
            foreign = http.get(path, headers={"Origin": "http://attacker.example"})
            assert foreign.status_code == 403, path
            own = http.get(path, headers={"Origin": url})
            assert own.status_code == 200, path
            assert own.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            assert own.headers["x-content-type-options"] == "nosniff"
    assert (
        "script-src 'self';" in CONTENT_SECURITY_POLICY
        and "unsafe-inline" not in CONTENT_SECURITY_POLICY.split("style-src")[0]
    )
    with running(create_viewer_app(eval_file, allow_hosts=["viewer.lan"])) as url:
        assert httpx.get(f"{url}/api/summary", headers={"Host": "viewer.lan"}).status_code == 200


def test_an_episode_with_nan_reaches_the_browser_as_json(tmp_path: Path, eval_file: Path) -> None:
    path = tmp_path / "nan.jsonl"
    record = orjson.loads(eval_file.read_bytes().splitlines()[0])
    record["seconds"] = float("nan")
    path.write_text(json.dumps(record) + "\n")  # Python's json writes NaN; strict JSON has no such word
    with running(create_viewer_app(path)) as url:
        listed = httpx.get(f"{url}/api/trajectory").json()
        assert listed["problems"] == [] and len(listed["episodes"]) == 1
        episode = httpx.get(f"{url}/api/episodes/0")
        assert b"NaN" not in episode.content and episode.json()["seconds"] is None


def test_view_names_a_bad_allowed_host(eval_file: Path) -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(main_app, ["view", str(eval_file), "--allow-host", "a b"])
    assert result.exit_code == 2 and "allow_hosts (--allow-host)" in result.output
