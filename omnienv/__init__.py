"""omnienv: write an RL environment for LLM agents once, use it in every framework.

The public API of the contract is re-exported here; transports, dialects and rollouts live in
their own subpackages (``omnienv.server``, ``omnienv.client``, ``omnienv.dialects``,
``omnienv.rollout``) so that importing omnienv stays light.
"""

from importlib.metadata import PackageNotFoundError, version

from omnienv.core import *  # noqa: F403 - the contract is the top-level API
from omnienv.core import __all__ as _core_all

try:
    __version__ = version("omnienv")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = ["__version__", *_core_all]
