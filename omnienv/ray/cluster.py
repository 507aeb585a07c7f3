"""Joining a Ray cluster, or starting a private one on this machine, with quiet defaults.

``address`` follows ``ray.init``: ``"auto"`` joins the cluster this node belongs to (``ray start``
ran here), ``"host:port"`` or ``"ray://host:port"`` joins that one. ``None`` or ``"local"`` starts a
private single-node instance bound to 127.0.0.1, without dashboard or usage reporting, that
lives as long as this process: the right thing for a laptop and for tests.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

__all__ = ["LOCAL", "connect", "disconnect"]

LOCAL = "local"
_OBJECT_STORE_MIN = 80 * 1024 * 1024
_SINGLE_MACHINE_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_made_dirs: list[str] = []
"""Temp dirs made for private instances, removed (logs and all) when they stop."""


def connect(
    address: str | None = None,
    *,
    num_cpus: float | None = None,
    object_store_memory: int | None = None,
    temp_dir: str | None = None,
    log_to_driver: bool = False,
    **init_options: Any,
) -> None:
    """Make this process a Ray driver; a no-op when it already is one."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray

    if ray.is_initialized():
        return
    options: dict[str, Any] = {"log_to_driver": log_to_driver, "configure_logging": False, **init_options}
    if address in (None, "", LOCAL):
        os.environ.pop("RAY_ADDRESS", None)  # never join a cluster named by the environment by accident
        _loopback_only()
        options.update(
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            # Ray's unix sockets live under the temp dir: keep its path short (108-byte socket paths).
            _temp_dir=temp_dir or _new_temp_dir(),
        )
        if num_cpus is not None:
            options["num_cpus"] = num_cpus
        if object_store_memory is not None:
            options["object_store_memory"] = max(object_store_memory, _OBJECT_STORE_MIN)
        ray.init(**options)
        return
    ray.init(address=address, **options)


def _loopback_only() -> None:
    """Keep a private instance on 127.0.0.1. Ray swaps a loopback ``_node_ip_address`` for the
    machine's reachable address unless its single-machine switch is off; that switch is read from
    the environment by every Ray process started from here, and from this constant in this one."""
    os.environ[_SINGLE_MACHINE_SWITCH] = "0"
    try:
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    except (ImportError, AttributeError):  # another Ray layout: it falls back to the machine's address
        pass


def disconnect() -> None:
    """Leave the cluster (and stop the private instance, if this process started one)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    while _made_dirs:
        shutil.rmtree(_made_dirs.pop(), ignore_errors=True)


def _new_temp_dir() -> str:
    path = tempfile.mkdtemp(prefix="omnienv-ray-")
    _made_dirs.append(path)
    return path
