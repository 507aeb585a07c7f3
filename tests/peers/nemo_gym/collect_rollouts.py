"""NeMo Gym 0.7.0's own ``ng_collect_rollouts`` on our resources servers (see ``ng_servers``).

``OMNIENV_NEMO`` (JSON) names the lanes and the rows; prints one JSON line per rollout, per
failed rollout, and NeMo's aggregate metrics.
"""

from __future__ import annotations

import sys
from os.path import abspath, dirname

sys.path[0] = dirname(dirname(dirname(dirname(abspath(__file__)))))  # the repository, for tests.peers

from tests.peers.nemo_gym.ng_servers import main  # noqa: E402

if __name__ == "__main__":
    main()
