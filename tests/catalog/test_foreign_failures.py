"""In-process foreign environments that break: a real Gymnasium environment (registered for the
test, unregistered after it) whose step raises or hands back a reward that is no number. Each is a
flagged failure, masked, never scored; the agent's own mistakes stay scored error observations;
the environment's next episode runs as usual.

Also foreign tool definitions no model API would take: an error naming the fix when the class is
made, not a failure at the agent's first call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import gymnasium
import pytest

from omnienv.catalog._foreign import make_class
from omnienv.catalog._openenv_shared import tool_specs
from omnienv.catalog._schema_tool import schema_tool
from omnienv.catalog.gymnasium_text import ToyText
from omnienv.catalog.manifest import CatalogEntry
from omnienv.core import EnvironmentDefinitionError, EnvironmentFailure, ToolCall, tool

GYM_ID = "OmnienvHostile-v0"


class Misbehaving(gymnasium.Env[int, int]):
    """Gymnasium's own Env; its step gives back whatever the test put in ``REPLY`` (or raises it)."""

    REPLY: ClassVar[Any] = 1.0
    observation_space = gymnasium.spaces.Discrete(2)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        if isinstance(Misbehaving.REPLY, RuntimeError) and str(Misbehaving.REPLY) == "reset":
            raise Misbehaving.REPLY
        return 0, {}

    def step(self, action: int) -> tuple[int, Any, bool, bool, dict[str, Any]]:
        if isinstance(Misbehaving.REPLY, Exception):
            raise Misbehaving.REPLY
        return 1, Misbehaving.REPLY, True, False, {}


class Toggle(ToyText):
    rules = "Toggle the switch."

    def describe(self) -> str:
        return f"The switch is at {self._obs}."

    @tool
    def toggle(self, times: int) -> Any:
        """Toggle the switch.

        Args:
            times: How often; only 1 is allowed.
        """
        return self.act(0, "You toggled it.")


@pytest.fixture
def hostile_gym() -> Iterator[type[ToyText]]:
    gymnasium.register(GYM_ID, entry_point=Misbehaving)
    entry = CatalogEntry("gymnasium/hostile", "gymnasium", GYM_ID, "env", "A broken env.", ("toggle",), {"train": 3})
    try:
        yield make_class(Toggle, entry)  # type: ignore[misc]
    finally:
        gymnasium.registry.pop(GYM_ID, None)
        Misbehaving.REPLY = 1.0


@pytest.mark.filterwarnings("ignore:.*WARN.*:UserWarning")  # Gymnasium's own checker sees it too
@pytest.mark.parametrize("reply", [float("nan"), float("inf"), "1.0", [1.0], True, RuntimeError("step broke")])
def test_a_broken_step_is_flagged_and_the_next_episode_is_scored(hostile_gym: type[ToyText], reply: Any) -> None:
    env = hostile_gym()
    try:
        env.reset(task="train/00000")
        Misbehaving.REPLY = reply
        result = env.step(ToolCall("toggle", {"times": 1}))
        assert result.failure is not None and result.failure.kind == "env_error"
        assert result.reward == 0.0 and result.over and env.state().reward is None
        Misbehaving.REPLY = 1.0
        env.reset(task="train/00001")
        mistake = env.step(ToolCall("toggle", {"times": "often"}))  # the agent's: scored, not flagged
        assert mistake.observation.is_error and mistake.failure is None and not mistake.over
        scored = env.step(ToolCall("toggle", {"times": 1}))
        assert scored.failure is None and scored.reward == 1.0 and env.state().reward == 1.0
    finally:
        env.close()


def test_a_reset_that_raises_is_an_environment_failure(hostile_gym: type[ToyText]) -> None:
    env = hostile_gym()
    try:
        Misbehaving.REPLY = RuntimeError("reset")
        with pytest.raises(EnvironmentFailure, match="setup failed: RuntimeError: reset"):
            env.reset(task="train/00000")
    finally:
        env.close()


@pytest.mark.parametrize(
    ("name", "schema", "says"),
    [
        ("make move", None, "must match"),
        ("", None, "must match"),
        ("a.b", None, "must match"),
        ("move", ["not", "an", "object"], "must be a JSON object"),
        ("move", {"properties": []}, "not a valid JSON Schema at properties"),
        ("move", {"properties": {"to": {"type": "strng"}}}, "at properties/to/type"),
        ("move", {"required": "to"}, "at required"),
        ("move", {"properties": {"n": {"minimum": "one"}}}, "at properties/n/minimum"),
    ],
)
def test_a_tool_no_model_api_takes_is_refused_when_made(name: str, schema: Any, says: str) -> None:
    with pytest.raises(EnvironmentDefinitionError, match=says) as raised:
        schema_tool(name, "Move.", schema, lambda env, arguments: None)
    assert "rename" in str(raised.value) or "fix" in str(raised.value) or "object" in str(raised.value)


def test_two_tools_of_one_name_are_refused_not_merged() -> None:
    listed = [{"name": "move", "description": "One."}, {"name": "move", "description": "Two."}]
    with pytest.raises(EnvironmentDefinitionError, match="two tools named 'move': rename one"):
        tool_specs(listed, None)
