"""GEM: any omnienv environment as a ``gem.Env``: ``reset(seed)``, a 5-tuple ``step``, ``spawn``.

::

    from omnienv.dialects.gem import register
    env_id = register("wordle")                     # "omnienv:wordle"
    env = gem.make(env_id)                          # or gem.make_vec([env_id] * 2)
    obs, info = env.reset(seed=0)                   # tool instructions + the env's prompt
    obs, reward, terminated, truncated, info = env.step("<guess>slate</guess>")

Constructor keywords (``gem.make(id, **kwargs)``): ``env`` (a name, class or instance),
``task`` (a task id; default: drawn by seed from the first split), ``seed`` (the base of the
episode seeds, which ``make_vec`` sets per copy), ``max_turns`` and ``text_actions``.
``info["suffix"]`` carries the call-format reminder that GEM's observation wrappers append.

The model's text is parsed by :mod:`omnienv.core.text_actions`. ``terminated`` is the episode
ending by its own rules, ``truncated`` a turn limit. Rewards: the tools' reward per step, plus
the rubric's final score on the last one. An infrastructure failure ends the episode with
reward NaN (no reward at all: a return summed over it is NaN too, so a failed episode can never
pass for a score of 0), ``truncated=True`` and ``info["failure"] = {"kind", "message"}``: leave
those episodes out.

Observations are strings, except for a turn that shows images (the desktop's screenshots): it
is a dict in the shape of GEM's own visual environments (``gem.envs.math_visual_env``, whose
observations are ``{"problem", "images"}``), ``{"text": str, "images": [PIL.Image, ...]}``, so a
trainer that feeds those images to a vision model's processor feeds these too. Decoding the PNGs
needs Pillow.
"""

from __future__ import annotations

import io
import json
import math
import random
from collections.abc import Sequence
from typing import Any

try:
    import gem
except ImportError as exc:  # the framework is an optional extra
    raise ImportError(f"{__name__} needs gem-llm (Python <= 3.12): pip install 'omnienv[gem]'") from exc

from omnienv.core import ImageBlock
from omnienv.core.content import Block
from omnienv.core.sampling import sample_arguments
from omnienv.core.text_actions import TagGrammar
from omnienv.dialects._text import EnvLike, TextSession

__all__ = ["GemEnv", "register"]


class GemEnv(gem.Env):
    """An omnienv environment behind GEM's string-action Gymnasium-style interface."""

    def __init__(
        self,
        env: EnvLike = "wordle",
        *,
        task: str | None = None,
        seed: int | None = None,
        max_turns: int | None = None,
        text_actions: TagGrammar | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if kwargs:
            raise TypeError(
                f"GemEnv got unknown keyword arguments: {', '.join(kwargs)}; "
                "expected env, task, seed, max_turns, text_actions"
            )
        self._config = {
            "env": env if isinstance(env, str | type) else type(env),
            "task": task,
            "max_turns": max_turns,
            "text_actions": text_actions,
        }
        self.session = TextSession(env, tags=text_actions, max_turns=max_turns)
        self.task = task
        self.seed = seed
        self._rng = random.Random(seed)

    def __repr__(self) -> str:
        return f"GemEnv({self.session.env.name!r}, task={self.task!r}, seed={self.seed!r})"

    def reset(self, seed: int | None = None) -> tuple[str | dict[str, Any], dict[str, Any]]:
        super().reset(seed)
        if seed is not None:
            self._rng = random.Random(seed)
        episode_seed = self._rng.randrange(2**31)
        prompt = self.session.reset(self.task, episode_seed)
        env = self.session.env
        observation = _observation(f"{self.session.instructions}\n\n{prompt}", self.session.prompt_images)
        return observation, {
            "suffix": self.session.actions.format_hint(),
            "episode_seed": episode_seed,
            "task_id": env.task.id if env.task else None,
        }

    def step(self, action: str) -> tuple[str | dict[str, Any], float, bool, bool, dict[str, Any]]:
        turn = self.session.step(action)
        info = dict(turn.info)
        info["suffix"] = self.session.actions.format_hint()
        if turn.failure is not None:
            info["failure"] = turn.failure.to_dict()
        reward = math.nan if turn.failure is not None else float(turn.reward)
        truncated = turn.truncated or turn.failure is not None
        return _observation(turn.text, turn.images), reward, turn.done, truncated, info

    def sample_random_action(self) -> str:
        """A random tool call in ``<tool_call>`` JSON, with arguments that fit the tool's schema."""
        spec = self._rng.choice(list(self.session.env.tools.values()))
        arguments = sample_arguments(spec.parameters, self._rng)
        return f"<tool_call>{json.dumps({'name': spec.name, 'arguments': arguments})}</tool_call>"

    def spawn(self, same_state: bool = False, **kwargs: Any) -> GemEnv:
        """A fresh copy with the same configuration (``kwargs`` override it).

        ``same_state=True`` is refused: an omnienv episode cannot be copied mid-way.
        """
        if same_state:
            raise NotImplementedError("omnienv environments cannot be copied mid-episode; spawn a fresh one")
        return GemEnv(**{**self._config, "seed": self._rng.randrange(2**31), **kwargs})

    def close(self) -> None:
        self.session.close()


def _observation(text: str, blocks: Sequence[Block]) -> str | dict[str, Any]:
    images = [block for block in blocks if isinstance(block, ImageBlock)]
    if not images:
        return text
    try:
        from PIL import Image
    except ImportError as exc:
        raise ImportError("images in GEM observations need Pillow: pip install pillow") from exc
    pictures = []
    for image in images:
        with Image.open(io.BytesIO(image.data)) as decoded:
            pictures.append(decoded.convert("RGB"))
    return {"text": text, "images": pictures}


def register(name: str, env_id: str | None = None, **kwargs: Any) -> str:
    """Register omnienv environment ``name`` with ``gem.make``; returns the id.

    The default id is ``omnienv:<name>``; registering the same id again is a no-op.
    """
    from gem.envs.registration import ENV_REGISTRY

    env_id = env_id or f"omnienv:{name}"
    if env_id not in ENV_REGISTRY:
        gem.register(env_id, f"{__name__}:GemEnv", env=name, **kwargs)
    return env_id
