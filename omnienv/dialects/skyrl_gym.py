"""SkyRL Gym: any omnienv environment as a ``BaseTextEnv``, built the way SkyRL's trainer builds it.

::

    from omnienv.dialects.skyrl_gym import register
    env_id = register("wordle")                     # "omnienv-wordle"
    env = skyrl_gym.make(env_id, env_config={}, extras={"extra_info": {"task_id": "test/0003"}})
    prompt, _ = env.init([])                         # system prompt (tools) + the env's prompt
    out = env.step("<guess>slate</guess>")           # {"observations", "reward", "done", "metadata"}

SkyRL's generator calls ``make(env_class, env_config=cfg, extras=row)`` with every dataset
column but ``prompt`` in ``extras``. The episode comes from ``extras["extra_info"]`` (or
``extras``): ``task_id`` and ``seed``; ``extras["max_turns"]`` caps the turns. The environment
is chosen by ``register(name)`` (or ``env_config["env"]``). :func:`dataset_rows` writes the
matching dataset rows (the prompt carries the tool instructions; no row carries the answer).

The model's text is parsed by :mod:`omnienv.core.text_actions`. Rewards: each step's reward is
the tools' reward; the last one also carries the rubric's final score, which is what SkyRL
treats as the outcome. An infrastructure failure ends the episode (``done=True``) with reward
``None`` (SkyRL's "no reward for this step"), ``metadata["failure"]`` set and
``get_metrics()["failure"] == 1.0``: filter those episodes out.

Images (the desktop's screenshots) reach the model as images: an observation, or the prompt
``init`` writes, that carries any becomes OpenAI content parts, the text then an ``image_url``
data URL per image, which SkyRL's chat templates and vision processors read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # the framework is an optional extra
    raise ImportError(f"{__name__} needs skyrl-gym: pip install 'omnienv[skyrl]'") from exc

from omnienv.core import EnvironmentBase, ImageBlock, Task, load_environment
from omnienv.core.content import Block
from omnienv.dialects._text import EnvLike, TextSession, prompt_text

__all__ = ["SkyRLTextEnv", "dataset_rows", "register"]


class SkyRLTextEnv(BaseTextEnv):
    """An omnienv environment behind SkyRL's text-in, text-out interface; one per trajectory."""

    def __init__(
        self,
        env_config: Mapping[str, Any] | None = None,
        extras: Mapping[str, Any] | None = None,
        *,
        env: EnvLike | None = None,
    ) -> None:
        super().__init__()
        config = dict(env_config or {})
        extras = dict(extras or {})
        target = env if env is not None else config.get("env")
        if target is None:
            raise ValueError(
                "SkyRLTextEnv needs an omnienv environment: register(name) one, or pass env_config={'env': name}"
            )
        info = dict(extras.get("extra_info") or {})
        self.task_id: str | None = info.get("task_id", extras.get("task_id"))
        self.seed: int | None = info.get("seed", extras.get("seed"))
        max_turns = extras.get("max_turns", config.get("max_turns"))
        self.session = TextSession(target, tags=config.get("text_actions"), max_turns=max_turns)
        self.max_turns = self.session.max_turns or 0
        self._info: dict[str, Any] = {}

    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Reset the episode. An empty ``prompt`` becomes [system: tools, user: the env's prompt]."""
        first = self.session.reset(self.task_id, self.seed)
        self.turns = 0
        self._info = {}
        messages = list(prompt) or [{"role": "user", "content": _parts(first, self.session.prompt_images)}]
        if not any(message.get("role") == "system" for message in messages):
            messages.insert(0, {"role": "system", "content": self.session.instructions})
        env = self.session.env
        return messages, {"task_id": env.task.id if env.task else None}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        turn = self.session.step(action)
        self.turns = self.session.turns
        self._info = dict(turn.info)
        metadata = dict(turn.info)
        if turn.failure is not None:
            metadata["failure"] = turn.failure.to_dict()
        done = turn.over
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": _parts(turn.text, turn.images)}],
            reward=None if turn.failure is not None else float(turn.reward),
            done=done,
            metadata=metadata,
            postprocessed_action=None,
        )

    def get_metrics(self) -> dict[str, Any]:
        metrics: dict[str, Any] = {
            "turns": self.turns,
            "episode_reward": self.session.ledger.reward,
            "failure": 1.0 if self.session.ledger.failure else 0.0,
        }
        metrics.update({f"rubric/{name}": value for name, value in self._info.get("rubric", {}).items()})
        return metrics

    def close(self) -> None:
        self.session.close()


def register(name: str, env_id: str | None = None) -> str:
    """Register omnienv environment ``name`` with ``skyrl_gym.make``; returns the id.

    The default id is ``omnienv-<name>``; registering the same id again is a no-op.
    """
    env_id = env_id or f"omnienv-{name}"
    if env_id not in skyrl_gym.envs.registration.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:SkyRLTextEnv", kwargs={"env": name})
    return env_id


def dataset_rows(
    name: str, split: str, env_id: str | None = None, *, seed: int = 0, max_turns: int | None = None
) -> list[dict[str, Any]]:
    """SkyRL dataset rows for every task of ``split``: prompt, ``env_class`` and ``extra_info``."""
    cls = load_environment(name)
    session = TextSession(cls)  # no reset: the tools' instructions need no episode
    try:
        instructions = session.instructions
        rows = []
        for i, task in enumerate(cls.task_index().split(split)):
            rows.append(_row(cls, name, task, seed + i, instructions, env_id, max_turns))
    finally:
        session.close()
    return rows


def _row(
    cls: type[EnvironmentBase],
    name: str,
    task: Task,
    seed: int,
    instructions: str,
    env_id: str | None,
    max_turns: int | None,
) -> dict[str, Any]:
    prompt = prompt_text(cls, task, seed)  # rendered without a sandbox where the environment can
    return {
        "data_source": f"omnienv/{cls.name}",
        "prompt": [{"role": "system", "content": instructions}, {"role": "user", "content": prompt}],
        "env_class": env_id or f"omnienv-{name}",
        "reward_spec": {"method": "env", "ground_truth": None},
        "extra_info": {"task_id": task.id, "seed": seed},
        **({"max_turns": max_turns} if max_turns is not None else {}),
    }


def _parts(text: str, blocks: Sequence[Block]) -> str | list[dict[str, Any]]:
    """The text, or with images the OpenAI multimodal parts SkyRL's chat templates read."""
    images = [{"type": "image_url", "image_url": {"url": b.data_url}} for b in blocks if isinstance(b, ImageBlock)]
    if not images:
        return text
    return [{"type": "text", "text": text}, *images]
