"""``ray start`` for a node that joins a cluster on 127.0.0.1, kept on 127.0.0.1.

Ray 2.60 swaps a loopback address for the machine's own address (``resolve_ip_for_localhost``)
unless its single-machine switch ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` is set. With the switch
set, ``ray start --head`` and every Ray process stay on 127.0.0.1, but ``ray start --address``
refuses to add a node ("Multi-node Ray clusters are not supported on Windows and OSX"): the one
check in ``ray start`` that reads the switch for a platform question, not an address one.

This runs Ray's own ``ray start`` with the switch set in the environment (so the raylet, the
workers and the agents it starts all get it) and, in this process only, answers that platform
check with "supported" while keeping the address rule the switch gives: loopback for the node.
Used by ``tests/ray/loopback.py`` for the worker node of the two-node test.
"""

from __future__ import annotations

import sys

import ray._private.ray_constants as ray_constants
import ray._private.services as services
import ray.util
from ray._common.network_utils import get_localhost_ip


def _loopback_address(address: object = None) -> str:
    """What ``services.get_node_ip_address`` answers when the switch is set."""
    return str(get_localhost_ip())


def main() -> None:
    ray_constants.ENABLE_RAY_CLUSTER = True  # the platform check only...
    services.get_node_ip_address = _loopback_address  # ...the addresses stay on 127.0.0.1
    ray.util.get_node_ip_address = _loopback_address  # (the same function, imported there)
    from ray.scripts.scripts import main as ray_main

    sys.argv[0] = "ray"
    ray_main()


if __name__ == "__main__":
    main()
