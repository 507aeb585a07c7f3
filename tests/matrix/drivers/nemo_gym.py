"""The NeMo Gym cells, in nemo-gym's virtualenv: NeMo's own agents and rollout collection.

``OMNIENV_NEMO`` (JSON) names the lanes (:class:`tests.peers.nemo_gym.ng_servers.Lane`: an
agent, our resources server, the scripted model) and the dataset rows, each naming its lane's
agent. NeMo's ``ng_collect_rollouts`` collects them all in one run; every rollout row and every
failed rollout is printed as a JSON line for :mod:`tests.matrix.frameworks.nemo_gym`.
"""

from __future__ import annotations

import sys
from os.path import abspath, dirname

# Run as a script, this folder would come first on sys.path and its modules (named after the
# frameworks) would shadow packages; the repository root goes there instead, for tests.*.
sys.path[0] = dirname(dirname(dirname(dirname(abspath(__file__)))))

from tests.peers.nemo_gym.ng_servers import main  # noqa: E402

if __name__ == "__main__":
    main()
