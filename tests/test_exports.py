"""The public surface is pinned: adding or removing a name is a deliberate change here.

Every public package under ``omnienv`` (a directory with an ``__init__.py`` whose path has no
part starting with ``_``) declares ``__all__``, and each one's is pinned in :data:`PINS`. A new
package fails :func:`test_every_package_is_pinned` until its exports are written down here.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import omnienv
import omnienv.core
import omnienv.rollout

ROOT = Path(omnienv.__file__).resolve().parent

CORE = {
    "CapacityError",
    "InvalidJSONError",
    "InvalidTypeError",
    "InvalidValueError",
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
    "EpisodeLedger",
    "SyncEnv",
    "TaskIndex",
    "as_sync",
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

PINS: dict[str, set[str]] = {
    "omnienv": CORE | {"__version__"},
    "omnienv.capture": {
        "ATIF_SCHEMA_VERSION",
        "EPISODE_HEADER",
        "OPENENV_TRACE_SCHEMA_VERSION",
        "CallLog",
        "CaptureProxy",
        "EpisodeLike",
        "ModelCall",
        "TokenSegment",
        "TrainingRecord",
        "build_segments",
        "create_proxy_app",
        "iter_records",
        "read_records",
        "to_atif",
        "to_openenv_trace",
        "to_trl_rollout",
        "write_records",
    },
    "omnienv.cli": set(),
    "omnienv.client": {
        "AsyncHTTPClient",
        "AsyncWebSocketClient",
        "Container",
        "ContainerError",
        "HTTPClient",
        "RemoteTool",
        "WebSocketClient",
        "acheck_url",
        "check_url",
        "connect",
        "start_container",
    },
    "omnienv.core": CORE,
    "omnienv.deploy": {
        "DEFAULT_BASE",
        "DeployError",
        "ImageBuildError",
        "ImagePlan",
        "build_image",
        "default_tag",
        "plan_image",
        "push_space",
        "space_host",
        "write_context",
        "write_space_bundle",
    },
    "omnienv.dialects": set(),
    "omnienv.app": {"create_app", "default_plugins"},
    "omnienv.catalog": {
        "SOURCES",
        "CatalogEntry",
        "MissingLibraryError",
        "Source",
        "entries",
        "find",
        "load",
        "suggest",
    },
    "omnienv.envs": set(),
    "omnienv.envs.desktop": {"Coordinates", "DESKTOP_TASKS", "Desktop", "DesktopTask", "task_completed"},
    "omnienv.envs.desktop.tasks": {"DESKTOP_TASKS", "DesktopTask", "core_tasks", "find_task"},
    "omnienv.envs.jupyter": {"Jupyter", "NotebookCell", "answers_match", "build", "jupyter_tasks"},
    "omnienv.envs.jupyter.families": {"ALL", "Built", "Family", "Solution"},
    "omnienv.agents": {
        "BUILTIN",
        "AgentEpisode",
        "AgentRun",
        "CommandHarness",
        "EpisodeContext",
        "Harness",
        "Launch",
        "MiniSweAgent",
        "ShellTool",
        "find_shell_tool",
        "load_harness",
        "load_spec",
        "run_agents",
    },
    "omnienv.agents.minisweagent": {"SUBMIT_MARKER", "MiniSweAgent", "SessionEnvironment"},
    "omnienv.envs.terminal": {
        "SUITE",
        "HarborTask",
        "HarborTaskError",
        "Terminal",
        "environment_for_path",
        "export_harbor",
        "find_tasks",
        "harbor_environment",
        "read_task",
    },
    "omnienv.envs.wordle": {"Wordle", "WordleGame", "accepted_words", "answers", "score_guess"},
    "omnienv.protocol": {
        "Close",
        "DEFAULT_MAX_MESSAGE_BYTES",
        "ERROR_TYPES",
        "GetState",
        "ListTools",
        "Mcp",
        "RemoteTool",
        "Request",
        "Reset",
        "SessionMachine",
        "SessionState",
        "Step",
        "decode",
        "encode",
        "error_data",
        "error_from_data",
        "observation_from_reply",
        "parse_action",
        "parse_request",
        "parse_reset",
        "register_code",
        "reset_reply",
        "reset_request",
        "state_from_reply",
        "state_reply",
        "step_reply",
        "step_request",
        "step_result_from_reply",
        "tools_from_reply",
        "tools_reply",
    },
    "omnienv.ray": {
        "EnvHost",
        "EnvPool",
        "Host",
        "HostPool",
        "RemoteEnv",
        "connect",
        "disconnect",
        "remote_env_factory",
    },
    "omnienv.rollout": ROLLOUT,
    "omnienv.sandboxes": set(),
    "omnienv.sandboxes.jupyter": {
        "JupyterSandbox",
        "KERNEL_ENV",
        "KernelDiedError",
        "KernelPool",
        "SandboxStartError",
        "SandboxedKernel",
        "code_sandbox_work_dir",
        "default_pool",
        "open_code_sandbox",
        "sweep_stale",
    },
    "omnienv.sandboxes.jupyter.inkernel": set(),
    "omnienv.sandboxes.xvfb": {
        "DisplayError",
        "DisplayPool",
        "DisplaySpec",
        "OUTPUT_LIMIT",
        "PREFIX",
        "REQUIRED_PROGRAMS",
        "SandboxShell",
        "XClient",
        "XConnectionLost",
        "XServer",
        "XvfbDisplay",
        "missing_programs",
        "path_kind",
        "require_sandbox",
        "shared_pool",
    },
    "omnienv.scaffold": {"ARCHETYPES", "CreatedEnvironment", "ScaffoldError", "ScaffoldNames", "create_environment"},
    "omnienv.server": {
        "OmniApp",
        "RoutesPlugin",
        "ServerConfig",
        "Session",
        "SessionManager",
        "assemble",
        "running",
        "serve",
        "uvicorn_config",
    },
    "omnienv.ui": {"STATIC_DIR", "create_viewer_app", "ui_routes"},
}


def public_packages() -> list[str]:
    """Every package under omnienv whose path has no ``_``-prefixed part, found on disk (a folder
    whose name is no identifier, such as a terminal task's, is data, not a package)."""
    found = []
    for init in ROOT.rglob("__init__.py"):
        parts = init.parent.relative_to(ROOT.parent).parts
        if not any(part.startswith("_") or not part.isidentifier() for part in parts):
            found.append(".".join(parts))
    return sorted(found)


def test_every_package_is_pinned() -> None:
    packages = public_packages()
    assert "omnienv.core" in packages and "omnienv.sandboxes.jupyter" in packages  # the walk finds nested ones
    unpinned = sorted(set(packages) - set(PINS))
    assert not unpinned, f"new public packages: pin their __all__ in PINS: {unpinned}"
    gone = sorted(set(PINS) - set(packages))
    assert not gone, f"pinned packages that no longer exist: drop them from PINS: {gone}"


@pytest.mark.parametrize("name", public_packages())
def test_package_declares_all(name: str) -> None:
    module = importlib.import_module(name)
    assert isinstance(getattr(module, "__all__", None), list | tuple), (
        f"{name} has no __all__: declare its public names (``__all__: list[str] = []`` if none)"
    )


@pytest.mark.parametrize("name", sorted(PINS))
def test_package_exports(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(getattr(module, "__all__", ()))
    assert len(exported) == len(set(exported)), f"{name}.__all__ lists a name twice"
    assert set(exported) == PINS[name]
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


def test_top_level_exports_the_contract() -> None:
    assert set(omnienv.__all__) == set(omnienv.core.__all__) | {"__version__"}
    assert omnienv.Environment is omnienv.core.Environment
