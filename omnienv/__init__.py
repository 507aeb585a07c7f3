"""omnienv: write an RL environment for LLM agents once, use it in every framework.

The public API of the contract is re-exported here; transports, dialects and rollouts live in
their own subpackages (``omnienv.server``, ``omnienv.client``, ``omnienv.dialects``,
``omnienv.rollout``) so that importing omnienv stays light.
"""

from omnienv.core import *  # noqa: F403 - the contract is the top-level API
from omnienv.core import __all__ as _core_all

__version__ = "0.1.0"  # the package version (pyproject reads it from here)

__all__ = ["__version__", *_core_all]
