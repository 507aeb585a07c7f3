"""A step's result, from what its tool returned or from the agent's mistake.

Every step of every environment, sync or async, comes through :func:`record_step`, so it serves
the common case first: a tool that returns a :class:`ToolResult` gets its result built field by
field. Calling a dataclass runs its ``__init__`` through ``type.__call__``, which CPython 3.11 does
not inline: for the two objects every step builds, that took about 0.1 µs more, of the 3.5 µs of
an in-process Wordle step (``benchmarks/inprocess.py``). ``tests/core/test_results.py`` holds both
ways equal, field for field, so a field added to either class fails there instead of going
missing here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn, TypeAlias

from omnienv.core.content import Block, TextBlock, as_blocks
from omnienv.core.errors import ActionError, AgentCausedEnd, EnvironmentFailure
from omnienv.core.ledger import EpisodeLedger
from omnienv.core.text import ERROR_CHARS, bounded_error
from omnienv.core.types import Observation, StepResult, ToolResult

__all__ = ["ERROR_CHARS", "ToolOutput", "bounded_error", "raise_bad_reward", "record_step"]

ToolOutput: TypeAlias = "str | Block | Iterable[str | Block] | ToolResult"

_new = object.__new__


def record_step(
    episode: EpisodeLedger, output: ToolOutput | ActionError | AgentCausedEnd, max_turns: int | None
) -> StepResult:
    """This step's result, accounted in ``episode``; ``truncated`` when it is turn ``max_turns``
    and did not end the episode by its rules. A reward that is not a finite number raises
    :class:`EnvironmentFailure` before anything is accounted."""
    if type(output) is ToolResult:
        if output.reward - output.reward:  # NaN or an infinity: x - x is 0 for every finite number
            raise_bad_reward(output.reward)
        observation: Observation = _new(Observation)
        observation.content = output.content
        observation.is_error = False
        result: StepResult = _new(StepResult)
        result.observation = observation
        result.reward = output.reward
        result.done = output.done
        result.truncated = False
        result.info = output.info
        result.failure = None
    else:
        result = _result_of(output)
    if max_turns is not None and not result.done and episode.steps + 1 >= max_turns:
        result.truncated = True
    return episode.record(result)


def raise_bad_reward(reward: object, source: str = "the tool") -> NoReturn:
    """Refuse a reward that is not a finite number: NaN or an infinity would be summed, averaged
    and trained on (written as ``null`` in results files), so the environment is at fault and the
    step is flagged as its failure, never scored."""
    raise EnvironmentFailure(f"{source} returned a reward that is not a finite number: {reward!r:.100}")


def _result_of(output: ToolOutput | ActionError | AgentCausedEnd) -> StepResult:
    if isinstance(output, ToolResult):
        if output.reward - output.reward:
            raise_bad_reward(output.reward)
        return StepResult(Observation(output.content), output.reward, output.done, False, output.info)
    if type(output) is str:
        return StepResult(Observation((TextBlock(output),)), 0.0, False, False, {})
    if isinstance(output, ActionError):
        message = bounded_error(output.message)
        error = {"code": output.code, "message": message}
        return StepResult(Observation((TextBlock(message),), True), 0.0, False, False, {"error": error})
    if isinstance(output, AgentCausedEnd):
        ended = {"reason": output.reason, "message": output.message}
        return StepResult(Observation((TextBlock(output.message),), True), 0.0, True, False, {"ended_by_agent": ended})
    return StepResult(Observation(as_blocks(output)), 0.0, False, False, {})
