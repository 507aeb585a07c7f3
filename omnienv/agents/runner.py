"""``run_agents``: a loop-owning harness on many episodes of an environment with a shell tool.

For each episode the runner opens one stateful HTTP session on an omnienv server (its own, served
on 127.0.0.1 for the run, or ``url``), resets it, and starts the harness with the prompt as its
instruction (with :func:`~omnienv.agents.shell.shell_only_note` after it), its model on the
capture proxy's per-episode URL, and its commands on the shell relay's per-episode URL
(:mod:`omnienv.agents.relay`), so every command runs with the environment's shell tool in the
session's sandbox and every model call is recorded token-exact.
When the harness is done the session's episode is ended (``end()``: the rubric, or the task's
verifier, scores it) unless the agent already submitted, and one trajectory line and one
:class:`~omnienv.capture.TrainingRecord` are made.

Whose outcome is what (the rule of DESIGN.md): a harness that crashes, gives up or runs out of
time is the agent's outcome, scored as the workspace stands; an environment that failed (reset,
a step, the session lost) flags the episode, unscored. Two more cases are flagged: as ``harness``,
a harness that got no model call through at all (it could not start, or could not reach the
model), since then nothing in the episode is the model's doing and there is nothing to train on;
as ``model``, a harness that stopped while the last call it made had failed on the model server's
side (unreachable, timed out, a 5xx or 429 answer, as the capture proxy saw it): an outage.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from omnienv.agents.harness import EpisodeContext, Harness, install_shim
from omnienv.agents.process import Finished, run_process
from omnienv.agents.relay import EpisodeShell, Relay, serving
from omnienv.agents.shell import ShellTool, find_shell_tool, shell_only_note
from omnienv.capture.calls import ModelCall
from omnienv.capture.proxy import CaptureProxy
from omnienv.capture.records import TrainingRecord
from omnienv.client.http import AsyncHTTPClient
from omnienv.core import EnvironmentBase, Failure, OmniEnvError, load_environment
from omnienv.rollout import EpisodePlan, Summary, plan_episodes, summarize
from omnienv.rollout._arguments import check_arguments
from omnienv.rollout.loop import end_stopped
from omnienv.rollout.run import summary_path
from omnienv.rollout.trajectory import TRAINER_END, Episode
from omnienv.server import ServerConfig, assemble, running

__all__ = ["AgentEpisode", "AgentRun", "run_agents"]

DEFAULT_TIMEOUT_S = 600.0
_LEFT_OUT_OF_LINES = ("request", "response")  # the records file keeps the calls whole


@dataclass(slots=True)
class AgentEpisode:
    """One episode: the rollout record (commands as steps), its training record, and the harness's end."""

    episode: Episode
    record: TrainingRecord
    harness: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The trajectory line: the rollout episode's fields, plus ``harness``."""
        return {**self.episode.to_dict(), "harness": self.harness}


@dataclass(slots=True)
class AgentRun:
    episodes: list[AgentEpisode]
    summary: Summary
    server_url: str
    """The omnienv server the sessions were on (the runner's own, while the run lasted)."""


@dataclass
class _Run:
    """One run's fixed parts, shared by its episodes."""

    harness: Harness
    env_name: str
    tool: ShellTool
    model: str
    api_key: str
    server_url: str
    proxy: CaptureProxy
    root: Path
    timeout_s: float
    note: str = ""
    """Told to the harness after each prompt (:func:`~omnienv.agents.shell.shell_only_note`)."""
    relay: Relay = field(default_factory=Relay)
    relay_url: str = ""

    async def episode(self, plan: EpisodePlan) -> AgentEpisode:
        name = f"episode-{plan.index}"
        episode = Episode(self.env_name, plan.index, plan.task_id, plan.seed, self.harness.name)
        started = time.perf_counter()
        client = AsyncHTTPClient(self.server_url, timeout=self.timeout_s + 900.0)
        report: dict[str, Any] = {}
        try:
            report = await self._play(client, plan, name, episode)
        finally:
            await client.close()
        outage = self.proxy.log.failure(name)
        calls = self.proxy.drain(name)
        cut = bool(episode.steps) and episode.steps[-1].call.name == TRAINER_END
        if outage is not None and cut and episode.failure is None:  # it stopped because its model failed
            episode.failure = Failure("model", f"{self.harness.name} stopped after {outage}")
        elif not calls and episode.failure is None:
            code = report.get("exit_code")
            tail = report.get("log_tail") or report.get("error") or ""
            message = f"{self.harness.name} made no model call that completed ({report.get('stopped')}, exit {code})"
            episode.failure = Failure("harness", f"{message}: {tail[-600:]}" if tail else message)
        episode.seconds = time.perf_counter() - started
        episode.model_calls = [_compact(call) for call in calls]
        return AgentEpisode(episode, TrainingRecord.from_episode(episode, calls, name), report)

    async def _play(self, client: AsyncHTTPClient, plan: EpisodePlan, name: str, episode: Episode) -> dict[str, Any]:
        try:
            episode.prompt = await client.reset(plan.task_id, plan.seed)
        except OmniEnvError as exc:
            episode.failure = Failure.from_exception("reset", exc)
            return {"stopped": "not_started"}
        shell = EpisodeShell(client, self.tool, self.harness.submit_marker)
        token = self.relay.open(shell)
        model_url = self.proxy.open_episode(name)  # secret, as the relay's: no harness reaches another's
        # Once the episode is over its model URL is refused: what the harness asks in its grace period
        # is no turn of the episode, and must not be trained as one.
        closing = asyncio.create_task(self._close_model_at_end(shell, name))
        touching = asyncio.create_task(shell.keep_alive())
        try:
            context = EpisodeContext(
                plan.index,
                episode.prompt.text + self.note,
                self.model,
                model_url,
                self.api_key,
                f"{self.relay_url}/episodes/{token}",
                self.root / name,
                self.timeout_s,
            )
            finished = await self._launch(context, shell)
        except BaseException:
            touching.cancel()  # no settle follows, which would end it
            raise
        finally:
            closing.cancel()
            self.relay.close(token)
            self.proxy.close_episode(name)
        await shell.settle()
        await touching  # over: it returns, with no call left running on the session
        episode.steps = shell.steps
        episode.failure = shell.failure
        if not episode.over:  # the harness stopped without the episode ending: the trainer's cut scores it
            try:
                await end_stopped(client, episode)
            except OmniEnvError as exc:
                episode.failure = Failure.from_exception("end", exc)
        episode.failure = episode.ledger.failure  # a step's failure voids the episode as a whole
        report: dict[str, Any] = {"stopped": finished.stopped, "exit_code": finished.exit_code}
        report |= {"seconds": round(finished.seconds, 3), "submitted": shell.submitted}
        if finished.error:
            report["error"] = finished.error
        if finished.exit_code not in (0, None) or finished.stopped != "exited":
            report["log_tail"] = finished.log_tail()
        report["outcome"] = self.harness.outcome(context)
        return report

    async def _close_model_at_end(self, shell: EpisodeShell, name: str) -> None:
        await shell.over.wait()
        self.proxy.close_episode(name)

    async def _launch(self, context: EpisodeContext, shell: EpisodeShell) -> Finished:
        try:  # afresh: what an earlier run's harness left in a kept --workdir (its memory, its home) is gone
            if context.workdir.exists():
                shutil.rmtree(context.workdir)
            # Its own user's alone: its shim holds the relay's secret URL (a --workdir may be shared).
            context.workdir.mkdir(parents=True, mode=0o700)
            install_shim(context, self.harness.shell_names)
            launch = self.harness.launch(context)
        except OSError as exc:
            return Finished("not_started", None, 0.0, context.workdir / "harness.log", str(exc))
        shell.deadline = asyncio.get_running_loop().time() + self.timeout_s
        # Once it is to stop, its shell is closed: a harness that ignores SIGTERM (or its children,
        # until they are killed) runs no command past its time, and submits nothing after the end.
        return await run_process(launch, context.workdir, self.timeout_s, shell.over, stopping=shell.over.set)


def _compact(call: ModelCall) -> dict[str, Any]:
    return {key: value for key, value in call.to_dict().items() if key not in _LEFT_OUT_OF_LINES}


@contextmanager
def _scratch(workdir: Path | None) -> Iterator[Path]:
    """The episodes' scratch directories: ``workdir`` (kept), or a temporary one (removed)."""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        yield workdir
        return
    root = Path(tempfile.mkdtemp(prefix="omnienv-agents-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _plans(
    cls: type[EnvironmentBase], episodes: int, split: str | None, tasks: Sequence[str] | None, seed: int
) -> list[EpisodePlan]:
    if tasks:
        return [EpisodePlan(i, tasks[i % len(tasks)], seed + i) for i in range(episodes)]
    return plan_episodes(cls, episodes, split, seed)


def run_agents(
    harness: Harness,
    env: type[EnvironmentBase] | str,
    *,
    model: str,
    base_url: str,
    api_key: str = "omnienv",
    episodes: int = 1,
    split: str | None = None,
    tasks: Sequence[str] | None = None,
    seed: int = 0,
    concurrency: int = 1,
    timeout_s: float | None = None,
    url: str | None = None,
    shell_tool: str | None = None,
    out: Path | None = None,
    records: Path | None = None,
    workdir: Path | None = None,
    request_tokens: bool = True,
    on_episode: Callable[[AgentEpisode], None] | None = None,
) -> AgentRun:
    """Run ``harness`` on ``episodes`` episodes of ``env`` (see the module's docstring).

    ``base_url`` is the upstream model server (OpenAI-compatible, e.g. vLLM's ``.../v1``); the
    harness only ever sees the capture proxy. ``tasks`` (task ids, cycled) overrides ``split``.
    ``out`` gets one trajectory line per episode (the summary beside it), ``records`` one training
    record per episode; both in the order episodes finish. ``workdir`` keeps the episodes' scratch
    directories (harness logs, mini-swe-agent's trajectories); by default they are removed. Each
    episode's directory starts empty: what an earlier run left in it is removed first.
    """
    cls = load_environment(env) if isinstance(env, str) else env
    check_arguments("run_agents", env_class=cls, concurrency=concurrency)
    tool = find_shell_tool(cls.tools, shell_tool)
    harness.check()
    plans = _plans(cls, episodes, split, tasks, seed)
    limit = timeout_s or getattr(harness, "timeout_s", None) or DEFAULT_TIMEOUT_S
    with ExitStack() as stack:
        if url is None:
            cls.preflight()
            # No idle reaping (a harness may think for long between commands); steps get a long limit.
            config = ServerConfig(ui=False, idle_timeout=None, step_timeout=max(900.0, limit))
            url = stack.enter_context(running(assemble(cls, config, plugins=())))
        proxy = CaptureProxy(base_url, request_tokens=request_tokens, timeout=limit, gated=True)
        stack.enter_context(proxy)
        root = stack.enter_context(_scratch(workdir))
        sinks = [stack.enter_context(path.open("wb")) if path else None for path in (out, records)]
        note = shell_only_note(cls.tools, tool, harness.submit_marker)
        run = _Run(harness, cls.name, tool, model, api_key, url, proxy, root, limit, note)
        done = asyncio.run(_main(run, plans, concurrency, sinks[0], sinks[1], on_episode))
    summary = summarize(item.episode for item in done)
    if out is not None:
        summary_path(out).write_bytes(orjson.dumps(summary.to_dict(), option=orjson.OPT_INDENT_2))
    return AgentRun(done, summary, url)


async def _main(
    run: _Run,
    plans: list[EpisodePlan],
    concurrency: int,
    out: IO[bytes] | None,
    records: IO[bytes] | None,
    on_episode: Callable[[AgentEpisode], None] | None,
) -> list[AgentEpisode]:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(plan: EpisodePlan) -> AgentEpisode:
        async with gate:
            return await run.episode(plan)

    done: list[AgentEpisode] = []
    async with serving(run.relay.app) as relay_url:
        run.relay_url = relay_url
        tasks = [asyncio.create_task(one(plan)) for plan in plans]
        try:
            for finished in asyncio.as_completed(tasks):
                item = await finished
                done.append(item)
                if records is not None:  # the record first: a kill between the two leaves no line without one
                    records.write(item.record.to_json().encode() + b"\n")
                    records.flush()
                if out is not None:
                    out.write(orjson.dumps(item.to_dict(), option=orjson.OPT_APPEND_NEWLINE))
                    out.flush()
                if on_episode is not None:
                    on_episode(item)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # every harness reaped before returning
    return done
