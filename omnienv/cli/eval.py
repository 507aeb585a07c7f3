"""``omnienv eval``: a model on an environment, with trajectories and a summary beside them.

With ``--capture`` (implied by ``--records``) the run's model calls go through one capture proxy,
each episode on its own base URL, so each trajectory line carries its episode's calls with the
token ids and log-probabilities the server returned (``model_calls``), and ``--records`` gets one
training record per episode. The wiring lives here because rollout and capture are peers that may
not import each other: the policy only learns a base URL per episode, the loop only a hook that
annotates each finished episode before its line is written.

Capture is off by default: it asks the server for vLLM's token fields, which a hosted API may
reject, and it makes every line longer, so it is never free when the server gives no ids.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from omnienv.capture.calls import ModelCall
from omnienv.capture.records import TrainingRecord
from omnienv.cli.common import console, env_class, fail
from omnienv.cli.rollout import exit_if_nothing_scored, remote_env, run_with_progress, show_summary
from omnienv.core import OmniEnvError
from omnienv.rollout import plan_episodes
from omnienv.rollout.run import kept_on_resume, read_episodes, summary_path
from omnienv.rollout.trajectory import Episode

if TYPE_CHECKING:
    from omnienv.capture.proxy import CaptureProxy

__all__ = ["EvalCapture", "compact_call", "episode_name", "evaluate", "resumed_records"]

# The trajectory line has the conversation already; the records file keeps the calls whole.
_LEFT_OUT_OF_LINES = ("request", "response")
_DEFAULT_UPSTREAM = "https://api.openai.com/v1"


def episode_name(episode: Episode) -> str:
    """The proxy's name for an episode: unique within a run, and the records' ``session_id``."""
    return f"episode-{episode.index}"


def compact_call(call: ModelCall) -> dict[str, Any]:
    """A call as its trajectory line carries it: everything but the request and answer bodies."""
    return {key: value for key, value in call.to_dict().items() if key not in _LEFT_OUT_OF_LINES}


def calls_of(episode: Episode) -> list[ModelCall]:
    """The calls a trajectory line carries, as calls again (with empty request and answer bodies)."""
    return [ModelCall.from_dict({"request": {}, "response": {}, **call}) for call in episode.model_calls or ()]


def resumed_records(path: Path, previous: list[Episode]) -> list[TrainingRecord]:
    """One record per episode kept from an interrupted run, in its order.

    A record already in ``path`` is kept (it has the whole calls); one that is missing (the run was
    killed between the two writes, or wrote no records) is rebuilt from its trajectory line, and a
    torn line, or a record of an episode that will be played again, is dropped."""
    wanted = {episode.index for episode in previous}
    kept: dict[int, TrainingRecord] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").split("\n"):  # not splitlines: it splits on U+2028 too
            try:
                record = TrainingRecord.from_json(line)
            except (ValueError, KeyError, TypeError):
                continue
            index = record.info.get("index")
            if isinstance(index, int) and index in wanted:
                kept[index] = record
    return [
        kept.get(episode.index) or TrainingRecord.from_episode(episode, calls_of(episode), episode_name(episode))
        for episode in previous
    ]


class EvalCapture:
    """One eval run's capture: a base URL per episode for the policy, and a hook for the loop that
    moves each finished episode's calls into its line and its training record into ``records``."""

    def __init__(self, proxy: CaptureProxy, records: IO[str] | None) -> None:
        self.proxy = proxy
        self.records = records
        self.calls = 0
        self.with_ids = 0
        self.missing: str | None = None

    @staticmethod
    def proxy_for(upstream: str, timeout: float) -> CaptureProxy:
        """The run's proxy, gated: each episode's URL is a secret one, so nothing but that episode's
        policy (no other local process that guesses ``episode-3``) adds a call to its record."""
        from omnienv.capture.proxy import CaptureProxy

        return CaptureProxy(upstream, timeout=timeout, gated=True)

    def base_url_for(self, episode: Episode) -> str:
        return self.proxy.open_episode(episode_name(episode))

    def annotate(self, episode: Episode) -> None:
        self.proxy.close_episode(episode_name(episode))  # a call still running is not recorded
        calls = self.proxy.drain(episode_name(episode))
        episode.model_calls = [compact_call(call) for call in calls]
        self.calls += len(calls)
        self.with_ids += sum(call.has_tokens for call in calls)
        self.missing = self.missing or next((call.missing for call in calls if call.missing), None)
        if self.records is not None:
            # Written before the trajectory line: a kill between the two leaves an extra record,
            # which a resume drops, never a trajectory without its record.
            record = TrainingRecord.from_episode(episode, calls, episode_name(episode))
            self.records.write(record.to_json() + "\n")
            self.records.flush()

    def report(self) -> str:
        line = f"model calls captured: {self.calls}, {self.with_ids} with token ids"
        if self.missing:  # ids or logprobs absent somewhere: say why once, the records say where
            line += f"; some incomplete: {self.missing}"
        return line


def open_records(path: Path, out: Path, resume: bool, env: str, retry_failures: bool = False) -> IO[str]:
    """The records file, ready to append this run's records; on resume it first holds exactly one
    record per episode that the resume keeps from ``out`` (see :func:`resumed_records`)."""
    previous: list[Episode] = []
    if resume and out.exists():
        try:
            previous = read_episodes(out)
        except OmniEnvError as exc:
            raise fail(exc.message) from None
        strangers = {e.env for e in previous} - {env}
        if strangers:
            raise fail(f"{out} holds episodes of {', '.join(sorted(strangers))}, not {env}")
    kept = resumed_records(path, kept_on_resume(previous, retry_failures))
    scratch = path.with_name(path.name + ".partial")
    with scratch.open("w", encoding="utf-8") as stream:
        for record in kept:
            stream.write(record.to_json() + "\n")
    scratch.replace(path)
    return path.open("a", encoding="utf-8")


def evaluate(
    env: Annotated[str, typer.Argument(help="Environment name, e.g. wordle")],
    model: Annotated[str, typer.Option(help="Model name as the endpoint knows it")],
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint, e.g. http://host:8000/v1")] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the API key")] = "OPENAI_API_KEY",
    mode: Annotated[str, typer.Option(help="chat (tool calling), responses, or text (parsed calls)")] = "chat",
    episodes: Annotated[int, typer.Option(min=1)] = 20,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes played at once")] = 8,
    split: Annotated[str | None, typer.Option(help="Task split to cycle through, e.g. test")] = None,
    out: Annotated[Path | None, typer.Option(help="Trajectories (JSONL); the summary goes beside it")] = None,
    resume: Annotated[bool, typer.Option(help="Keep episodes already in --out and play only the rest")] = True,
    retry_failures: Annotated[
        bool, typer.Option(help="On resume, play again the episodes flagged as failures (an API outage, a crash)")
    ] = False,
    seed: Annotated[int, typer.Option(help="Episode i uses seed+i")] = 0,
    temperature: Annotated[float | None, typer.Option()] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Per model reply")] = None,
    max_model_calls: Annotated[int | None, typer.Option(help="Per episode")] = None,
    deadline: Annotated[float | None, typer.Option(min=0.001, help="Seconds before an episode is failed")] = 600.0,
    request_timeout: Annotated[float, typer.Option(min=0.001, help="Seconds per model request before a retry")] = 60.0,
    retries: Annotated[int, typer.Option(min=0, help="Retries per model request, with backoff")] = 3,
    url: Annotated[str | None, typer.Option(help="Play on a remote omnienv server instead")] = None,
    capture: Annotated[
        bool | None,
        typer.Option(
            "--capture/--no-capture",
            help="Record each model call's token ids and logprobs (vLLM's fields) in the trajectories; "
            "off unless --records is given",
        ),
    ] = None,
    records: Annotated[
        Path | None, typer.Option(help="Training records (JSONL), one per episode, with its reward; needs capture")
    ] = None,
) -> None:
    """Evaluate an OpenAI-compatible model on an environment."""
    from omnienv.rollout.llm import ChatPolicy

    if mode not in ("chat", "responses", "text"):
        raise fail(f"--mode must be chat, responses or text, not {mode!r}")
    if records is not None and capture is False:
        raise fail("--records needs the model calls captured: drop --no-capture")
    capturing = capture if capture is not None else records is not None
    cls = env_class(env)
    out = out or Path(f"eval-{cls.name}.jsonl")
    api_key = os.environ.get(api_key_env)
    try:
        plans = plan_episodes(cls, episodes, split, seed)
    except OmniEnvError as exc:
        raise fail(exc.message) from None

    def play(base_url_for: Callable[[Episode], str] | None, annotate: Callable[[Episode], None] | None) -> None:
        def make_policy() -> ChatPolicy:
            return ChatPolicy(
                model,
                cls.tools,
                base_url=base_url,
                api_key=api_key,
                mode=mode,  # type: ignore[arg-type]
                text_tags=getattr(cls, "text_actions", None),
                temperature=temperature,
                max_tokens=max_tokens,
                max_model_calls=max_model_calls,
                max_retries=retries,
                timeout_s=request_timeout,
                base_url_for=base_url_for,
            )

        summary, first_failure = run_with_progress(
            cls,
            make_policy,
            plans,
            f"{cls.name} x {model}",
            out=out,
            resume=resume,
            retry_failures=retry_failures,
            concurrency=concurrency,
            deadline_s=deadline,
            make_env=remote_env(url) if url else None,
            annotate=annotate,
        )
        show_summary(summary, title=f"{cls.name}, model {model} ({mode})" + (f", split {split}" if split else ""))
        if summary.failures and not retry_failures:
            console.print(
                f"{summary.failures} episode(s) failed and are not scored: run the same command with "
                "--retry-failures to play them again (the others are kept)"
            )
        exit_if_nothing_scored(summary, first_failure)

    if not capturing:
        play(None, None)
        console.print(f"trajectories: {out}\nsummary: {summary_path(out)}")
        return
    upstream = base_url or os.environ.get("OPENAI_BASE_URL") or _DEFAULT_UPSTREAM
    try:
        capture_proxy = EvalCapture.proxy_for(upstream, request_timeout)
    except ImportError as exc:
        raise fail(f"--capture needs the server extra: pip install 'omnienv[server]' ({exc})") from None
    sink = open_records(records, out, resume, cls.name, retry_failures) if records is not None else None
    try:
        # The proxy gives up on the upstream when the client does (it watches the client's
        # connection, and bounds each exchange as a whole by the same timeout), so a request the
        # client retried is not also recorded when its first try answers late.
        with capture_proxy as proxy:
            wiring = EvalCapture(proxy, sink)
            play(wiring.base_url_for, wiring.annotate)
    finally:
        if sink is not None:
            sink.close()
    console.print(wiring.report())
    console.print(f"trajectories: {out}\nsummary: {summary_path(out)}" + (f"\nrecords: {records}" if records else ""))
