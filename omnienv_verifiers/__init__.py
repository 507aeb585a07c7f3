"""``vf-eval omnienv-verifiers``: verifiers finds environments by top-level module name.

This package only re-exports :mod:`omnienv.dialects.verifiers`, which picks the API of the
installed verifiers (the v1 taskset on 0.4, ``load_environment`` on 0.3 and older).
"""

from omnienv.dialects.verifiers import *  # noqa: F403 - the module's exports are this package's
from omnienv.dialects.verifiers import __all__ as __all__
