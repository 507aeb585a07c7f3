"""The public surface is pinned: adding or removing a name is a deliberate change here."""

from __future__ import annotations

import omnienv
import omnienv.core
import omnienv.rollout

CORE = {
    "CapacityError",
    "InvalidJSONError",
    "MessageTooLargeError",
    "MessageValidationError",
    "ProtocolError",
    "SessionError",
    "SessionLostError",
    "SessionNotFoundError",
    "StepTimeoutError",
    "UnknownMessageError",
    "ActionError",
    "AgentCausedEnd",
    "AgentOnlyError",
    "AsyncEnv",
    "AsyncEnvironment",
    "Block",
    "CheckReport",
    "Environment",
    "EnvironmentBase",
    "EnvironmentDefinitionError",
    "EnvironmentFailure",
    "EpisodeOverError",
    "Failure",
    "ImageBlock",
    "InvalidArgumentsError",
    "NotResetError",
    "Observation",
    "OmniEnvError",
    "Rubric",
    "RubricScore",
    "State",
    "StepResult",
    "Task",
    "TaskError",
    "TextBlock",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "UnknownEnvironmentError",
    "UnknownToolError",
    "UsageError",
    "acheck_env",
    "as_async",
    "check_env",
    "load_environment",
    "register",
    "registered",
    "tool",
    "WorkerLostError",
}
ROLLOUT = {
    "EndEpisode",
    "Episode",
    "EpisodePlan",
    "Policy",
    "RandomPolicy",
    "Step",
    "Summary",
    "arun_episode",
    "arun_episodes",
    "make_policy",
    "plan_episodes",
    "policy_names",
    "read_episodes",
    "rollout",
    "summarize",
}


def test_core_exports() -> None:
    assert set(omnienv.core.__all__) == CORE
    assert all(hasattr(omnienv.core, name) for name in CORE)


def test_top_level_exports_the_contract() -> None:
    assert set(omnienv.__all__) == CORE | {"__version__"}
    assert omnienv.Environment is omnienv.core.Environment


def test_rollout_exports() -> None:
    assert set(omnienv.rollout.__all__) == ROLLOUT
    assert all(hasattr(omnienv.rollout, name) for name in ROLLOUT)
