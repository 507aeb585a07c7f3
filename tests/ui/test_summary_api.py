"""`/api/summary` over a real server, the landing page per kind of file, and the viewer's guard:
foreign Host and Origin headers refused, a content security policy on every page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from omnienv.cli.main import app as main_app
from omnienv.server import running
from omnienv.ui.file_summary import MAX_TEXT
from omnienv.ui.viewer import CONTENT_SECURITY_POLICY, TrajectoryIndex, create_viewer_app
from tests.ui.viewing import omnienv_view, write_eval_file, write_train_log


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


def _hostile_lines(good: dict[str, Any]) -> list[bytes]:
    """One good episode, then lines that each once stopped `omnienv view` from starting or made the
    whole list a 500, each with the line number it has in the file."""

    def variant(**fields: Any) -> bytes:
        return json.dumps({**good, **fields}).encode()

    return [
        orjson.dumps(good),  # 1
        b'{"steps": ' + b"[" * 5000 + b"]" * 5000 + b"}",  # 2: past every parser's depth: reported
        variant(reward=None, steps=[{"reward": "high"}, {"reward": 0.5}]),  # 3: a step reward no number
        variant(reward=None, steps=[{"reward": [1]}]),  # 4
        variant(task_id="test/\ud800", env="\udfff"),  # 5: lone surrogates (Python's json writes them)
        variant(seed=json.loads("[" * 300 + "]" * 300)),  # 6: more nesting than orjson writes
        variant(turns=1e300),  # 7: an int past 64 bits, and a histogram of 10^300 bars
        variant(stopped="x" * 2_000_000, policy="p" * 100_000, failure={"kind": "k" * 10_000, "message": 5}),  # 8
        variant(seconds=float("nan"), task_id="\ud800", index=2**80),  # 9: NaN: the episode route reparses it
        b'{"kind": "note", "text": "hi"}',  # 10: a record, not an episode: reported
    ]


def test_hostile_lines_are_skipped_or_summarized_never_fatal(tmp_path: Path, eval_file: Path) -> None:
    """`omnienv view` starts on a file of hostile lines, lists every readable episode with typed,
    short summary fields, reports the rest, and serves every route without a 500."""
    good = orjson.loads(eval_file.read_bytes().splitlines()[0])
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"\n".join(_hostile_lines(good)) + b"\n")
    with omnienv_view(path) as url, httpx.Client(base_url=url) as http:
        listing = http.get("/api/trajectory")
        assert listing.status_code == 200 and len(listing.content) < 50_000  # summaries, not the file's bulk
        body = listing.json()
        assert [e["line"] for e in body["episodes"]] == [1, 3, 4, 5, 6, 7, 8, 9]
        assert [p.split(":")[0] for p in body["problems"]] == ["line 2", "line 10"]
        assert "not an episode record" in body["problems"][0] and "'note'" in body["problems"][1]
        by_line = {e["line"]: e for e in body["episodes"]}
        assert by_line[3]["reward"] == 0.5 and by_line[4]["reward"] == 0.0  # only real numbers are summed
        assert by_line[5]["task_id"] == "test/?" and by_line[5]["env"] == "?" and by_line[5]["split"] == "test"
        assert by_line[6]["seed"] is None and by_line[7]["turns"] is None
        assert len(by_line[8]["stopped"]) == MAX_TEXT and by_line[8]["stopped"].endswith("…")
        assert by_line[8]["failure"] == {"kind": "k" * (MAX_TEXT - 1) + "…", "message": ""}
        assert by_line[8]["reward"] is None  # void
        assert by_line[9]["seconds"] is None and by_line[9]["episode"] is None
        summary = http.get("/api/summary")
        assert summary.status_code == 200 and summary.json()["skipped"] == 2
        for n in range(len(body["episodes"])):
            assert http.get(f"/api/episodes/{n}").status_code == 200, n
        assert http.get("/api/episodes/7").json()["task_id"] == "?"  # the NaN line, reparsed and written clean
        page = http.get("/ui/view.html")
        assert page.headers.get_list("content-security-policy") == [CONTENT_SECURITY_POLICY]  # once, not twice


@pytest.mark.parametrize("index", ["%C2%B2", "%D9%A1", "9" * 5000])
def test_episode_numbers_that_are_not_plain_digits_are_404(eval_file: Path, index: str) -> None:
    with running(create_viewer_app(eval_file)) as url:
        reply = httpx.get(f"{url}/api/episodes/{index}")
        assert reply.status_code == 404 and "no episode" in reply.json()["error"]


def test_a_bad_line_appended_while_viewing_is_reported(tmp_path: Path, eval_file: Path) -> None:
    """A running rollout appends a line the index cannot read: that request still answers, and the
    line is listed as a problem rather than lost."""
    lines = eval_file.read_bytes().splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_bytes(lines[0])
    with running(create_viewer_app(path)) as url:
        with path.open("ab") as handle:
            handle.write(b"[" * 5000 + b"]" * 5000 + b"\n" + lines[1])
        reply = httpx.get(f"{url}/api/trajectory")
        assert reply.status_code == 200
        assert len(reply.json()["episodes"]) == 2 and reply.json()["problems"][0].startswith("line 2: ")


def test_a_long_line_is_skipped_and_an_unended_one_reported(tmp_path: Path, eval_file: Path) -> None:
    """A line past ``max_line`` is never read whole, and a last line with no newline (a JSON array
    for JSONL, a rollout mid-write) is said, not silently dropped; neither stops the lines after."""
    lines = eval_file.read_bytes().splitlines(keepends=True)
    path = tmp_path / "long.jsonl"
    path.write_bytes(lines[0] + b'{"steps": [' + b"1," * 5000)
    index = TrajectoryIndex(path, max_line=max(len(line) for line in lines[:2]) + 10)
    index.refresh()
    assert len(index.summaries) == 1 and index.problems == []
    assert index.report(50) == [f"line 2: longer than {index.max_line:,} bytes and not ended, skipped"]
    with path.open("ab") as handle:
        handle.write(b"1]}\n" + lines[1][:30])
    index.refresh()
    assert index.problems == [f"line 2: longer than {index.max_line:,} bytes, skipped"]
    assert index.report(50)[1] == "line 3: not ended yet (30 bytes), read once its newline is written"
    with path.open("ab") as handle:
        handle.write(lines[1][30:])
    index.refresh()
    assert [s["line"] for s in index.summaries] == [1, 3] and index.report(50) == index.problems
    assert orjson.loads(index.episode(1)) == orjson.loads(lines[1])
