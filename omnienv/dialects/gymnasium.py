"""Gymnasium: any omnienv environment as a ``gymnasium.Env`` with text spaces.

::

    from omnienv.dialects.gymnasium import GymnasiumEnv
    env = GymnasiumEnv("wordle")
    obs, info = env.reset(seed=0)                 # obs: the prompt; info["system_prompt"]: the tools
    obs, reward, terminated, truncated, info = env.step("<guess>slate</guess>")

Actions are the model's text, parsed by :mod:`omnienv.core.text_actions` (``<tool_call>`` JSON or
the environment's tags); a ``{"name": ..., "arguments": {...}}`` mapping or a :class:`ToolCall`
skips the parsing. Observations are the text the agent reads.

Rewards: each step's reward is the tools' reward, and the last step's also carries the rubric's
final score (its parts are in ``info["rubric"]``). Infrastructure failures end the episode with
``truncated=True`` and ``info["failure"] = {"kind", "message"}``: mask such episodes instead of
learning from their zero reward.

Seeding follows Gymnasium: ``reset(seed=s)`` seeds ``np_random``, and every reset draws the
episode's seed from it, so ``reset(seed=s)`` followed by seedless resets is reproducible.
``options={"task": "test/0003"}`` picks a task.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # the framework is an optional extra
    raise ImportError(f"{__name__} needs gymnasium: pip install 'omnienv[gymnasium]'") from exc

from omnienv.core import ToolCall
from omnienv.core.text_actions import TagGrammar, TextTurn, openai_tools
from omnienv.dialects._text import EnvLike, TextSession

__all__ = ["AnyText", "GymnasiumEnv", "register"]

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


class GymnasiumEnv(gymnasium.Env[str, str]):
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
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.session = TextSession(env, tags=tags, max_turns=max_turns)
        self.render_mode = render_mode
        self.observation_space = AnyText(max_text_length)
        self.action_space = AnyText(max_text_length)
        self._transcript: list[str] = []

    def __repr__(self) -> str:
        return f"GymnasiumEnv({self.session.env.name!r})"

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
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
        return prompt, info

    def step(self, action: str | Mapping[str, Any] | ToolCall) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if isinstance(action, str):
            turn = self.session.step(action)
            self._transcript.append(f"[action]\n{action}")
        else:
            call = action if isinstance(action, ToolCall) else _call(action)
            turn = self.session.step_calls([call])
            self._transcript.append(f"[action]\n{call.to_dict()}")
        self._transcript.append(f"[observation] reward={turn.reward:g}\n{turn.text}")
        self._show()
        return turn.text, float(turn.reward), turn.done, turn.truncated or turn.failure is not None, _info(turn)

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
