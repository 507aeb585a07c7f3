"""``omnienv eval``: a model on an environment, with trajectories and a summary beside them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from omnienv.cli.common import console, env_class, fail
from omnienv.cli.rollout import remote_env, run_with_progress, show_summary
from omnienv.core import OmniEnvError
from omnienv.rollout import plan_episodes
from omnienv.rollout.run import summary_path


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
    seed: Annotated[int, typer.Option(help="Episode i uses seed+i")] = 0,
    temperature: Annotated[float | None, typer.Option()] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Per model reply")] = None,
    max_model_calls: Annotated[int | None, typer.Option(help="Per episode")] = None,
    deadline: Annotated[float | None, typer.Option(help="Seconds before an episode is failed")] = 600.0,
    request_timeout: Annotated[float, typer.Option(help="Seconds per model request before a retry")] = 60.0,
    retries: Annotated[int, typer.Option(help="Retries per model request, with backoff")] = 3,
    url: Annotated[str | None, typer.Option(help="Play on a remote omnienv server instead")] = None,
) -> None:
    """Evaluate an OpenAI-compatible model on an environment."""
    from omnienv.rollout.llm import ChatPolicy

    if mode not in ("chat", "responses", "text"):
        raise fail(f"--mode must be chat, responses or text, not {mode!r}")
    cls = env_class(env)
    out = out or Path(f"eval-{cls.name}.jsonl")
    api_key = os.environ.get(api_key_env)

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
        )

    try:
        plans = plan_episodes(cls, episodes, split, seed)
    except OmniEnvError as exc:
        raise fail(exc.message) from None
    summary = run_with_progress(
        cls,
        make_policy,
        plans,
        f"{cls.name} x {model}",
        out=out,
        resume=resume,
        concurrency=concurrency,
        deadline_s=deadline,
        make_env=remote_env(url) if url else None,
    )
    show_summary(summary, title=f"{cls.name}, model {model} ({mode})" + (f", split {split}" if split else ""))
    console.print(f"trajectories: {out}\nsummary: {summary_path(out)}")
