"""Verifiers environment modules as omnienv environments: ``verifiers/<module>``.

A Verifiers environment is an importable module, in one of Verifiers' two APIs:

- **classic** (verifiers < 0.4; tested with 0.3.1): ``load_environment(**args)`` returns a ``vf.Environment``
  (``SingleTurnEnv``, ``MultiTurnEnv``, ``ToolEnv``, ``StatefulToolEnv``...); the environment's
  own rollout runs with omnienv's agent as its model (:mod:`~omnienv.catalog._verifiers_classic`);
- **v1** (``verifiers.v1``; written against 0.4.0): the module's ``__all__`` exports one ``vf.Taskset``
  subclass, built with ``args`` as its config; its tasks' toolsets run in-process and its tasks
  score the episode's trace (:mod:`~omnienv.catalog._verifiers_v1`).

Either way the module's tasks become the environment's tasks, its tools its tools, and its rubric
(or ``@vf.reward`` functions) the reward, given when the episode ends. The module and verifiers
must be importable in this Python (Verifiers environments are installed as packages into the
virtualenv that runs them); verifiers is imported only when such a name is loaded, and without
it loading names the extra. ``omnienv import verifiers MODULE --name NAME --args JSON`` names a
module with its arguments (:mod:`omnienv.catalog.imports`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
from functools import cache
from typing import Any

from omnienv.catalog._foreign import class_name
from omnienv.catalog.manifest import MissingLibraryError, Source
from omnienv.core import EnvironmentBase, UnknownEnvironmentError

__all__ = ["PREFIX", "environment", "is_verifiers_name", "version"]

PREFIX = "verifiers/"
SOURCE = Source("verifiers", "verifiers", "verifiers", "verifiers", "omnienv.catalog.verifiers")
_MODULE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def is_verifiers_name(name: str) -> bool:
    """``verifiers/<importable.module>``."""
    return name.startswith(PREFIX) and bool(_MODULE.match(name.removeprefix(PREFIX)))


def version() -> str | None:
    """The installed verifiers version, or None where it is not installed."""
    try:
        return importlib.metadata.version("verifiers")
    except importlib.metadata.PackageNotFoundError:
        return None


def _is_v1(module: Any) -> bool:
    """Whether ``module`` exports a ``verifiers.v1`` Taskset subclass through ``__all__``."""
    try:
        taskset = importlib.import_module("verifiers.v1").Taskset
    except (ImportError, AttributeError):
        return False
    exported = (getattr(module, name, None) for name in getattr(module, "__all__", ()) or ())
    return any(isinstance(obj, type) and issubclass(obj, taskset) and obj is not taskset for obj in exported)


@cache
def environment(name: str, args: str = "{}") -> type[EnvironmentBase]:
    """The omnienv class for ``verifiers/<module>``, built with ``args`` (a JSON object) now."""
    if not is_verifiers_name(name):
        raise UnknownEnvironmentError(f"'{name}' is not a Verifiers module name: write verifiers/<module>")
    module_name = name.removeprefix(PREFIX)
    try:
        importlib.import_module("verifiers")
    except ImportError as exc:
        raise MissingLibraryError(name, SOURCE, exc) from exc
    try:
        arguments = json.loads(args)
    except ValueError as exc:
        raise UnknownEnvironmentError(f"the arguments of '{name}' are not JSON: {exc}") from exc
    if not isinstance(arguments, dict):
        raise UnknownEnvironmentError(f"the arguments of '{name}' must be a JSON object, got {args}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownEnvironmentError(
            f"cannot import the Verifiers environment module '{module_name}': {exc} (install it here)"
        ) from exc
    namespace = {
        "name": class_name(name),
        "description": (module.__doc__ or f"The Verifiers environment {module_name}.").strip().split("\n\n")[0],
        "__module__": __name__,
        "__doc__": f"The Verifiers environment {module_name}, in-process.",
    }
    try:
        if callable(getattr(module, "load_environment", None)):
            if not hasattr(importlib.import_module("verifiers"), "MultiTurnEnv"):
                raise UnknownEnvironmentError(
                    f"'{module_name}' uses Verifiers' classic API (load_environment), which verifiers "
                    f"{version()} no longer has: install verifiers<0.4 to run it"
                )
            classic = importlib.import_module("omnienv.catalog._verifiers_classic")
            found: type[EnvironmentBase] = classic.environment(name, module, arguments, namespace)
        elif _is_v1(module):
            v1 = importlib.import_module("omnienv.catalog._verifiers_v1")
            found = v1.environment(name, module, arguments, namespace)
        else:
            raise UnknownEnvironmentError(
                f"'{module_name}' is not a Verifiers environment: it has no load_environment() "
                "and exports no vf.Taskset subclass in __all__"
            )
    except UnknownEnvironmentError:
        raise
    except Exception as exc:  # the module's own code failed while building the environment
        raise UnknownEnvironmentError(
            f"cannot build the Verifiers environment '{module_name}': {type(exc).__name__}: {exc}"
        ) from exc
    return found
