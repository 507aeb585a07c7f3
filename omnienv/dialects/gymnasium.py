"""Gymnasium: any omnienv environment as a ``gymnasium.Env`` with text spaces.

::

    from omnienv.dialects.gymnasium import GymnasiumEnv
    env = GymnasiumEnv("wordle")
    obs, info = env.reset(seed=0)                 # obs: the prompt; info["system_prompt"]: the tools
    obs, reward, terminated, truncated, info = env.step("<guess>slate</guess>")

Actions are the model's text, parsed by :mod:`omnienv.core.text_actions` (``<tool_call>`` JSON or
the environment's tags); a ``{"name": ..., "arguments": {...}}`` mapping or a :class:`ToolCall`
skips the parsing. Observations are the text the agent reads.

Environments that show images (``shows_images``, e.g. the desktop's screenshots) get a
``spaces.Dict`` observation instead, Gymnasium's own shape for pixels next to other data:
``{"text": str, "images": (HxWx3 uint8 array, ...)}`` on reset and on every step (an empty tuple
when a turn has no image). The space is fixed before the first step, so it is chosen from the
class, and screenshots vary in size, so each image is an :class:`AnyImage` inside a ``Sequence``.
Decoding the PNGs needs Pillow (in the ``gymnasium`` extra).

Rewards: each step's reward is the tools' reward, and the last step's also carries the rubric's
final score (its parts are in ``info["rubric"]``). An infrastructure failure ends the episode with
reward NaN (no reward at all: any return summed over it is NaN too, so a failed episode can never
pass for a score of 0), ``truncated=True`` and ``info["failure"] = {"kind", "message"}``: leave
such episodes out.

Seeding follows Gymnasium: ``reset(seed=s)`` seeds ``np_random``, and every reset draws the
episode's seed from it, so ``reset(seed=s)`` followed by seedless resets is reproducible.
``options={"task": "test/0003"}`` picks a task.
"""

from __future__ import annotations

import io
import math
import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # the framework is an optional extra
    raise ImportError(f"{__name__} needs gymnasium: pip install 'omnienv[gymnasium]'") from exc

from omnienv.core import ImageBlock, InvalidValueError, ToolCall
from omnienv.core.content import Block
from omnienv.core.text_actions import TagGrammar, TextTurn, openai_tools
from omnienv.dialects._text import EnvLike, TextSession

__all__ = ["AnyImage", "AnyText", "GymnasiumEnv", "register"]

_SAMPLE_CHARSET = string.ascii_letters + string.digits + ' <>/{}":,_-.'


class AnyText(spaces.Text):
    """A text space holding any string up to ``max_length``: model replies use all of Unicode.

    ``sample()`` draws from a small printable charset, enough to exercise the parser's errors.
    """

    def __init__(self, max_length: int, seed: int | None = None) -> None:
        super().__init__(max_length, min_length=0, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.max_length})"


class AnyImage(spaces.Space[np.ndarray]):
    """Any RGB image, ``HxWx3`` uint8 of any size: screens differ, and a tool may crop or scale.

    ``sample()`` draws a small random image.
    """

    def __init__(self, sample_size: tuple[int, int] = (4, 4), seed: int | None = None) -> None:
        super().__init__(shape=None, dtype=np.uint8, seed=seed)
        self.sample_size = sample_size

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> np.ndarray:
        if mask is not None or probability is not None:
            raise ValueError("AnyImage.sample takes no mask or probability")
        height, width = self.sample_size
        return self.np_random.integers(0, 256, size=(height, width, 3), dtype=np.uint8)

    def contains(self, x: Any) -> bool:
        return isinstance(x, np.ndarray) and x.dtype == np.uint8 and x.ndim == 3 and x.shape[2] == 3

    def __repr__(self) -> str:
        return "AnyImage()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyImage)

    def __hash__(self) -> int:
        return hash(AnyImage)


Obs = str | dict[str, Any]
"""The prompt or a step's text; ``{"text", "images"}`` for environments that show images."""


class GymnasiumEnv(gymnasium.Env[Obs, str]):
    """An omnienv environment seen through Gymnasium's ``reset``/``step``/``render``/``close``."""

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 4}  # noqa: RUF012 - Env's own

    def __init__(
        self,
        env: EnvLike,
        *,
        render_mode: str | None = None,
        tags: TagGrammar | None = None,
        max_turns: int | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InvalidValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.session = TextSession(env, tags=tags, max_turns=max_turns)
        self.render_mode = render_mode
        self.shows_images = bool(getattr(self.session.env, "shows_images", False))
        text_space = AnyText(max_text_length)
        pictures = spaces.Dict({"text": text_space, "images": spaces.Sequence(AnyImage())})
        self.observation_space: spaces.Space[Any] = pictures if self.shows_images else text_space
        self.action_space = AnyText(max_text_length)
        self._transcript: list[str] = []

    def __repr__(self) -> str:
        return f"GymnasiumEnv({self.session.env.name!r})"

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, dict[str, Any]]:
        super().reset(seed=seed)
        episode_seed = int(self.np_random.integers(2**31))
        task = (options or {}).get("task")
        prompt = self.session.reset(task, episode_seed)
        self._transcript = [f"[prompt]\n{prompt}"]
        env = self.session.env
        info = {
            "system_prompt": self.session.instructions,
            "tools": openai_tools(env.tools.values()),
            "task_id": env.task.id if env.task else None,
            "episode_seed": episode_seed,
        }
        self._show()
        return self._observation(prompt, self.session.prompt_images), info

    def step(self, action: str | Mapping[str, Any] | ToolCall) -> tuple[Obs, float, bool, bool, dict[str, Any]]:
        if isinstance(action, str):
            turn = self.session.step(action)
            self._transcript.append(f"[action]\n{action}")
        else:
            call = action if isinstance(action, ToolCall) else _call(action)
            turn = self.session.step_calls([call])
            self._transcript.append(f"[action]\n{call.to_dict()}")
        reward = math.nan if turn.failure is not None else float(turn.reward)
        self._transcript.append(f"[observation] reward={reward:g}\n{turn.text}")
        self._show()
        truncated = turn.truncated or turn.failure is not None
        return self._observation(turn.text, turn.images), reward, turn.done, truncated, _info(turn)

    def _observation(self, text: str, images: Sequence[Block]) -> Obs:
        if not self.shows_images:
            return text
        return {"text": text, "images": tuple(_pixels(block) for block in images if isinstance(block, ImageBlock))}

    def render(self) -> str | None:
        """``ansi``: the episode's transcript as text; ``human``: print it (done on every step)."""
        if self.render_mode == "ansi":
            return "\n".join(self._transcript)
        if self.render_mode == "human":
            print(self._transcript[-1] if self._transcript else "")
        return None

    def _show(self) -> None:
        if self.render_mode == "human":
            self.render()

    def close(self) -> None:
        self.session.close()
        super().close()


def _call(action: Any) -> ToolCall:
    if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
        raise ValueError(
            "an action is the model's text, a ToolCall, or a mapping like "
            f'{{"name": "guess", "arguments": {{"word": "crane"}}}}; got {action!r}'
        )
    return ToolCall.from_dict(dict(action))


def _pixels(image: ImageBlock) -> np.ndarray:
    """An encoded image as the ``HxWx3`` uint8 array pixel-based agents read."""
    try:
        from PIL import Image
    except ImportError as exc:
        raise ImportError("images in Gymnasium observations need Pillow: pip install 'omnienv[gymnasium]'") from exc
    with Image.open(io.BytesIO(image.data)) as decoded:
        return np.asarray(decoded.convert("RGB"), dtype=np.uint8)


def _info(turn: TextTurn) -> dict[str, Any]:
    info = dict(turn.info)
    if turn.failure is not None:
        info["failure"] = turn.failure.to_dict()
    return info


def register(name: str, env_id: str | None = None, **kwargs: Any) -> str:
    """Register omnienv environment ``name`` with ``gymnasium.make``; returns the id.

    The default id is ``omnienv/<name>-v0``. Registering an id twice replaces the first.
    """
    env_id = env_id or f"omnienv/{name}-v0"
    gymnasium.register(id=env_id, entry_point=f"{__name__}:GymnasiumEnv", kwargs={"env": name, **kwargs})
    return env_id
