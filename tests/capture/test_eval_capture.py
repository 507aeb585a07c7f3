"""``omnienv eval --records``: the eval's model calls go through a capture proxy, token-exact.

The scripted endpoint plays Wordle's solver and keeps every token it produced, so each captured
call can be matched to what the server sampled; the eval runs as a real process against it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import orjson
import pytest

from omnienv.capture.records import TrainingRecord, read_records
from omnienv.cli.eval import EvalCapture, compact_call, episode_name
from omnienv.envs.wordle.responder import wordle_responder
from omnienv.rollout import read_episodes
from omnienv.rollout.scripted_openai import Faults, Produced, create_app
from omnienv.rollout.trajectory import Episode
from omnienv.server import running

DOC = Path(__file__).resolve().parents[2] / "docs" / "capture.md"
Sample = tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]


def eval_command(base_url: str, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "omnienv.cli.main",
        "eval",
        "wordle",
        "--model",
        "scripted",
        "--base-url",
        base_url,
        "--split",
        "test",
        "--out",
        str(out),
        *extra,
    ]


def run_eval(base_url: str, out: Path, *extra: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    command = eval_command(base_url, out, *extra)
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == code, result.stdout + result.stderr
    return result


def produced(samples: list[Produced]) -> Counter[Sample]:
    return Counter((tuple(s.prompt_token_ids), tuple(s.completion_token_ids), tuple(s.logprobs)) for s in samples)


def captured(episodes: list[Episode]) -> Counter[Sample]:
    return Counter(
        (tuple(c["prompt_token_ids"]), tuple(c["completion_token_ids"]), tuple(c["logprobs"]))
        for episode in episodes
        for c in episode.model_calls or ()
    )


def assert_matches(records: list[TrainingRecord], episodes: list[Episode]) -> None:
    """One record per trajectory line, in order: same episode, same reward, same calls."""
    assert [r.info["index"] for r in records] == [e.index for e in episodes]
    for record, episode in zip(records, episodes, strict=True):
        assert record.session_id == f"episode-{episode.index}"
        assert record.env == "wordle" and record.task_id == episode.task_id
        assert record.reward == episode.ledger.final_reward
        assert [compact_call(call) for call in record.calls] == episode.model_calls


def test_eval_records_the_servers_tokens(tmp_path: Path) -> None:
    out, records_path = tmp_path / "run.jsonl", tmp_path / "records.jsonl"
    app = create_app(wordle_responder)
    with running(app) as url:
        result = run_eval(f"{url}/v1", out, "--episodes", "6", "--concurrency", "3", "--records", str(records_path))
    assert "with token ids" in result.stdout and "records:" in result.stdout
    episodes = sorted(read_episodes(out), key=lambda e: e.index)
    assert [e.index for e in episodes] == list(range(6)) and all(e.success for e in episodes)
    # Every call the server answered is in exactly one episode's line, with the server's own ids.
    assert captured(episodes) == produced(app.state.produced)
    for episode in episodes:
        calls = episode.model_calls or []
        assert calls and len(calls) == len(episode.steps)  # one guess per call
        assert [c["index"] for c in calls] == list(range(len(calls)))
        assert all(c["episode"] == f"episode-{episode.index}" and c["missing"] is None for c in calls)
        assert all("request" not in c and "response" not in c for c in calls)  # the line is compact
    records = sorted(read_records(records_path), key=lambda r: r.info["index"])
    assert_matches(records, episodes)
    for record in records:
        assert record.trainable and record.reward is not None
        assert record.calls[0].request["messages"][0]["role"] == "user"  # the records keep calls whole
        (segment,) = record.segments or []  # each prompt extends the last: one sequence per episode
        generated = [t for t, m in zip(segment.token_ids, segment.loss_mask, strict=True) if m]
        assert generated == [t for call in record.calls for t in call.completion_token_ids or ()]
        assert [lp for lp, m in zip(segment.logprobs, segment.loss_mask, strict=True) if m] == [
            lp for call in record.calls for lp in call.logprobs or ()
        ]
        assert all(lp is None for lp, m in zip(segment.logprobs, segment.loss_mask, strict=True) if not m)


def test_a_server_without_token_ids_is_recorded_as_missing(tmp_path: Path) -> None:
    out, records_path = tmp_path / "run.jsonl", tmp_path / "records.jsonl"
    app = create_app(wordle_responder, tokens=False)
    with running(app) as url:
        result = run_eval(f"{url}/v1", out, "--episodes", "3", "--records", str(records_path))
    assert "0 with token ids" in result.stdout
    episodes = sorted(read_episodes(out), key=lambda e: e.index)
    assert all(e.success for e in episodes) and app.state.produced == []
    calls = [c for e in episodes for c in e.model_calls or ()]
    assert calls and all(c["prompt_token_ids"] is None and c["missing"] for c in calls)
    records = sorted(read_records(records_path), key=lambda r: r.info["index"])
    assert_matches(records, episodes)
    assert all(r.segments is None and r.missing and not r.trainable and r.reward is not None for r in records)


def test_a_failed_episode_has_no_reward(tmp_path: Path) -> None:
    out, records_path = tmp_path / "run.jsonl", tmp_path / "records.jsonl"
    with running(create_app(wordle_responder, faults=Faults(error_every=1))) as url:
        failed = run_eval(f"{url}/v1", out, "--episodes", "2", "--retries", "0", "--records", str(records_path), code=1)
    assert "error: every episode failed, none is scored (the first: model:" in failed.stderr, failed.stderr
    episodes = sorted(read_episodes(out), key=lambda e: e.index)
    records = sorted(read_records(records_path), key=lambda r: r.info["index"])
    assert_matches(records, episodes)
    assert all(r.reward is None and r.failure is not None and r.failure.kind == "model" for r in records)
    assert all(e.model_calls == [] for e in episodes)  # an upstream error is passed on, not recorded


def test_capture_is_off_unless_asked(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    app = create_app(wordle_responder)
    with running(app) as url:
        run_eval(f"{url}/v1", out, "--episodes", "2")
        assert all(e.model_calls is None for e in read_episodes(out)) and app.state.produced == []
        run_eval(f"{url}/v1", out, "--episodes", "2", "--capture", "--no-resume")
    assert all(e.model_calls for e in read_episodes(out)) and len(app.state.produced) > 0


def test_a_killed_eval_resumes_with_one_record_per_episode(tmp_path: Path) -> None:
    out, records_path = tmp_path / "run.jsonl", tmp_path / "records.jsonl"
    with running(create_app(wordle_responder, faults=Faults(stall_every=1, stall_s=0.05))) as slow:
        command = eval_command(
            f"{slow}/v1", out, "--episodes", "10", "--concurrency", "1", "--records", str(records_path)
        )
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while not (out.exists() and out.read_bytes().count(b"\n") >= 3):
                assert process.poll() is None, "the eval ended before it could be interrupted"
                assert time.monotonic() < deadline, "no episodes were written in time"
                time.sleep(0.05)
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait(30)
    before = read_episodes(out, repair=True)
    kept = {
        r.info["index"]: r.to_dict() for r in read_records(records_path) if r.info["index"] in {e.index for e in before}
    }
    assert 3 <= len(before) < 10
    with running(create_app(wordle_responder)) as fast:
        run_eval(f"{fast}/v1", out, "--episodes", "10", "--records", str(records_path))
    after = read_episodes(out)
    assert sorted(e.index for e in after) == list(range(10))
    assert [e.to_dict() for e in after[: len(before)]] == [e.to_dict() for e in before]
    records = read_records(records_path)
    assert_matches(records, after)
    assert all(records[i].to_dict() == kept[e.index] for i, e in enumerate(before) if e.index in kept)
    assert all(r.trainable for r in records)


def test_a_resume_mends_the_records_file(tmp_path: Path) -> None:
    # A kill can leave the records file behind its trajectories, or with a torn last line: the
    # resume rebuilds a missing record from the episode's line, whose calls carry the token ids.
    out, records_path = tmp_path / "run.jsonl", tmp_path / "records.jsonl"
    with running(create_app(wordle_responder)) as url:
        run_eval(f"{url}/v1", out, "--episodes", "3", "--records", str(records_path))
        whole = {r.info["index"]: r for r in read_records(records_path)}
        lines = [r.to_json() for r in read_records(records_path) if r.info["index"] != 2]
        records_path.write_text("\n".join(lines) + '\n{"session_id": "episode-2", "ca')
        run_eval(f"{url}/v1", out, "--episodes", "3", "--records", str(records_path))
    records = read_records(records_path)
    assert_matches(records, read_episodes(out))
    mended = next(r for r in records if r.info["index"] == 2)
    assert mended.trainable and mended.calls[0].request == {}
    assert mended.segments is not None and whole[2].segments is not None
    assert [s.to_dict() for s in mended.segments] == [s.to_dict() for s in whole[2].segments]
    assert all(r.to_dict() == whole[r.info["index"]].to_dict() for r in records if r.info["index"] != 2)


def test_the_documented_eval_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Fenced as `py`: the page's first example (```python) is run by test_wire.
    section = DOC.read_text().split("## Token ids from `omnienv eval`", 1)[1]
    (code,) = re.findall(r"```py\n(.*?)```", section, re.DOTALL)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(DOC), "exec"), {})
    assert len(read_records(tmp_path / "wordle.records.jsonl")) == 4


def test_a_resume_plays_failed_episodes_again_only_when_asked(tmp_path: Path) -> None:
    out, records_path = tmp_path / "run.jsonl", tmp_path / "records.jsonl"
    options = ("--episodes", "4", "--retries", "0", "--records", str(records_path))
    with running(create_app(wordle_responder, faults=Faults(error_every=9))) as outage:
        run_eval(f"{outage}/v1", out, *options, "--concurrency", "1")
    first = {e.index: e for e in read_episodes(out)}
    failed = {index for index, e in first.items() if e.failure is not None}
    assert 0 < len(failed) < 4, "the outage must fail some episodes, not all"
    with running(create_app(wordle_responder)) as url:
        run_eval(f"{url}/v1", out, *options)  # a plain resume keeps every episode, failed or not
        assert {e.index: e.to_dict() for e in read_episodes(out)} == {i: e.to_dict() for i, e in first.items()}
        run_eval(f"{url}/v1", out, *options, "--retry-failures")
    episodes = read_episodes(out)
    assert sorted(e.index for e in episodes) == [0, 1, 2, 3], "one line per episode"
    assert all(e.failure is None and e.success for e in episodes)
    assert all(e.to_dict() == first[e.index].to_dict() for e in episodes if e.index not in failed)
    records = read_records(records_path)
    assert_matches(records, episodes)
    assert all(r.trainable for r in records)
    summary = orjson.loads((tmp_path / "run.summary.json").read_bytes())
    assert summary["episodes"] == 4 and summary["failures"] == 0


def test_an_eval_episode_s_record_takes_calls_only_through_its_own_secret_url() -> None:
    """Another local process that knows the run's naming (``episode-0``) adds nothing to a record,
    and nothing is added once the episode is over."""
    episode = Episode("wordle", 0, "test/0000", 0, "scripted")
    body = {"model": "scripted", "messages": [{"role": "user", "content": "guess"}]}
    with running(create_app(wordle_responder)) as url, EvalCapture.proxy_for(f"{url}/v1", 30) as proxy:
        wiring = EvalCapture(proxy, None)
        secret = wiring.base_url_for(episode)
        assert episode_name(episode) not in secret
        guessed = httpx.post(f"{proxy.episode_url(episode_name(episode))}/chat/completions", json=body, timeout=30)
        assert guessed.status_code == 404
        assert httpx.post(f"{secret}/chat/completions", json=body, timeout=30).status_code == 200
        wiring.annotate(episode)
        assert httpx.post(f"{secret}/chat/completions", json=body, timeout=30).status_code == 404
    assert episode.model_calls is not None and len(episode.model_calls) == 1
    assert episode.model_calls[0]["episode"] == "episode-0"
