"""Verifiers (Prime Intellect): omnienv environments for ``vf-eval`` and verifiers' trainers.

verifiers ships two incompatible APIs, and this module exports the one the installed version has:

- **verifiers >= 0.4** (``verifiers.v1``): a taskset package. :class:`OmniTaskset` yields one task
  per omnienv task; tools are served per rollout over MCP by :class:`OmniToolset`; the reward is
  the episode's total (tool rewards plus rubric). See :mod:`omnienv.dialects._verifiers_v1`::

      vf-eval omnienv-verifiers --env.taskset.env wordle --env.taskset.split test \\
          --env.agent.harness.id null --env.agent.runtime.type subprocess ...
      vf-eval omnienv-verifiers --env.taskset.env desktop --env.taskset.split test \\
          --env.taskset.tasks test/find-word ...   # screenshots reach the model as image parts

- **verifiers 0.1-0.3** (the classic API): ``load_environment(env="wordle", split="test")``
  returns a ``vf.StatefulToolEnv`` with one omnienv environment per rollout. See
  :mod:`omnienv.dialects._verifiers_classic`::

      vf-eval omnienv-verifiers -a '{"env": "wordle"}' ...

``vf-eval NAME`` imports a top-level module: the ``omnienv_verifiers`` package re-exports this
module for both versions (v1 cannot import dotted ids; classic also accepts
``omnienv.dialects.verifiers``).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    _VERSION = tuple(int(part) for part in version("verifiers").split(".")[:2] if part.isdigit())
except PackageNotFoundError as exc:  # the framework is an optional extra
    raise ImportError(f"{__name__} needs verifiers: pip install 'omnienv[verifiers]'") from exc

if _VERSION >= (0, 4):
    from omnienv.dialects._verifiers_v1 import (
        OmniState,
        OmniTask,
        OmniTaskData,
        OmniTaskset,
        OmniTasksetConfig,
        OmniToolset,
        OmniToolsetConfig,
    )

    __all__ = [
        "OmniState",
        "OmniTask",
        "OmniTaskData",
        "OmniTaskset",
        "OmniTasksetConfig",
        "OmniToolset",
        "OmniToolsetConfig",
    ]
else:
    from omnienv.dialects._verifiers_classic import OmniToolEnv, load_environment

    __all__ = ["OmniToolEnv", "load_environment"]
